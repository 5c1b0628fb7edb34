package mcp

import "fmt"

// The arguments tools share (docs/design.md §3.1), with their descriptions.

var (
	pDatabase = param{name: "database", kind: kString, required: true,
		desc: "the database name (list_databases shows them)"}
	pResource = param{name: "resource", kind: kString, required: true,
		desc: "the resource: a named JSON document of the database (list_resources shows them)"}
	pPath = param{name: "path", kind: kString,
		desc: `JSON Pointer (RFC 6901) inside the resource: "" (the default) is the whole resource, "/users/0/name" a value in it; "~1" stands for "/" and "~0" for "~" in a key`}
	pCursor = param{name: "cursor", kind: kString,
		desc: "next_cursor from the previous page of this same call, to continue it; give the same other arguments"}
)

func pLimit(def, max uint64, what string) param {
	return param{name: "limit", kind: kInteger, min: 1, max: max,
		desc: fmt.Sprintf("at most this many %s per page (default %d, at most %d); the answer may hold fewer when it reaches the output cap", what, def, max)}
}

// refParams are the fields naming one state: revision, snapshot, or branch (with at). prefix is "", "from_" or "to_".
func refParams(prefix, which, def string) []param {
	return []param{
		{name: prefix + "revision", kind: kInteger, min: 1,
			desc: fmt.Sprintf("%s: a revision number (excludes %ssnapshot, %sbranch and %sat)", which, prefix, prefix, prefix)},
		{name: prefix + "snapshot", kind: kString,
			desc: fmt.Sprintf("%s: a snapshot name (excludes %srevision, %sbranch and %sat)", which, prefix, prefix, prefix)},
		{name: prefix + "branch", kind: kString,
			desc: fmt.Sprintf("%s: the head of this branch (%s)", which, def)},
		{name: prefix + "at", kind: kTime,
			desc: fmt.Sprintf("%s: with %sbranch (default main), the revision that branch pointed to at this RFC 3339 time, such as \"2026-03-14T09:00:00Z\"", which, prefix)},
	}
}

// writeParams are the fields of every write that commits a revision on a branch.
func writeParams(branchDesc string) []param {
	return []param{
		{name: "branch", kind: kString, desc: branchDesc},
		{name: "expected_head", kind: kInteger, min: 1,
			desc: "refuse with CONFLICT, naming the current head, unless the branch head is this revision: pass the revision you read, so that a concurrent change is not overwritten"},
		{name: "message", kind: kString, desc: "why: recorded with the revision"},
		{name: "idempotency_key", kind: kString,
			desc: "a key of your choice: a retried write with the same key returns the original result instead of committing twice"},
	}
}

func params(groups ...[]param) []param {
	var out []param
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

func one(p ...param) []param { return p }

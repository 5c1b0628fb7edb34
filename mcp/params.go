package mcp

// The arguments tools share (docs/design.md §3.1). Their meaning is said once, in the server's instructions
// (config.go), not in every tool's schema: a shared argument's desc is empty, unless a tool gives it a meaning of
// its own. TestSchemas checks that every undescribed argument is one the instructions explain.

var (
	pDatabase = param{name: "database", kind: kString, required: true}
	pResource = param{name: "resource", kind: kString, required: true}
	pPath     = param{name: "path", kind: kString}
	pCursor   = param{name: "cursor", kind: kString}
)

// pLimit is the page size of a listing: at most max (the decoder refuses more, naming the range); each handler has
// its default.
func pLimit(max uint64) param {
	return param{name: "limit", kind: kInteger, min: 1, max: max}
}

// refParams are the fields naming one state: revision, snapshot, or branch (with at). prefix is "", "from_" or "to_".
func refParams(prefix string) []param {
	return []param{
		{name: prefix + "revision", kind: kInteger, min: 1},
		{name: prefix + "snapshot", kind: kString},
		{name: prefix + "branch", kind: kString},
		{name: prefix + "at", kind: kTime},
	}
}

// writeParams are the fields of every write that commits a revision on a branch.
func writeParams() []param {
	return []param{
		{name: "branch", kind: kString},
		{name: "expected_head", kind: kInteger, min: 1},
		{name: "message", kind: kString},
		{name: "idempotency_key", kind: kString},
	}
}

// sharedArgs are the arguments the instructions explain, so that a tool's schema may leave them undescribed.
var sharedArgs = []string{"database", "resource", "path", "cursor", "limit", "revision", "snapshot", "branch", "at",
	"from_revision", "from_snapshot", "from_branch", "from_at", "to_revision", "to_snapshot", "to_branch", "to_at",
	"expected_head", "message", "idempotency_key"}

func params(groups ...[]param) []param {
	var out []param
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

func one(p ...param) []param { return p }

package mcp

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/strata-db/strata/gate"
)

// TestStory is an agent's whole story through the protocol: create, put, read back exactly, patch, snapshot, branch,
// change the branch, diff, promote, history, blame, revert, restore, and the errors an agent meets on the way.
func TestStory(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesOn, Protected: []string{"prod"}, Principal: "tester"})

	h.ok("create_database", `{"database":"shop"}`)
	h.fail("create_database", `{"database":"shop"}`, codeConflict)

	// A 20-digit integer and 1.0 keep their exact text.
	r := h.ok("put", `{"database":"shop","resource":"catalog","value":{"n": 12345678901234567891, "f": 1.0},"message":"first"}`)
	if r.num("revision") != 2 || r.str("branch") != "main" || r.num("parent") != 1 {
		t.Fatalf("put: %s", r.data)
	}
	r = h.ok("read", `{"database":"shop","resource":"catalog"}`)
	if v := r.raw("value"); v != `{"f":1.0,"n":12345678901234567891}` {
		t.Fatalf("read value = %s, want the exact text", v)
	}
	if r.num("revision") != 2 || r.str("branch") != "main" || r.m["truncated"] != false {
		t.Fatalf("read: %s", r.data)
	}
	r = h.ok("read", `{"database":"shop","resource":"catalog","path":"/n"}`)
	if r.raw("value") != "12345678901234567891" || r.str("kind") != "number" {
		t.Fatalf("read /n: %s", r.data)
	}

	h.ok("patch", `{"database":"shop","resource":"catalog","operations":[{"op":"test","path":"/f","value":1.0},{"op":"add","path":"/tags","value":["new"]}]}`)
	// A failing test writes nothing.
	h.fail("patch", `{"database":"shop","resource":"catalog","operations":[{"op":"add","path":"/x","value":1},{"op":"test","path":"/f","value":2}]}`, codeConflict)

	r = h.ok("create_snapshot", `{"database":"shop","name":"before-sale","note":"prices as of the spring catalogue"}`)
	if r.num("revision") != 3 || r.str("creator") != "tester" {
		t.Fatalf("create_snapshot: %s", r.data)
	}
	r = h.ok("create_branch", `{"database":"shop","name":"sale","from_branch":"main"}`)
	if r.num("revision") != 3 || r.m["protected"] != false {
		t.Fatalf("create_branch: %s", r.data)
	}

	// Work on the branch.
	r = h.ok("update", `{"database":"shop","resource":"catalog","path":"/f","value":2.50,"branch":"sale","expected_head":3,"message":"sale price"}`)
	if r.num("revision") != 4 || r.str("branch") != "sale" {
		t.Fatalf("update: %s", r.data)
	}
	h.ok("insert", `{"database":"shop","resource":"catalog","path":"/tags/-","value":"sale","branch":"sale"}`)
	h.ok("put", `{"database":"shop","resource":"banner","value":"50% off","branch":"sale"}`)

	// main is untouched.
	if r := h.ok("read", `{"database":"shop","resource":"catalog","path":"/f"}`); r.raw("value") != "1.0" {
		t.Fatalf("main changed: %s", r.data)
	}

	// The diff shows what the branch changed, with old values.
	r = h.ok("diff", `{"database":"shop","from_branch":"main","to_branch":"sale"}`)
	if r.num("from_revision") != 3 || r.num("to_revision") != 6 || r.str("to_branch") != "sale" || r.m["counts_complete"] != true {
		t.Fatalf("diff: %s", r.data)
	}
	var d struct {
		Counts     map[string]int    `json:"counts"`
		Operations []json.RawMessage `json:"operations"`
	}
	json.Unmarshal(r.data, &d)
	if d.Counts["added"] != 2 || d.Counts["replaced"] != 1 || len(d.Operations) != 3 {
		t.Fatalf("diff counts: %s", r.data)
	}
	ops := string(r.data)
	for _, want := range []string{`{"op":"replace","path":"/catalog/f","value":2.50,"old_value":1.0}`, `{"op":"add","path":"/banner","value":"50% off"}`, `"path":"/catalog/tags/1"`} {
		if !strings.Contains(ops, want) {
			t.Errorf("diff lacks %s: %s", want, ops)
		}
	}
	r = h.ok("diff", `{"database":"shop","resource":"catalog","path":"/f","from_snapshot":"before-sale","to_branch":"sale"}`)
	if !strings.Contains(string(r.data), `"operations":[{"op":"replace","path":"","value":2.50,"old_value":1.0}]`) {
		t.Fatalf("diff inside a resource: %s", r.data)
	}

	// Promote: main has not moved, so it fast-forwards.
	r = h.ok("promote", `{"database":"shop","branch":"sale","message":"spring sale"}`)
	if r.str("branch") != "main" || r.m["fast_forward"] != true || r.num("merged") != 6 {
		t.Fatalf("promote: %s", r.data)
	}
	promoted := r.num("revision")
	if r := h.ok("read", `{"database":"shop","resource":"catalog","path":"/f"}`); r.raw("value") != "2.50" {
		t.Fatalf("after promote: %s", r.data)
	}

	// History names who did what.
	r = h.ok("history", `{"database":"shop"}`)
	var hist struct {
		Revisions []struct {
			Revision  uint64   `json:"revision"`
			Time      string   `json:"time"`
			Author    string   `json:"author"`
			Tool      string   `json:"tool"`
			Message   string   `json:"message"`
			Resources []string `json:"resources"`
		} `json:"revisions"`
	}
	json.Unmarshal(r.data, &hist)
	var got []string
	for _, rv := range hist.Revisions {
		got = append(got, fmt.Sprintf("%d %s %s %q", rv.Revision, rv.Author, rv.Tool, rv.Message))
	}
	want := []string{
		fmt.Sprintf("%d tester promote \"spring sale\"", promoted),
		`3 tester patch ""`,
		`2 tester put "first"`,
		`1 tester create_database "create database"`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("history:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	timeOf2 := hist.Revisions[2].Time
	r = h.ok("history", `{"database":"shop","branch":"sale","resource":"banner"}`)
	if !strings.Contains(string(r.data), `"revisions":[{"revision":6,`) {
		t.Fatalf("history of banner: %s", r.data)
	}

	// Blame for one value.
	r = h.ok("path_history", `{"database":"shop","resource":"catalog","path":"/f"}`)
	var ph struct {
		Changes []struct {
			Revision uint64          `json:"revision"`
			Before   json.RawMessage `json:"before"`
			After    json.RawMessage `json:"after"`
		} `json:"changes"`
	}
	json.Unmarshal(r.data, &ph)
	if len(ph.Changes) != 2 || ph.Changes[0].Revision != promoted || string(ph.Changes[0].Before) != "1.0" ||
		string(ph.Changes[0].After) != "2.50" || ph.Changes[1].Revision != 2 || ph.Changes[1].Before != nil {
		t.Fatalf("path_history: %s", r.data)
	}

	r = h.ok("show_revision", `{"database":"shop","revision":4}`)
	if r.str("message") != "sale price" || r.str("tool") != "update" || !strings.Contains(string(r.data), `"old_value":1.0`) {
		t.Fatalf("show_revision: %s", r.data)
	}

	// Revert main to the snapshot: a new revision whose state equals it.
	r = h.ok("revert", `{"database":"shop","snapshot":"before-sale","message":"undo the sale"}`)
	reverted := r.num("revision")
	if reverted != promoted+1 {
		t.Fatalf("revert: %s", r.data)
	}
	if r := h.ok("read", `{"database":"shop","resource":"catalog","path":"/f"}`); r.raw("value") != "1.0" {
		t.Fatalf("after revert: %s", r.data)
	}
	h.fail("read", `{"database":"shop","resource":"banner"}`, codeNotFound)
	// Time travel still sees the promoted state.
	if r := h.ok("read", fmt.Sprintf(`{"database":"shop","resource":"banner","revision":%d}`, promoted)); r.raw("value") != `"50% off"` {
		t.Fatalf("read at a revision: %s", r.data)
	}
	// Restore one value from the promoted revision.
	h.ok("restore", fmt.Sprintf(`{"database":"shop","resource":"catalog","path":"/f","from_revision":%d}`, promoted))
	if r := h.ok("read", `{"database":"shop","resource":"catalog","path":"/f"}`); r.raw("value") != "2.50" {
		t.Fatalf("after restore: %s", r.data)
	}

	// Listings and information.
	r = h.ok("list_databases", `{}`)
	if !strings.Contains(string(r.data), `{"branch":"main","revision":`) || !strings.Contains(string(r.data), `"name":"shop"`) {
		t.Fatalf("list_databases: %s", r.data)
	}
	r = h.ok("list_resources", `{"database":"shop","snapshot":"before-sale"}`)
	if !strings.Contains(string(r.data), `"resources":[{"name":"catalog","kind":"object"`) || r.num("revision") != 3 {
		t.Fatalf("list_resources: %s", r.data)
	}
	r = h.ok("list_branches", `{"database":"shop"}`)
	if !strings.Contains(string(r.data), `"name":"sale"`) || !strings.Contains(string(r.data), `"creator":"tester"`) {
		t.Fatalf("list_branches: %s", r.data)
	}
	r = h.ok("list_snapshots", `{"database":"shop"}`)
	if !strings.Contains(string(r.data), `"note":"prices as of the spring catalogue"`) {
		t.Fatalf("list_snapshots: %s", r.data)
	}
	r = h.ok("resource_info", `{"database":"shop","resource":"catalog"}`)
	if r.m["history_complete"] != true || r.num("created_revision") != 2 || r.num("changed_in") < 4 || r.str("kind") != "object" {
		t.Fatalf("resource_info: %s", r.data)
	}
	r = h.ok("resource_info", `{"database":"shop","resource":"banner","revision":6}`)
	if r.str("history_branch") != "sale" || r.num("created_revision") != 6 || r.num("changed_in") != 1 {
		t.Fatalf("resource_info at a revision: %s", r.data)
	}
	// at: the branch as it was at a time.
	r = h.ok("read", `{"database":"shop","resource":"catalog","path":"/f","at":"`+timeOf2+`"}`)
	if r.raw("value") != "1.0" || r.num("revision") != 2 {
		t.Fatalf("read at a time: %s", r.data)
	}

	// Errors an agent can act on.
	r = h.fail("read", `{"database":"shop","resource":"catalgo"}`, codeNotFound)
	if !slices.Contains(didYouMean(r), "catalog") || strings.Contains(r.summary, `"catalog"`) {
		t.Fatalf("unknown resource: %s", r.text)
	}
	r = h.fail("read", `{"database":"shpo","resource":"catalog"}`, codeNotFound)
	if !slices.Contains(didYouMean(r), "shop") {
		t.Fatalf("unknown database: %s", r.text)
	}
	r = h.fail("put", `{"database":"shop","resource":"catalog","value":{},"expected_head":2}`, codeConflict)
	if r.num("head") != reverted+1 || !strings.HasPrefix(r.text, fmt.Sprintf("CONFLICT: branch main is at revision %d, not 2", reverted+1)) {
		t.Fatalf("stale expected_head: %s", r.text)
	}
	r = h.fail("history", `{"database":"shop","limt":3,"branhc":"main","resource":7}`, codeInvalidArgument)
	for _, want := range []string{`unknown argument "limt"`, `unknown argument "branhc"`, `argument "resource" must be a string`} {
		if !strings.Contains(r.text, want) {
			t.Errorf("arguments refusal lacks %s: %s", want, r.text)
		}
	}
	if dym := didYouMean(r); !slices.Contains(dym, "limit") || !slices.Contains(dym, "branch") {
		t.Errorf("did_you_mean = %v", dym)
	}
	h.fail("read", `{"database":"shop"}`, codeInvalidArgument)                                                            // missing resource
	h.fail("read", `{"database":"shop","resource":"catalog","revision":2,"snapshot":"before-sale"}`, codeInvalidArgument) // two states
	h.fail("read", `{"database":"shop","resource":"catalog","revision":0}`, codeInvalidArgument)
	h.fail("read", `{"database":"shop","resource":"catalog","revision":2.5}`, codeInvalidArgument) // 2.0 is 2 (JSON Schema's integer)
	h.fail("read", `{"database":"shop","resource":"catalog","at":"yesterday"}`, codeInvalidArgument)
	h.fail("read", `{"database":"shop","resource":"catalog","path":"f"}`, codeInvalidPath)
	h.fail("read", `{"database":"shop","resource":"catalog","revision":999}`, codeNotFound)
	h.fail("history", `{"database":"shop","path":"/f"}`, codeInvalidArgument)
	h.fail("diff", `{"database":"shop"}`, codeInvalidArgument)
	h.fail("patch", `{"database":"shop","resource":"catalog","operations":[{"op":"add","path":"/a","vaule":1}]}`, codeInvalidArgument)
	h.fail("patch", `{"database":"shop","resource":"catalog","operations":[{"op":"remove","path":"/a"}]}`, codeNotFound)
	h.fail("put", `{"database":"shop","resource":"catalog","value":{"a":1,"a":2}}`, codeInvalidArgument)
	h.fail("put", `{"database":"shop","resource":"catalog","resource":"catalog","value":1}`, codeInvalidArgument)
	h.fail("put", `{"database":"shop","resource":"../etc","value":1}`, codeInvalidArgument)
	h.fail("create_branch", `{"database":"shop","name":"before-sale"}`, codeConflict)
	h.fail("revert", `{"database":"shop"}`, codeInvalidArgument)
	h.fail("restore", `{"database":"shop","resource":"catalog"}`, codeInvalidArgument)

	// A retried write with the same idempotency_key does not commit twice.
	first := h.ok("put", `{"database":"shop","resource":"notes","value":[1],"idempotency_key":"k1"}`)
	again := h.ok("put", `{"database":"shop","resource":"notes","value":[1],"idempotency_key":"k1"}`)
	if again.num("revision") != first.num("revision") || again.m["replayed"] != true {
		t.Fatalf("idempotent retry: %s then %s", first.data, again.data)
	}

	// Clean up what the story made.
	h.ok("delete", `{"database":"shop","resource":"notes"}`)
	h.ok("delete_snapshot", `{"database":"shop","name":"before-sale"}`)
	h.ok("delete_branch", `{"database":"shop","name":"sale"}`)
	h.fail("delete_branch", `{"database":"shop","name":"sale"}`, codeNotFound)
	h.fail("delete_branch", `{"database":"shop","name":"main"}`, codeInvalidArgument)
}

func didYouMean(r *result) []string {
	var out []string
	if l, ok := r.m["did_you_mean"].([]any); ok {
		for _, x := range l {
			s, _ := x.(string)
			out = append(out, s)
		}
	}
	return out
}

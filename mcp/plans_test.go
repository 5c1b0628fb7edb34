package mcp

import (
	"context"
	"strings"
	"testing"

	"github.com/strata-db/strata/snapshots"
)

// head is the head revision of a branch, read through the library.
func (h *harness) head(db, branch string) uint64 {
	h.t.Helper()
	d, err := h.dir.Open(context.Background(), db)
	if err != nil {
		h.t.Fatal(err)
	}
	st, err := d.Resolve(context.Background(), snapshots.Ref{Branch: branch})
	if err != nil {
		h.t.Fatal(err)
	}
	return st.Rev.Number
}

// refused checks a CONFIRMATION_REQUIRED refusal that wrote nothing.
func (h *harness) refused(name, args string) {
	h.t.Helper()
	before := h.head("shop", "main")
	r := h.fail(name, args, codeConfirmationRequired)
	if !strings.Contains(r.text, "confirmed plan") || !strings.Contains(r.text, "create_branch") {
		h.t.Errorf("%s: the refusal does not say what to do: %s", name, r.text)
	}
	if after := h.head("shop", "main"); after != before {
		h.t.Errorf("%s: refused, yet main moved from %d to %d", name, before, after)
	}
}

// TestBranchesMode: agents write on their own branches; nothing that changes main commits.
func TestBranchesMode(t *testing.T) {
	h := newHarness(t, Config{Writes: WritesBranches, Principal: "agent-1", Protected: []string{"main", "prod"}})
	h.ok("create_database", `{"database":"shop"}`)
	h.refused("put", `{"database":"shop","resource":"catalog","value":{"a":1}}`)
	h.refused("put", `{"database":"shop","resource":"catalog","value":{"a":1},"idempotency_key":"x"}`)
	h.refused("insert", `{"database":"shop","resource":"catalog","path":"/a","value":1,"branch":"main"}`)

	h.ok("create_branch", `{"database":"shop","name":"work"}`)
	h.ok("put", `{"database":"shop","resource":"catalog","value":{"a":1,"b":[1,2]},"branch":"work"}`)
	h.ok("update", `{"database":"shop","resource":"catalog","path":"/a","value":2,"branch":"work"}`)
	h.ok("delete", `{"database":"shop","resource":"catalog","path":"/b/0","branch":"work"}`)
	h.ok("diff", `{"database":"shop","to_branch":"work"}`)

	h.refused("promote", `{"database":"shop","branch":"work"}`)
	h.refused("revert", `{"database":"shop","revision":1}`)
	h.refused("restore", `{"database":"shop","resource":"catalog","from_branch":"work"}`)
	h.refused("update", `{"database":"shop","resource":"catalog","value":1}`)
	h.refused("delete", `{"database":"shop","resource":"catalog"}`)
	h.refused("patch", `{"database":"shop","resource":"catalog","operations":[{"op":"add","path":"/z","value":1}]}`)
	h.refused("delete_branch", `{"database":"shop","name":"main"}`)
	h.refused("create_branch", `{"database":"shop","name":"prod","from_branch":"work"}`) // a new protected branch
	h.ok("create_branch", `{"database":"shop","name":"main2","from_branch":"work"}`)
	if r := h.ok("list_branches", `{"database":"shop"}`); !strings.Contains(string(r.data), `"name":"main","head":1,"base":1,"creator":"agent-1"`) {
		t.Fatalf("list_branches: %s", r.data)
	}
}

// TestOnMode: additive changes to main commit; changes that remove or overwrite data do not.
func TestOnMode(t *testing.T) {
	h := newHarness(t, Config{Writes: WritesOn, Principal: "agent-1"})
	h.ok("create_database", `{"database":"shop"}`)
	first := h.ok("put", `{"database":"shop","resource":"catalog","value":{"items":[1],"meta":{}},"idempotency_key":"create-catalog"}`)
	// The retry of that put returns its result: the resource exists now, but this is not an overwrite.
	if again := h.ok("put", `{"database":"shop","resource":"catalog","value":{"items":[1],"meta":{}},"idempotency_key":"create-catalog"}`); again.num("revision") != first.num("revision") || again.m["replayed"] != true {
		t.Fatalf("retry: %s", again.data)
	}
	h.refused("put", `{"database":"shop","resource":"catalog","value":{}}`)
	h.refused("put", `{"database":"shop","resource":"catalog","value":{},"idempotency_key":"other"}`)

	h.ok("insert", `{"database":"shop","resource":"catalog","path":"/items/-","value":2}`)
	h.ok("insert", `{"database":"shop","resource":"catalog","path":"/items/0","value":0}`)
	h.ok("insert", `{"database":"shop","resource":"catalog","path":"/meta/owner","value":"ops"}`)
	h.refused("insert", `{"database":"shop","resource":"catalog","path":"/meta/owner","value":"me"}`)
	h.refused("insert", `{"database":"shop","resource":"catalog","path":"","value":{}}`)
	h.ok("insert", `{"database":"shop","resource":"fresh","path":"","value":{"new":true}}`)
	h.ok("patch", `{"database":"shop","resource":"catalog","operations":[{"op":"test","path":"/items/0","value":0},{"op":"add","path":"/meta/tags","value":[]},{"op":"copy","from":"/items","path":"/backup"}]}`)
	h.refused("patch", `{"database":"shop","resource":"catalog","operations":[{"op":"add","path":"/x","value":1},{"op":"replace","path":"/items/0","value":9}]}`)
	h.refused("patch", `{"database":"shop","resource":"catalog","operations":[{"op":"add","path":"/meta/owner","value":"me"}]}`)
	h.refused("update", `{"database":"shop","resource":"catalog","path":"/items/0","value":5}`)
	h.refused("delete", `{"database":"shop","resource":"catalog","path":"/items/0"}`)
	h.refused("revert", `{"database":"shop","revision":2}`)
	h.refused("delete_branch", `{"database":"shop","name":"main"}`)

	// A stale expected_head is still a CONFLICT, not a refusal.
	h.fail("insert", `{"database":"shop","resource":"catalog","path":"/items/-","value":3,"expected_head":2}`, codeConflict)

	// Branches and snapshots someone else made are theirs to delete.
	ctx := context.Background()
	db, err := h.dir.Open(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateSnapshot(ctx, "release", snapshots.Ref{}, "", "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateBranch(ctx, "alices", snapshots.Ref{}, "alice"); err != nil {
		t.Fatal(err)
	}
	h.refused("delete_snapshot", `{"database":"shop","name":"release"}`)
	h.refused("delete_branch", `{"database":"shop","name":"alices"}`)
	h.ok("create_snapshot", `{"database":"shop","name":"mine"}`)
	h.ok("delete_snapshot", `{"database":"shop","name":"mine"}`)

	// Revisions record the principal and the tool.
	r := h.ok("history", `{"database":"shop","limit":1}`)
	if !strings.Contains(string(r.data), `"author":"agent-1","tool":"patch"`) {
		t.Fatalf("history: %s", r.data)
	}
}

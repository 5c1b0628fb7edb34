package mcp

import (
	"context"
	"strings"
	"testing"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/snapshots"
)

// TestScopeWrites (T10, the write side): writes that copy or move hidden data are refused as if it did not exist.
func TestScopeWrites(t *testing.T) {
	path := t.TempDir()
	op := newHarnessAt(t, path, Config{Writes: gate.WritesOn, Protected: []string{}, Principal: "operator"})
	op.ok("create_database", `{"database":"shop"}`)
	op.ok("put", `{"database":"shop","resource":"orders","value":[1]}`)                // 2
	op.ok("put", `{"database":"shop","resource":"secrets","value":{"key":"hunter2"}}`) // 3: hidden
	op.ok("put", `{"database":"shop","resource":"orders","value":[1,2]}`)              // 4
	op.ok("create_branch", `{"database":"shop","name":"ops"}`)
	op.ok("update", `{"database":"shop","resource":"secrets","path":"/key","value":"x","branch":"ops"}`)

	h := newHarnessAt(t, path, Config{Writes: gate.WritesOn, Protected: []string{}, Principal: "agent",
		Scope: gate.Scope{Resources: gate.Names{Deny: []string{"secrets"}}}})
	// A hidden revision number is a missing one.
	hidden := h.fail("restore", `{"database":"shop","resource":"orders","from_revision":3}`, codeNotFound)
	missing := h.fail("restore", `{"database":"shop","resource":"orders","from_revision":9}`, codeNotFound)
	if strings.Replace(hidden.str("message"), "3", "9", 1) != missing.str("message") || hidden.str("hint") != missing.str("hint") {
		t.Fatalf("hidden revision %q / %q differs from a missing one %q / %q", hidden.str("message"), hidden.str("hint"), missing.str("message"), missing.str("hint"))
	}
	h.fail("create_branch", `{"database":"shop","name":"peek","from_revision":3}`, codeNotFound)
	h.fail("create_snapshot", `{"database":"shop","name":"peek","revision":3}`, codeNotFound)
	// Reverting main to before the secret existed, or promoting a branch that changed it, would change hidden
	// data: refused, and nothing is written.
	head := h.head("shop", "main")
	for _, c := range []struct{ tool, args string }{
		{"revert", `{"database":"shop","revision":2}`},
		{"revert", `{"database":"shop","revision":2,"expected_head":4}`},
		{"promote", `{"database":"shop","branch":"ops"}`},
	} {
		r := h.fail(c.tool, c.args, codeDenied)
		if strings.Contains(r.text, "secrets") || strings.Contains(r.text, "hunter2") {
			t.Errorf("%s: the refusal names hidden data: %s", c.tool, r.text)
		}
	}
	if h.head("shop", "main") != head {
		t.Fatal("a refused write moved main")
	}
	// A revert that stays within the scope is fine.
	h.ok("revert", `{"database":"shop","revision":4}`)
	// A missing resource's suggestions never name a hidden one.
	r := h.fail("update", `{"database":"shop","resource":"secretz","path":"/key","value":1}`, codeNotFound)
	if strings.Contains(string(r.data), `"secrets"`) {
		t.Fatalf("a hidden resource suggested: %s", r.data)
	}
	// The operator still sees it all.
	d, _ := h.dir.Open(context.Background(), "shop")
	if _, _, err := d.Get(context.Background(), snapshots.Ref{}, "secrets", nil); err != nil {
		t.Fatal(err)
	}
}

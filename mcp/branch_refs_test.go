package mcp

import (
	"context"
	"strings"
	"testing"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/snapshots"
)

// TestApplyPlanBranchGone: an approved plan whose branch no longer exists — the branch a promote brings in,
// deleted by the agent that owns it, or the protected branch a write targets, deleted by the operator — cannot be
// applied as previewed. apply_plan must say so as it does for a delete_branch plan whose branch is gone
// (PLAN_CHANGED: "plan the change anew"), not answer NOT_FOUND for a branch the caller did not name in its call.
func TestApplyPlanBranchGone(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesBranches, Protected: []string{"main", "release"}, Principal: "agent-1"})
	h.ok("create_database", `{"database":"shop"}`)
	h.seed("shop", "catalog", `{"price":10}`)

	// A promote whose source branch the agent deleted after planning it.
	h.ok("create_branch", `{"database":"shop","name":"work"}`)
	h.ok("update", `{"database":"shop","resource":"catalog","path":"/price","value":12,"branch":"work"}`)
	id := h.planned("promote", `{"database":"shop","branch":"work"}`)
	h.ok("delete_branch", `{"database":"shop","name":"work"}`)
	h.decide(id, true, "")
	r := h.fail("apply_plan", `{"plan_id":"`+id+`"}`, codePlanChanged)
	if !strings.Contains(r.str("message"), "work") {
		t.Errorf("the refusal does not name the branch that is gone: %s", r.text)
	}

	// A write to a protected branch the operator deleted after it was planned.
	d, err := h.dir.Open(context.Background(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateBranch(context.Background(), "release", snapshots.Ref{}, "operator"); err != nil {
		t.Fatal(err)
	}
	r = h.ok("update", `{"database":"shop","resource":"catalog","path":"/price","value":13,"branch":"release"}`)
	id = r.str("plan_id")
	if id == "" {
		t.Fatalf("want a plan: %s", r.text)
	}
	if _, err := d.DeleteBranch(context.Background(), "release"); err != nil {
		t.Fatal(err)
	}
	h.decide(id, true, "")
	r = h.fail("apply_plan", `{"plan_id":"`+id+`"}`, codePlanChanged)
	if !strings.Contains(r.str("message"), "release") {
		t.Errorf("the refusal does not name the branch that is gone: %s", r.text)
	}
}

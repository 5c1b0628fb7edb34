package gate

import (
	"context"
	"testing"

	"github.com/strata-db/strata/snapshots"
)

// TestOwnDeletePlanTakesConfirmation: a delete_branch of the principal's own, unprotected branch is of class
// write. Under a policy of write: ask, protected: approve, its plan is made as one a client's confirmation applies
// (OutOfBand false). Applying it with a confirmation must then commit; View.OutOfBand must not take it for a
// protected-class plan because it has a Target (every delete plan names one).
func TestOwnDeletePlanTakesConfirmation(t *testing.T) {
	ctx := context.Background()
	g := fixture(t, "")
	agent := actor(t, g, Principal{Name: "agent", Mode: WritesBranches, Policy: Policy{Write: Ask, Protected: Approve}})
	v, err := agent.Open(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	// The branch is the agent's own: made under a policy that allowed it (the operator tightened it since).
	early, err := actor(t, g, Principal{Name: "agent", Mode: WritesBranches}).Open(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := early.CreateBranch(ctx, "work", snapshots.Ref{}); err != nil {
		t.Fatal(err)
	}
	out, err := v.Write(ctx, Change{Op: OpDeleteBranch, Name: "work"})
	if err != nil || out.Plan == nil {
		t.Fatalf("delete_branch: %+v %v, want a plan", out, err)
	}
	if out.Plan.Plan.OutOfBand {
		t.Fatalf("the plan of a write-class delete under write: ask was made out of band")
	}
	_, p, err := agent.FindPlan(ctx, out.Plan.Plan.ID)
	if err != nil {
		t.Fatal(err)
	}
	if v.OutOfBand(ctx, p) {
		t.Errorf("View.OutOfBand says only a person out of band may apply the plan of a write-class delete (policy write: ask)")
	}
	if _, err := v.ApplyPlan(ctx, p, "the user"); err != nil {
		t.Fatalf("apply with the user's confirmation: %s %v", Code(err), err)
	}
}

package snapshots

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/strata-db/strata/store"
)

// TestDryRunAndPlan: a dry run computes a write without committing it; a plan made from it commits, through
// ConsumePlan, only as previewed, once approved, once; the marker lands in the revision's transaction.
func TestDryRunAndPlan(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t, store.NewMemBackend())
	base := must(db.Put(ctx, "doc", []byte(`{"a":1,"b":[1,2]}`), WriteOptions{}))
	patch := ops(t, `[{"op":"replace","path":"/a","value":2},{"op":"remove","path":"/b/0"}]`)

	dry := must(db.Patch(ctx, "doc", patch, WriteOptions{DryRun: true}))
	if dry.Preview == nil || dry.Preview.Base.Rev.Number != base.Revision || dry.Revision != 0 {
		t.Fatalf("dry run: %+v", dry)
	}
	if st := must(db.Resolve(ctx, Ref{})); st.Rev.Number != base.Revision {
		t.Fatalf("a dry run committed: head %d", st.Rev.Number)
	}
	d := must(dry.Preview.Diff(ctx, nil))
	if d.Counts.Replaced != 1 || d.Counts.Removed != 1 {
		t.Fatalf("preview diff: %+v", d.Counts)
	}
	// A dry run of nothing changes nothing and has no preview.
	if r := must(db.Patch(ctx, "doc", ops(t, `[{"op":"test","path":"/a","value":1}]`), WriteOptions{DryRun: true})); r.Preview != nil || !r.Unchanged {
		t.Fatalf("dry run of a no-op: %+v", r)
	}

	now := db.Now()
	p := Plan{ID: "plan-test", Principal: "agent", Op: "patch", Branch: Main, Base: base.Revision,
		Root: []byte(dry.Preview.RootEncoding()), Created: now, Expires: now.Add(time.Hour), State: PlanPending}
	if err := db.SavePlan(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := db.SavePlan(ctx, p); !errors.Is(err, ErrConflict) {
		t.Fatalf("saving a plan twice: %v", err)
	}
	w := WriteOptions{ExpectedHead: base.Revision, Author: "agent", InTx: db.ConsumePlan(p.ID, "agent", "")}
	// Not approved: refused, nothing committed.
	if _, err := db.Patch(ctx, "doc", patch, w); !errors.Is(err, ErrConflict) {
		t.Fatalf("unapproved: %v", err)
	}
	// Another principal: as if it did not exist.
	must(db.DecidePlan(ctx, p.ID, true, "operator", ""))
	w2 := w
	w2.InTx = db.ConsumePlan(p.ID, "intruder", "")
	if _, err := db.Patch(ctx, "doc", patch, w2); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another principal: %v", err)
	}
	// Another change than the one previewed: PLAN_CHANGED.
	if _, err := db.Patch(ctx, "doc", ops(t, `[{"op":"replace","path":"/a","value":3}]`), w); !errors.Is(err, ErrPlanChanged) {
		t.Fatalf("a different change: %v", err)
	}
	if st := must(db.Resolve(ctx, Ref{})); st.Rev.Number != base.Revision {
		t.Fatalf("a refused apply committed: head %d", st.Rev.Number)
	}
	r := must(db.Patch(ctx, "doc", patch, w))
	got := must(db.GetPlan(ctx, p.ID))
	if got.State != PlanApplied || got.Revision != r.Revision || got.DecidedBy != "operator" {
		t.Fatalf("after apply: %+v", got)
	}
	st := must(db.Resolve(ctx, Ref{Revision: r.Revision}))
	if string(st.Rev.Root) != string(p.Root) {
		t.Fatal("the committed root is not the previewed one")
	}
	// Once.
	w.ExpectedHead = r.Revision
	if _, err := db.Patch(ctx, "doc", patch, w); err == nil {
		t.Fatal("a plan applied twice")
	}
	if _, err := db.DecidePlan(ctx, p.ID, false, "operator", "late"); !errors.Is(err, ErrConflict) {
		t.Fatalf("deciding an applied plan: %v", err)
	}
}

// TestPlanDeletesAndExpiry: deleting a branch as planned checks its head; plans expire by the database clock.
func TestPlanDeletesAndExpiry(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t, store.NewMemBackend())
	b := must(db.CreateBranch(ctx, "feature", Ref{}, "alice"))
	now := db.Now()
	p := Plan{ID: "plan-del", Principal: "agent", Op: "delete_branch", Target: "feature", Base: b.Head,
		Created: now, Expires: now.Add(time.Hour), State: PlanPending}
	if err := db.SavePlan(ctx, p); err != nil {
		t.Fatal(err)
	}
	must(db.DecidePlan(ctx, p.ID, true, "operator", ""))
	must(db.Put(ctx, "x", []byte(`1`), WriteOptions{Branch: "feature"}))
	if _, err := db.DeleteBranchForPlan(ctx, "feature", b.Head, p.ID, "agent", ""); !errors.Is(err, ErrPlanChanged) {
		t.Fatalf("the branch moved: %v", err)
	}
	if _, err := db.GetPlan(ctx, p.ID); err != nil || must(db.GetPlan(ctx, p.ID)).State != PlanApproved {
		t.Fatal("a refused delete burned the plan")
	}
	q := Plan{ID: "plan-short", Principal: "agent", Op: "delete_branch", Target: "feature", Base: b.Head + 1,
		Created: db.Now(), Expires: db.Now().Add(3 * time.Second), State: PlanPending}
	if err := db.SavePlan(ctx, q); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		db.Now()
	}
	if _, err := db.DecidePlan(ctx, q.ID, true, "operator", ""); !errors.Is(err, ErrPlanExpired) {
		t.Fatalf("approving an expired plan: %v", err)
	}
}

// TestExpectRoot: a write checked on a dry run commits exactly the checked root, or nothing.
func TestExpectRoot(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t, store.NewMemBackend())
	base := must(db.Put(ctx, "doc", []byte(`{"a":1}`), WriteOptions{}))
	dry := must(db.Put(ctx, "doc", []byte(`{"a":2}`), WriteOptions{DryRun: true}))
	if _, err := db.Put(ctx, "doc", []byte(`{"a":3}`), WriteOptions{InTx: ExpectRoot([]byte(dry.Preview.RootEncoding()))}); !errors.Is(err, ErrPlanChanged) {
		t.Fatalf("another state than the one checked: %v", err)
	}
	if st := must(db.Resolve(ctx, Ref{})); st.Rev.Number != base.Revision {
		t.Fatal("a refused write committed")
	}
	r := must(db.Put(ctx, "doc", []byte(`{"a":2}`), WriteOptions{InTx: BothInTx(nil, ExpectRoot([]byte(dry.Preview.RootEncoding())))}))
	if r.Revision != base.Revision+1 {
		t.Fatalf("the checked write: %+v", r)
	}
}

// TestDeleteOf: deleting one's own branch or snapshot checks the creator in the deleting transaction.
func TestDeleteOf(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t, store.NewMemBackend())
	must(db.CreateBranch(ctx, "x", Ref{}, "alice"))
	must(db.CreateSnapshot(ctx, "s", Ref{}, "", "alice"))
	if _, err := db.DeleteBranchOf(ctx, "x", "bob"); !errors.Is(err, ErrConflict) {
		t.Fatalf("bob deleting alice's branch: %v", err)
	}
	if _, err := db.DeleteSnapshotOf(ctx, "s", "bob"); !errors.Is(err, ErrConflict) {
		t.Fatalf("bob deleting alice's snapshot: %v", err)
	}
	must(db.DeleteBranchOf(ctx, "x", "alice"))
	must(db.DeleteSnapshotOf(ctx, "s", ""))
}

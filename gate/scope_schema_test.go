package gate

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
)

// TestScopedRevertHidesSchemaViolation: a scoped principal's revert whose result would break the schema of a
// hidden resource must answer as any revert that differs outside the scope (denied), not with a SchemaError that
// names the hidden resource and quotes its value.
func TestScopedRevertHidesSchemaViolation(t *testing.T) {
	ctx := context.Background()
	v := scopedWithSchema(t, hiddenRes, `{"properties":{"token":{"pattern":"-43$"}}}`)
	_, err := v.Write(ctx, Change{Op: OpRevert, Target: &snapshots.Ref{Snapshot: "snap4"}, Branch: "work"})
	if err == nil {
		t.Fatal("the revert committed")
	}
	t.Logf("answer: %s: %v", Code(err), err)
	for _, leak := range []string{hiddenRes, "TOPSECRET"} {
		if strings.Contains(err.Error(), leak) {
			t.Errorf("the answer to a scoped principal reveals %q: %v", leak, err)
		}
	}
	if Code(err) != "DENIED" {
		t.Errorf("code %s, want DENIED (as without a schema)", Code(err))
	}
}

// When the schema a revert breaks is a visible resource's, but the revert also changes a hidden one, the answer is
// still DENIED: a SCHEMA_VIOLATION would tell the principal that nothing hidden differs.
func TestScopedRevertVisibleSchemaHiddenChange(t *testing.T) {
	ctx := context.Background()
	v := scopedWithSchema(t, "orders", `{"minItems":2}`)
	// Revision 2: one order (the schema wants two), and no secrets yet.
	_, err := v.Write(ctx, Change{Op: OpRevert, Target: &snapshots.Ref{Revision: 2}, Branch: "work"})
	if Code(err) != "DENIED" {
		t.Errorf("code %s (%v), want DENIED", Code(err), err)
	}
}

// TestScopedHistoryPastScanLimit: past the scan limit, the history of a hidden resource answers as that of a name
// nothing ever changed: an empty page and the same cursor, for History and PathHistory alike.
func TestScopedHistoryPastScanLimit(t *testing.T) {
	old := snapshots.SetHistoryScanLimit(3)
	t.Cleanup(func() { snapshots.SetHistoryScanLimit(old) })
	ctx := context.Background()
	g := fixture(t, "")
	db, err := g.dir.Open(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := db.Put(ctx, "customers", []byte(fmt.Sprintf(`{"n":%d}`, i)), snapshots.WriteOptions{Author: "admin"}); err != nil {
			t.Fatal(err)
		}
	}
	a := actor(t, g, Principal{Name: "scoped", Mode: WritesOn, Scope: scope})
	v, err := a.Open(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	answer := func(resource string) string {
		p, err := v.History(ctx, snapshots.HistoryQuery{Resource: resource})
		if err != nil {
			return err.Error()
		}
		ph, err := v.PathHistory(ctx, snapshots.HistoryQuery{Branch: "main", Resource: resource, Path: revision.MustPointer("/token"), Limit: 10})
		if err != nil {
			return err.Error()
		}
		return fmt.Sprintf("%d revisions, next %d; %d changes, next %d", len(p.Revisions), p.Next, len(ph.Changes), ph.Next)
	}
	hidden, missing := answer(hiddenRes), answer("nosuch")
	if hidden != missing {
		t.Fatalf("hidden: %s\nmissing: %s", hidden, missing)
	}
	if !strings.Contains(hidden, "0 revisions, next ") || strings.Contains(hidden, "next 0;") {
		t.Fatalf("past the scan limit: %s, want an empty page and a cursor", hidden)
	}
}

// scopedWithSchema is the fixture's shop with a schema on resource, a branch work, and a scoped principal's view.
func scopedWithSchema(t *testing.T, resource, schema string) *View {
	t.Helper()
	ctx := context.Background()
	g := fixture(t, "")
	db, err := g.dir.Open(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SetSchema(ctx, resource, []byte(schema), "admin"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateBranch(ctx, "work", snapshots.Ref{}, "admin"); err != nil {
		t.Fatal(err)
	}
	v, err := actor(t, g, Principal{Name: "scoped", Mode: WritesOn, Scope: scope}).Open(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/snapshots"
)

// TestPlanCountsPastKeptPaths: a plan keeps the first 100 paths it removes; `strata plans DB ID` and
// `strata approve` must tell the person how many values it removes (150), not how many paths it kept.
func TestPlanCountsPastKeptPaths(t *testing.T) {
	s, id := removalPlan(t, 150)
	shown := s.must("", "plans", "shop", id)
	if strings.Contains(shown, "removes 100 value(s)") {
		t.Errorf("strata plans shop ID says the plan removes 100 values; it removes 150:\n%s", firstLines(shown, 12))
	}
	approved := s.must("", "approve", "shop", id)
	if strings.Contains(approved, "removes 100 value(s)") {
		t.Errorf("strata approve says the plan removes 100 values; it removes 150:\n%s", approved)
	}
}

// removalPlan makes, in a fresh session's database shop, an agent's plan that removes n members of catalog's items,
// and returns the session and the plan's id.
func removalPlan(t *testing.T, n int) (*session, string) {
	t.Helper()
	s := newSession(t, false, nil)
	s.must("", "db", "create", "shop")
	ctx := context.Background()
	dir, err := snapshots.OpenDir(s.data, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int{}
	for i := 0; i < n; i++ {
		m[fmt.Sprintf("k%05d", i)] = i
	}
	b, _ := json.Marshal(map[string]any{"items": m})
	db, err := dir.Open(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Put(ctx, "catalog", b, snapshots.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	g, err := gate.New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := g.As(gate.Principal{Name: "agent", Mode: gate.WritesBranches})
	if err != nil {
		t.Fatal(err)
	}
	v, err := a.Open(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	out, err := v.Write(ctx, gate.Change{Op: gate.OpPut, Resource: "catalog", Value: json.RawMessage(`{"items":{}}`)})
	if err != nil || out.Plan == nil {
		t.Fatalf("%+v %v, want a plan", out, err)
	}
	g.Close()
	dir.Close()
	return s, out.Plan.Plan.ID
}

func firstLines(s string, n int) string {
	ls := strings.SplitN(s, "\n", n+1)
	return strings.Join(ls[:min(n, len(ls))], "\n")
}

// TestApproveHelpSaysRebase: a plan applies after commits that did not touch what it changes (design.md §4: it
// is rebased); `strata approve --help` must not tell the person it applies only while the branch has not moved.
func TestApproveHelpSaysRebase(t *testing.T) {
	s := newSession(t, false, nil)
	out := s.must("", "approve", "--help")
	if strings.Contains(out, "only while the branch is still where it was") {
		t.Errorf("strata approve --help:\n%s", out)
	}
}

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

// TestPlanCountsAtLeast: a plan's counts come from a diff that stops at gate.PreviewOps operations. The
// review page now says so ("the counts are at least"); `strata plans DB ID` must not tell the person a plan that
// removes 12,000 values removes exactly 10,000.
func TestPlanCountsAtLeast(t *testing.T) {
	s := newSession(t, false, nil)
	s.must("", "db", "create", "shop")
	ctx := context.Background()
	dir, err := snapshots.OpenDir(s.data, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = gate.PreviewOps + 2000
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
	id := out.Plan.Plan.ID
	g.Close()
	dir.Close()

	shown := s.must("", "plans", "shop", id)
	if strings.Contains(shown, fmt.Sprintf("removes %d value(s)", gate.PreviewOps)) && !strings.Contains(shown, "at least") {
		t.Errorf("strata plans shop ID says the plan removes exactly %d values; it removes %d:\n%s", gate.PreviewOps, n, firstLines(shown, 12))
	}
}

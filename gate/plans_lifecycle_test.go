package gate

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/strata-db/strata/internal/pgtest"
	"github.com/strata-db/strata/snapshots"
)

// TestScopedPromotePlanRebases: a plan applies after commits that did not touch what it changes (design.md
// §4: it is rebased onto the new head), whoever made it. A scoped principal's promote plan must do so too, and an
// answer to it must never name a revision its scope hides.
func TestScopedPromotePlanRebases(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		scoped bool
		commit string // the resource the operator writes on main after the plan
	}{
		{"unscoped, unrelated commit", false, "orders"},
		{"scoped, unrelated commit", true, "orders"},
		{"scoped, hidden commit", true, hiddenRes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := fixture(t, "")
			p := Principal{Name: "agent", Mode: WritesBranches}
			if tc.scoped {
				p.Scope = scope
			}
			agent := actor(t, g, p)
			ov, _ := actor(t, g, Operator("op")).Open(ctx, "shop")
			v, _ := agent.Open(ctx, "shop")
			if _, err := v.CreateBranch(ctx, "work", snapshots.Ref{}); err != nil {
				t.Fatal(err)
			}
			if _, err := v.Write(ctx, Change{Op: OpUpdate, Branch: "work", Resource: "customers", Path: "/alice/city", Value: json.RawMessage(`"Bergen"`)}); err != nil {
				t.Fatal(err)
			}
			out, err := v.Write(ctx, Change{Op: OpPromote, Source: "work"})
			if err != nil || out.Plan == nil {
				t.Fatalf("promote: %+v %v, want a plan", out, err)
			}
			if _, err := ov.DecidePlan(ctx, out.Plan.Plan.ID, true, ""); err != nil {
				t.Fatal(err)
			}
			r, err := ov.Write(ctx, Change{Op: OpPut, Resource: tc.commit, Value: json.RawMessage(`{"n":"TOPSECRET-44"}`)})
			if err != nil {
				t.Fatal(err)
			}
			_, pl, err := agent.FindPlan(ctx, out.Plan.Plan.ID)
			if err != nil {
				t.Fatal(err)
			}
			o, err := v.ApplyPlan(ctx, pl, "")
			if err != nil {
				if tc.commit == hiddenRes && strings.Contains(err.Error(), "revision "+itoa(r.Result.Revision)) {
					t.Errorf("the answer names hidden revision %d: %v", r.Result.Revision, err)
				}
				t.Fatalf("apply after a commit to %s that the plan does not touch: %s %v", tc.commit, Code(err), err)
			}
			if o.Result == nil || readAt(t, ov, "customers") != `{"alice":{"city":"Bergen"}}` {
				t.Fatalf("after the apply: %+v, customers %s", o, readAt(t, ov, "customers"))
			}
		})
	}
}

func itoa(n uint64) string { b, _ := json.Marshal(n); return string(b) }

// TestTwoServersDecideAndApply (-race): two servers over one data location (a bbolt file opened twice, and a
// PostgreSQL database): an approve on one and a reject on the other of the same plan at once — exactly one wins and
// the plan holds its decision; two applies of an approved plan at once, one on each — exactly one commits.
func TestTwoServersDecideAndApply(t *testing.T) {
	for _, kind := range []string{"bbolt", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			loc := t.TempDir()
			if kind == "postgres" {
				loc = pgtest.URL(t)
			}
			open := func() *Gate {
				dir, err := snapshots.OpenDir(loc, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { dir.Close() })
				g, err := New(dir, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { g.Close() })
				return g
			}
			g1 := open()
			db, err := g1.dir.Create(ctx, "shop", "admin")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Put(ctx, "catalog", []byte(`{"n":0}`), snapshots.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			g2 := open()
			agentP := Principal{Name: "agent", Mode: WritesBranches}
			a1, a2 := actor(t, g1, agentP), actor(t, g2, agentP)
			v1, _ := a1.Open(ctx, "shop")
			v2, _ := a2.Open(ctx, "shop")
			r1, _ := actor(t, g1, Principal{Name: "rita", Review: true}).Open(ctx, "shop")
			r2, _ := actor(t, g2, Principal{Name: "ravi", Review: true}).Open(ctx, "shop")
			for round := 1; round <= 6; round++ {
				out, err := v1.Write(ctx, Change{Op: OpUpdate, Resource: "catalog", Path: "/n", Value: json.RawMessage(itoa(uint64(round)))})
				if err != nil || out.Plan == nil {
					t.Fatalf("round %d: %+v %v, want a plan", round, out, err)
				}
				id := out.Plan.Plan.ID
				var wg sync.WaitGroup
				errs := make([]error, 2)
				for i, r := range []*View{r1, r2} {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, errs[i] = r.DecidePlan(ctx, id, i == 0, "no")
					}()
				}
				wg.Wait()
				if (errs[0] == nil) == (errs[1] == nil) {
					t.Fatalf("round %d: approve %v, reject %v: want exactly one to succeed", round, errs[0], errs[1])
				}
				p, err := db.GetPlan(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if want := map[bool]string{true: snapshots.PlanApproved, false: snapshots.PlanRejected}[errs[0] == nil]; p.State != want {
					t.Fatalf("round %d: plan %s, want %s", round, p.State, want)
				}
				if p.State != snapshots.PlanApproved {
					continue
				}
				before, _ := db.Resolve(ctx, snapshots.Ref{})
				wins := 0
				var mu sync.Mutex
				for _, v := range []*View{v1, v2} {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, p, err := v.a.FindPlan(ctx, id)
						if err != nil {
							t.Error(err)
							return
						}
						if _, err := v.ApplyPlan(ctx, p, ""); err == nil {
							mu.Lock()
							wins++
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				after, _ := db.Resolve(ctx, snapshots.Ref{})
				if wins != 1 || after.Rev.Number != before.Rev.Number+1 {
					t.Fatalf("round %d: %d applies won, head %d → %d", round, wins, before.Rev.Number, after.Rev.Number)
				}
			}
		})
	}
}

// TestRebasedPlanRedoFails: a plan whose change, made again on a head that moved, no longer applies (a patch's
// test op now fails; the resource it writes was deleted) is refused with PLAN_CHANGED, the plan's own code for
// "the branch moved under it" (design.md §4), and nothing is written.
func TestRebasedPlanRedoFails(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		plan   Change
		commit Change
	}{
		{"patch test", Change{Op: OpPatch, Resource: "customers", Patch: json.RawMessage(`[{"op":"test","path":"/alice/city","value":"Oslo"},{"op":"add","path":"/bob","value":{"city":"Rome"}}]`)},
			Change{Op: OpUpdate, Resource: "customers", Path: "/alice/city", Value: json.RawMessage(`"Paris"`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := fixture(t, "")
			agent := actor(t, g, Principal{Name: "agent", Mode: WritesBranches})
			ov, _ := actor(t, g, Operator("op")).Open(ctx, "shop")
			v, _ := agent.Open(ctx, "shop")
			out, err := v.Write(ctx, tc.plan)
			if err != nil || out.Plan == nil {
				t.Fatalf("%+v %v, want a plan", out, err)
			}
			if _, err := ov.DecidePlan(ctx, out.Plan.Plan.ID, true, ""); err != nil {
				t.Fatal(err)
			}
			if _, err := ov.Write(ctx, tc.commit); err != nil {
				t.Fatal(err)
			}
			head, _ := ov.Resolve(ctx, snapshots.Ref{})
			_, p, _ := agent.FindPlan(ctx, out.Plan.Plan.ID)
			_, err = v.ApplyPlan(ctx, p, "")
			if Code(err) != CodePlanChanged {
				t.Errorf("apply: %s %v, want PLAN_CHANGED", Code(err), err)
			}
			if now, _ := ov.Resolve(ctx, snapshots.Ref{}); now.Rev.Number != head.Rev.Number {
				t.Fatal("a changed plan wrote")
			}
		})
	}
}

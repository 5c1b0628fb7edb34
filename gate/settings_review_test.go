package gate

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/snapshots"
)

// A named principal whose entry gives no rate_limit gets the top-level rate_limit ("every principal's rate limit
// unless its own settings give one"); "default" applies only to principals the map does not name.
func TestRateLimitDefaultNotForNamed(t *testing.T) {
	s, err := ParseSettings(strings.NewReader(`{
		"rate_limit": {"calls_per_second": 5, "burst": 5},
		"default": {"rate_limit": {"calls_per_second": 1000, "burst": 1000}},
		"principals": {"alice": {"review": true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.RateLimitFor("alice"); got != (RateLimit{PerSecond: 5, Burst: 5}) {
		t.Errorf("alice (named, no rate_limit of her own) gets %+v, want the top-level {5 5}; default's policy and scopes do not apply to her, but its rate limit does", got)
	}
}

// A configuration that names the same key twice is ambiguous: the last silently wins, here dropping bob's scope.
func TestDuplicateKeysRefused(t *testing.T) {
	for _, cfg := range []string{
		`{"principals": {"bob": {"scopes": {"databases": {"allow": ["public"]}}}, "bob": {"review": true}}}`,
		`{"writes": "off", "writes": "on"}`,
		`{"writes": "off", "Writes": "on"}`,
	} {
		s, err := ParseSettings(strings.NewReader(cfg))
		if err == nil {
			t.Errorf("%s: accepted (writes %q, bob's scope %+v, default scope %+v); want a duplicate-key error", cfg, s.Writes, s.For("bob").Scope, s.For("x").Scope)
		}
	}
}

// Database names are lower-case only (snapshots.ValidDatabaseName): a database pattern with an upper-case letter
// can match no database, so a deny of "Payroll" silently hides nothing.
func TestDatabasePatternThatMatchesNothing(t *testing.T) {
	s, err := ParseSettings(strings.NewReader(`{"default": {"scopes": {"databases": {"deny": ["Payroll"]}}}}`))
	if err == nil {
		t.Errorf("accepted; payroll permitted: %v (the deny pattern can never match a database name)", s.For("x").Scope.Databases.Permits("payroll"))
	}
}

// TestScopePatternsThatCanMatch: the patterns that can match a name are still accepted.
func TestScopePatternsThatCanMatch(t *testing.T) {
	for _, cfg := range []string{
		`{"default": {"scopes": {"databases": {"deny": ["secret-*", "*", "*-tmp", "a*b*c"]}}}}`,
		`{"default": {"scopes": {"resources": {"deny": ["Secrets*", "*.bak", "config"]}}}}`,
		`{"database_classes": {"tenants": ["tenant-*"]}}`,
	} {
		if _, err := ParseSettings(strings.NewReader(cfg)); err != nil {
			t.Errorf("%s: %v", cfg, err)
		}
	}
	for _, cfg := range []string{
		`{"default": {"scopes": {"resources": {"allow": ["-x*"]}}}}`,
		`{"database_classes": {"tenants": ["Tenant-*"]}}`,
	} {
		if _, err := ParseSettings(strings.NewReader(cfg)); err == nil || !strings.Contains(err.Error(), "can match no name") {
			t.Errorf("%s: %v, want it refused", cfg, err)
		}
	}
}

// TestEmptyAllowRefused: "allow": [] would let every name through (as leaving it out does), which reads as "none".
func TestEmptyAllowRefused(t *testing.T) {
	for _, cfg := range []string{
		`{"default": {"scopes": {"databases": {"allow": []}}}}`,
		`{"principals": {"bob": {"scopes": {"resources": {"allow": []}}}}}`,
	} {
		if _, err := ParseSettings(strings.NewReader(cfg)); err == nil || !strings.Contains(err.Error(), "empty allow list") {
			t.Errorf("%s: %v", cfg, err)
		}
	}
	if _, err := ParseSettings(strings.NewReader(`{"default": {"scopes": {"databases": {"deny": ["*"]}}}}`)); err != nil {
		t.Errorf("deny *: %v", err)
	}
}

// TestApproveOverridesAdditiveShortcut: under --writes on, a change to a protected branch that only adds commits
// without a plan — but not when the operator's policy says approve: then only a person's approval applies it (found
// in review: the shortcut ignored it).
func TestApproveOverridesAdditiveShortcut(t *testing.T) {
	ctx := context.Background()
	g := fixture(t, "")
	for _, c := range []struct {
		policy   Policy
		wantPlan bool
	}{{Policy{}, false}, {Policy{Protected: Approve}, true}} {
		a := actor(t, g, Principal{Name: "agent", Mode: WritesOn, Policy: c.policy})
		v, _ := a.Open(ctx, "shop")
		out, err := v.Write(ctx, Change{Op: OpInsert, Resource: "orders", Path: "/-", Value: json.RawMessage(`{"id":9}`)})
		if err != nil {
			t.Fatal(err)
		}
		if got := out.Plan != nil; got != c.wantPlan {
			t.Errorf("policy %+v: an additive insert on main made a plan: %v, want %v", c.policy, got, c.wantPlan)
		}
		if c.wantPlan && out.Plan != nil && !out.Plan.Plan.OutOfBand {
			t.Errorf("policy %+v: the plan is not out of band", c.policy)
		}
	}
}

// TestPlanWhoseBaseWasCollected: a plan whose branch was deleted and made again, its base then collected, no
// longer applies: PLAN_CHANGED, not NOT_FOUND naming a revision the agent never saw go.
func TestPlanWhoseBaseWasCollected(t *testing.T) {
	ctx := context.Background()
	g := fixture(t, "")
	db, err := g.dir.Open(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateBranch(ctx, "work", snapshots.Ref{}, "admin"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Put(ctx, "orders", []byte(`[{"id":7}]`), snapshots.WriteOptions{Branch: "work", Author: "admin"}); err != nil {
		t.Fatal(err)
	}
	a := actor(t, g, Principal{Name: "agent", Mode: WritesBranches, Policy: Policy{Write: Ask}})
	v, _ := a.Open(ctx, "shop")
	out, err := v.Write(ctx, Change{Op: OpInsert, Resource: "orders", Path: "/-", Value: json.RawMessage(`{"id":8}`), Branch: "work"})
	if err != nil || out.Plan == nil {
		t.Fatalf("a write on work under write: ask: %+v %v, want a plan", out, err)
	}
	if _, err := db.DeleteBranch(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateBranch(ctx, "work", snapshots.Ref{}, "admin"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Put(ctx, "customers", []byte(`{}`), snapshots.WriteOptions{Branch: "work", Author: "admin"}); err != nil {
		t.Fatal(err)
	}
	if rep, err := db.GC(ctx, &snapshots.GCOptions{Grace: time.Nanosecond}); err != nil || rep.RemovedRevisions == 0 {
		t.Fatalf("gc: %+v %v, want the old work's revision collected", rep, err)
	}
	_, p, err := a.FindPlan(ctx, out.Plan.Plan.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.ApplyPlan(ctx, p, "the user"); Code(err) != CodePlanChanged {
		t.Fatalf("applying a plan whose base was collected: %s %v, want PLAN_CHANGED", Code(err), err)
	}
}

// TestRejectedWithoutReason: a plan rejected without a reason says so, instead of pointing to a detail there is not.
func TestRejectedWithoutReason(t *testing.T) {
	ctx := context.Background()
	g := fixture(t, "")
	a := actor(t, g, Principal{Name: "agent", Mode: WritesBranches, Policy: Policy{Protected: Approve}})
	v, _ := a.Open(ctx, "shop")
	out, err := v.Write(ctx, Change{Op: OpPut, Resource: "orders", Value: json.RawMessage(`[]`)})
	if err != nil || out.Plan == nil {
		t.Fatalf("%+v %v", out, err)
	}
	r, _ := actor(t, g, Principal{Name: "rita", Review: true}).Open(ctx, "shop")
	if _, err := r.DecidePlan(ctx, out.Plan.Plan.ID, false, ""); err != nil {
		t.Fatal(err)
	}
	_, p, _ := a.FindPlan(ctx, out.Plan.Plan.ID)
	var e *Error
	if err := v.CheckApply(p); !errors.As(err, &e) || !strings.Contains(e.Hint, "no reason was given") {
		t.Fatalf("%v", err)
	}
}

package review

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/strata-db/strata/audit"
	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/snapshots"
)

// bigRevertPlan makes orders large twice over (so that a revert's preview is cut), then, if secretsToo, rotates the
// secrets, and has bob (an agent, unscoped) plan a revert to the first large orders: it changes every order (and
// secrets/key back to TOPSECRET). It returns the plan's id.
func bigRevertPlan(t *testing.T, e *env, secretsToo bool) string {
	t.Helper()
	ctx := context.Background()
	shop, err := e.dir.Open(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	big := func(c string) []byte {
		m := map[string]string{}
		for i := range 1000 {
			m[fmt.Sprintf("k%04d", i)] = strings.Repeat(c, 200)
		}
		b, _ := json.Marshal(m)
		return b
	}
	w := snapshots.WriteOptions{Author: "admin", Message: "m"}
	r3, err := shop.Put(ctx, "orders", big("a"), w)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := shop.Put(ctx, "orders", big("b"), w); err != nil {
		t.Fatal(err)
	}
	if secretsToo {
		if _, err := shop.Put(ctx, "secrets", []byte(`{"key":"ROTATED"}`), w); err != nil {
			t.Fatal(err)
		}
	}
	bob, _ := e.gate.As(e.settings.For("bob"))
	bctx, call := bob.Call(ctx, gate.CallInfo{Transport: audit.TransportHTTP, Tool: "revert", Database: "shop"})
	v, _ := bob.Open(bctx, "shop")
	out, err := v.Write(bctx, gate.Change{Op: gate.OpRevert, Target: &snapshots.Ref{Revision: r3.Revision}, Tool: "revert"})
	call.End(audit.OutcomeOK)
	if err != nil || out.Plan == nil {
		t.Fatalf("revert by bob: %+v %v, want a plan", out, err)
	}
	return out.Plan.Plan.ID
}

// A scoped reviewer (sam: resource secrets hidden) must not see or decide a plan that reaches secrets (found in
// review: planVisible checked only the plan's kept preview and its first 100 removes/overwrites, so a revert whose
// diff first fills the preview with changes to orders and then changes secrets passed, and sam approved it).
func TestScopedReviewerPlanBeyondPreview(t *testing.T) {
	e := newEnv(t, true, false)
	id := bigRevertPlan(t, e, true)
	if p := e.planState(id); p.PreviewComplete {
		t.Fatalf("setup: the plan's preview is complete (%d ops)", len(p.Preview))
	}
	sam := e.browser()
	sam.signIn(samToken)
	if p := sam.get("/ui/plans/shop/" + id); p.status != http.StatusNotFound {
		t.Errorf("sam sees a plan that changes the hidden resource secrets: %d", p.status)
	}
	p := sam.post("/ui/plans/shop/"+id+"/approve", url.Values{"csrf": {sam.csrf()}})
	if st := e.planState(id); st.State != snapshots.PlanPending {
		t.Fatalf("sam (secrets hidden) decided a plan that writes secrets: status %d, plan %s by %s", p.status, st.State, st.DecidedBy)
	}
}

// The same kind of plan, cut preview and all, that writes only what sam may see is shown to him: the plan names
// every resource it writes.
func TestScopedReviewerSeesLargePlanInScope(t *testing.T) {
	e := newEnv(t, true, false)
	id := bigRevertPlan(t, e, false)
	if p := e.planState(id); p.PreviewComplete || strings.Join(p.Resources, ",") != "orders" {
		t.Fatalf("setup: preview complete %v, resources %v", p.PreviewComplete, p.Resources)
	}
	sam := e.browser()
	sam.signIn(samToken)
	if p := sam.get("/ui/plans/shop/" + id); p.status != http.StatusOK {
		t.Errorf("sam cannot see a plan that writes only orders: %d", p.status)
	}
}

// A signed-in principal opening /ui/db/%FF gets an audit record with invalid UTF-8 in its database, after which
// the (untampered) log no longer verifies.
func TestInvalidUTF8PathKeepsAuditLogValid(t *testing.T) {
	e := newEnv(t, true, false)
	b := e.browser()
	b.signIn(bobToken)
	b.get("/ui/db/%FF")
	b.get("/ui/")
	if sum, err := audit.VerifyLog(e.log.Path(), nil); err != nil {
		t.Fatalf("VerifyLog after an agent opened /ui/db/%%FF: %+v, %v", sum, err)
	}
}

package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/snapshots"
)

// head is the head revision of a branch, read through the library.
func (h *harness) head(db, branch string) uint64 {
	h.t.Helper()
	d, err := h.dir.Open(context.Background(), db)
	if err != nil {
		h.t.Fatal(err)
	}
	st, err := d.Resolve(context.Background(), snapshots.Ref{Branch: branch})
	if err != nil {
		h.t.Fatal(err)
	}
	return st.Rev.Number
}

// seed puts a resource on main through the library, as an operator would.
func (h *harness) seed(db, res, value string) uint64 {
	h.t.Helper()
	d, err := h.dir.Open(context.Background(), db)
	if err != nil {
		h.t.Fatal(err)
	}
	r, err := d.Put(context.Background(), res, []byte(value), snapshots.WriteOptions{Author: "operator"})
	if err != nil {
		h.t.Fatal(err)
	}
	return r.Revision
}

// planned checks that a call answered with a plan and wrote nothing, and returns the plan's id.
func (h *harness) planned(name, args string) string {
	h.t.Helper()
	before := h.head("shop", "main")
	r := h.ok(name, args)
	id := r.str("plan_id")
	if !strings.HasPrefix(id, "plan-") || r.m["confirmation_required"] != true || r.str("expires_at") == "" {
		h.t.Fatalf("%s %s: want a plan, got:\n%s", name, args, r.text)
	}
	if !strings.Contains(r.summary, "apply_plan") || !strings.Contains(r.summary, "strata approve") {
		h.t.Errorf("%s: the plan's summary does not say what to do: %s", name, r.summary)
	}
	if after := h.head("shop", "main"); after != before {
		h.t.Errorf("%s: planned, yet main moved from %d to %d", name, before, after)
	}
	return id
}

// TestBranchesMode: agents write on their own branches; everything that changes main becomes a plan.
func TestBranchesMode(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesBranches, Principal: "agent-1", Protected: []string{"main", "prod"}})
	h.ok("create_database", `{"database":"shop"}`)
	h.seed("shop", "catalog", `{"a":0,"b":[]}`)
	h.planned("put", `{"database":"shop","resource":"catalog","value":{"a":1}}`)
	h.planned("put", `{"database":"shop","resource":"catalog","value":{"a":1},"idempotency_key":"x"}`)
	h.planned("insert", `{"database":"shop","resource":"catalog","path":"","value":1,"branch":"main"}`)

	h.ok("create_branch", `{"database":"shop","name":"work"}`)
	h.ok("put", `{"database":"shop","resource":"catalog","value":{"a":1,"b":[1,2]},"branch":"work"}`)
	h.ok("update", `{"database":"shop","resource":"catalog","path":"/a","value":2,"branch":"work"}`)
	h.ok("delete", `{"database":"shop","resource":"catalog","path":"/b/0","branch":"work"}`)
	h.ok("diff", `{"database":"shop","to_branch":"work"}`)

	h.planned("promote", `{"database":"shop","branch":"work"}`)
	h.planned("revert", `{"database":"shop","revision":1}`)
	if r := h.ok("revert", `{"database":"shop","revision":2}`); r.num("revision") != 2 { // main is at 2: nothing to plan
		t.Errorf("revert to the head: %s", r.data)
	}
	h.planned("restore", `{"database":"shop","resource":"catalog","from_branch":"work"}`)
	h.planned("update", `{"database":"shop","resource":"catalog","value":1}`)
	h.planned("delete", `{"database":"shop","resource":"catalog"}`)
	h.planned("patch", `{"database":"shop","resource":"catalog","operations":[{"op":"add","path":"/z","value":1}]}`)
	h.fail("delete_branch", `{"database":"shop","name":"main"}`, codeInvalidArgument)
	h.ok("create_branch", `{"database":"shop","name":"prod","from_branch":"work"}`) // a new branch changes no data
	h.planned("update", `{"database":"shop","resource":"catalog","path":"/a","value":3,"branch":"prod"}`)
	h.ok("create_branch", `{"database":"shop","name":"main2","from_branch":"work"}`)
	if r := h.ok("list_branches", `{"database":"shop"}`); !strings.Contains(string(r.data), `"name":"main","head":2,"base":1,"creator":"agent-1"`) {
		t.Fatalf("list_branches: %s", r.data)
	}
}

// TestOnMode: additive changes to main commit; changes that remove or overwrite data become plans.
func TestOnMode(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesOn, Principal: "agent-1"})
	h.ok("create_database", `{"database":"shop"}`)
	first := h.ok("put", `{"database":"shop","resource":"catalog","value":{"items":[1],"meta":{}},"idempotency_key":"create-catalog"}`)
	// The retry of that put returns its result: the resource exists now, but this is not an overwrite.
	if again := h.ok("put", `{"database":"shop","resource":"catalog","value":{"items":[1],"meta":{}},"idempotency_key":"create-catalog"}`); again.num("revision") != first.num("revision") || again.m["replayed"] != true {
		t.Fatalf("retry: %s", again.data)
	}
	h.planned("put", `{"database":"shop","resource":"catalog","value":{}}`)
	h.planned("put", `{"database":"shop","resource":"catalog","value":{},"idempotency_key":"other"}`)

	h.ok("insert", `{"database":"shop","resource":"catalog","path":"/items/-","value":2}`)
	h.ok("insert", `{"database":"shop","resource":"catalog","path":"/items/0","value":0}`)
	h.ok("insert", `{"database":"shop","resource":"catalog","path":"/meta/owner","value":"ops"}`)
	h.planned("insert", `{"database":"shop","resource":"catalog","path":"/meta/owner","value":"me"}`)
	h.planned("insert", `{"database":"shop","resource":"catalog","path":"","value":{}}`)
	h.ok("insert", `{"database":"shop","resource":"fresh","path":"","value":{"new":true}}`)
	h.ok("patch", `{"database":"shop","resource":"catalog","operations":[{"op":"test","path":"/items/0","value":0},{"op":"add","path":"/meta/tags","value":[]},{"op":"copy","from":"/items","path":"/backup"}]}`)
	h.planned("patch", `{"database":"shop","resource":"catalog","operations":[{"op":"add","path":"/x","value":1},{"op":"replace","path":"/items/0","value":9}]}`)
	h.planned("patch", `{"database":"shop","resource":"catalog","operations":[{"op":"add","path":"/meta/owner","value":"me"}]}`)
	h.planned("update", `{"database":"shop","resource":"catalog","path":"/items/0","value":5}`)
	h.planned("delete", `{"database":"shop","resource":"catalog","path":"/items/0"}`)
	h.planned("revert", `{"database":"shop","revision":2}`)
	h.fail("delete_branch", `{"database":"shop","name":"main"}`, codeInvalidArgument)

	// A stale expected_head is still a CONFLICT, not a refusal.
	h.fail("insert", `{"database":"shop","resource":"catalog","path":"/items/-","value":3,"expected_head":2}`, codeConflict)

	// Branches and snapshots someone else made are theirs to delete.
	ctx := context.Background()
	db, err := h.dir.Open(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateSnapshot(ctx, "release", snapshots.Ref{}, "", "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateBranch(ctx, "alices", snapshots.Ref{}, "alice"); err != nil {
		t.Fatal(err)
	}
	h.planned("delete_snapshot", `{"database":"shop","name":"release"}`)
	h.planned("delete_branch", `{"database":"shop","name":"alices"}`)
	h.ok("create_snapshot", `{"database":"shop","name":"mine"}`)
	h.ok("delete_snapshot", `{"database":"shop","name":"mine"}`)

	// Revisions record the principal and the tool.
	r := h.ok("history", `{"database":"shop","limit":1}`)
	if !strings.Contains(string(r.data), `"author":"agent-1","tool":"patch"`) {
		t.Fatalf("history: %s", r.data)
	}
}

// plan reads a plan through the library.
func (h *harness) plan(id string) snapshots.Plan {
	h.t.Helper()
	d, err := h.dir.Open(context.Background(), "shop")
	if err != nil {
		h.t.Fatal(err)
	}
	p, err := d.GetPlan(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

// decide approves or rejects a plan as a person would with strata approve / reject.
func (h *harness) decide(id string, approve bool, reason string) {
	h.t.Helper()
	d, err := h.dir.Open(context.Background(), "shop")
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := d.DecidePlan(context.Background(), id, approve, "operator", reason); err != nil {
		h.t.Fatal(err)
	}
}

// TestPlanApproveApply (docs/security.md T11): a plan applies once a person approved it, exactly as previewed, once;
// the consumed marker lands with its revision.
func TestPlanApproveApply(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesBranches, Principal: "agent-1"})
	h.ok("create_database", `{"database":"shop"}`)
	base := h.seed("shop", "catalog", `{"price":10,"old":true,"items":[1,2]}`)
	r := h.ok("patch", `{"database":"shop","resource":"catalog","operations":[{"op":"replace","path":"/price","value":12},{"op":"remove","path":"/old"}],"message":"reprice"}`)
	id := r.str("plan_id")
	if r.num("base") != base || r.raw("removes") != `["/catalog/old"]` || r.raw("overwrites") != `["/catalog/price"]` {
		t.Fatalf("plan: %s", r.data)
	}
	if ops := r.m["preview"].(map[string]any)["operations"].([]any); len(ops) != 2 {
		t.Fatalf("preview: %s", r.data)
	}
	// list_plans shows it waiting.
	if l := h.ok("list_plans", `{"database":"shop"}`); !strings.Contains(string(l.data), `"plan_id":"`+id+`"`) || !strings.Contains(string(l.data), `"state":"pending"`) {
		t.Fatalf("list_plans: %s", l.data)
	}
	// Without a confirmation (this client cannot ask its user), nothing is written and the plan waits.
	f := h.fail("apply_plan", `{"plan_id":"`+id+`"}`, codeConfirmationRequired)
	if !strings.Contains(f.text, "strata approve shop "+id) || h.head("shop", "main") != base {
		t.Fatalf("unconfirmed apply: %s", f.text)
	}
	if p := h.plan(id); p.State != snapshots.PlanPending {
		t.Fatalf("an unconfirmed apply changed the plan: %+v", p)
	}
	h.decide(id, true, "")
	a := h.ok("apply_plan", `{"plan_id":"`+id+`"}`)
	rev := a.num("revision")
	if rev != base+1 || a.str("plan_id") != id || a.str("branch") != "main" || a.str("database") != "shop" {
		t.Fatalf("apply: %s", a.data)
	}
	if got := h.ok("read", `{"database":"shop","resource":"catalog"}`).raw("value"); got != `{"items":[1,2],"price":12}` {
		t.Fatalf("after apply: %s", got)
	}
	if p := h.plan(id); p.State != snapshots.PlanApplied || p.Revision != rev {
		t.Fatalf("plan after apply: %+v", p)
	}
	hist := h.ok("history", `{"database":"shop","limit":1}`)
	if !strings.Contains(string(hist.data), `"author":"agent-1","tool":"patch","message":"reprice"`) {
		t.Fatalf("history: %s", hist.data)
	}
	// Replayed: once only.
	h.fail("apply_plan", `{"plan_id":"`+id+`"}`, codeConflict)
	if h.head("shop", "main") != rev {
		t.Fatal("a replayed plan committed again")
	}
}

// TestPlanRefusals (T11): forged, altered, truncated and other callers' ids are not found; a rejected plan says
// why; a stale base is PLAN_CHANGED and does not burn the plan; an expired plan is PLAN_EXPIRED.
func TestPlanRefusals(t *testing.T) {
	path := t.TempDir()
	h := newHarnessAt(t, path, Config{Writes: gate.WritesBranches, Principal: "agent-1", PlanTTL: 40 * time.Second})
	h.ok("create_database", `{"database":"shop"}`)
	h.seed("shop", "catalog", `{"price":10}`)
	id := h.planned("update", `{"database":"shop","resource":"catalog","path":"/price","value":11}`)
	missing := h.fail("apply_plan", `{"plan_id":"plan-doesnotexist"}`, codeNotFound)
	for _, forged := range []string{id[:len(id)-1], id + "a", strings.ToUpper(id), id[:len(id)-1] + "x", "", "plan-", id + "\x00", strings.Repeat("p", 10000)} {
		arg, _ := json.Marshal(map[string]string{"plan_id": forged})
		r := h.fail("apply_plan", string(arg), codeNotFound)
		if r.str("hint") != missing.str("hint") {
			t.Errorf("%q: %s", forged, r.text)
		}
	}
	// Another principal on the same data cannot see or apply it, even approved.
	h.decide(id, true, "")
	other := newHarnessAt(t, path, Config{Writes: gate.WritesBranches, Principal: "agent-2"})
	other.fail("apply_plan", `{"plan_id":"`+id+`"}`, codeNotFound)
	if l := other.ok("list_plans", `{"database":"shop"}`); strings.Contains(string(l.data), id) {
		t.Fatalf("another principal lists the plan: %s", l.data)
	}
	// The base moved: PLAN_CHANGED, nothing written, and the plan stays approved.
	moved := h.seed("shop", "catalog", `{"price":20}`)
	h.fail("apply_plan", `{"plan_id":"`+id+`"}`, codePlanChanged)
	if h.head("shop", "main") != moved || h.plan(id).State != snapshots.PlanApproved {
		t.Fatalf("a stale apply wrote or burned the plan: %+v", h.plan(id))
	}
	// Rejected: the reason reaches the agent.
	id2 := h.planned("update", `{"database":"shop","resource":"catalog","path":"/price","value":0}`)
	h.decide(id2, false, "prices never go to zero")
	r := h.fail("apply_plan", `{"plan_id":"`+id2+`"}`, codeDenied)
	if r.str("detail") != "prices never go to zero" {
		t.Fatalf("rejected: %s", r.text)
	}
	// Expired: the test clock moves a second per commit.
	id3 := h.planned("update", `{"database":"shop","resource":"catalog","path":"/price","value":1}`)
	h.decide(id3, true, "")
	for i := 0; i < 45; i++ {
		moved = h.seed("shop", "other", fmt.Sprint(i))
	}
	h.fail("apply_plan", `{"plan_id":"`+id3+`"}`, codePlanExpired)
	if h.head("shop", "main") != moved {
		t.Fatal("an expired plan wrote")
	}
}

// TestPlanConcurrentApply (T11): of two applies of one approved plan at once, exactly one commits.
func TestPlanConcurrentApply(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesBranches, Principal: "agent-1"})
	h.ok("create_database", `{"database":"shop"}`)
	base := h.seed("shop", "catalog", `{"n":1}`)
	for round := 0; round < 10; round++ {
		id := h.planned("update", fmt.Sprintf(`{"database":"shop","resource":"catalog","path":"/n","value":%d}`, round+2))
		h.decide(id, true, "")
		var wg sync.WaitGroup
		results := make([]*mcpsdk.CallToolResult, 2)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := h.cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "apply_plan", Arguments: json.RawMessage(`{"plan_id":"` + id + `"}`)})
				if err != nil {
					t.Error(err)
					return
				}
				results[i] = res
			}()
		}
		wg.Wait()
		wins := 0
		for _, res := range results {
			if res != nil && !res.IsError {
				wins++
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d applies committed, want 1", round, wins)
		}
		if got := h.head("shop", "main"); got != base+uint64(round)+1 {
			t.Fatalf("round %d: head %d, want %d", round, got, base+uint64(round)+1)
		}
	}
}

// TestPlanElicitation: a client that can ask its user gets the question, with what the plan removes; the user's
// yes applies the plan, the user's no rejects it. The agent has no way to answer for the user.
func TestPlanElicitation(t *testing.T) {
	var asked []string
	answer := "accept"
	copts := &mcpsdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcpsdk.ElicitRequest) (*mcpsdk.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		return &mcpsdk.ElicitResult{Action: answer, Content: map[string]any{"confirm": answer == "accept"}}, nil
	}}
	h := newHarnessWith(t, t.TempDir(), Config{Writes: gate.WritesBranches, Principal: "agent-1"}, copts)
	h.ok("create_database", `{"database":"shop"}`)
	base := h.seed("shop", "catalog", `{"price":10,"legacy":{"x":1}}`)
	id := h.planned("delete", `{"database":"shop","resource":"catalog","path":"/legacy"}`)
	a := h.ok("apply_plan", `{"plan_id":"`+id+`"}`)
	if a.num("revision") != base+1 || len(asked) != 1 || !strings.Contains(asked[0], "removes: /catalog/legacy") || !strings.Contains(asked[0], `"agent-1"`) {
		t.Fatalf("apply with the user's yes: %s; asked %q", a.data, asked)
	}
	if p := h.plan(id); p.State != snapshots.PlanApplied || !strings.Contains(p.DecidedBy, "strata-test") {
		t.Fatalf("plan: %+v", p)
	}
	answer = "decline"
	id2 := h.planned("delete", `{"database":"shop","resource":"catalog"}`)
	r := h.fail("apply_plan", `{"plan_id":"`+id2+`"}`, codeConfirmationRequired)
	if !strings.Contains(r.text, "declined") || h.head("shop", "main") != base+1 || h.plan(id2).State != snapshots.PlanRejected {
		t.Fatalf("the user's no: %s", r.text)
	}
}

// TestPlanForgedConfirmation: answers sent with a request state that is not this server's, for this plan, are
// refused (a client cannot skip the question by inventing its answer).
func TestPlanForgedConfirmation(t *testing.T) {
	h := newHarnessWith(t, t.TempDir(), Config{Writes: gate.WritesBranches, Principal: "agent-1"},
		&mcpsdk.ClientOptions{MultiRoundTrip: &mcpsdk.MultiRoundTripOptions{Disabled: true}})
	h.ok("create_database", `{"database":"shop"}`)
	base := h.seed("shop", "catalog", `{"price":10}`)
	id := h.planned("update", `{"database":"shop","resource":"catalog","path":"/price","value":1}`)
	yes := mcpsdk.InputResponseMap{"confirm": &mcpsdk.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}}
	for _, state := range []string{"", "00", strings.Repeat("a", 40)} {
		res, err := h.cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "apply_plan",
			Arguments: json.RawMessage(`{"plan_id":"` + id + `"}`), InputResponses: yes, RequestState: state})
		if err != nil {
			t.Fatal(err)
		}
		if r := h.check("apply_plan", res); !res.IsError || r.str("code") != codeInvalidArgument {
			t.Fatalf("state %q: %s", state, r.text)
		}
	}
	if h.head("shop", "main") != base || h.plan(id).State != snapshots.PlanPending {
		t.Fatal("a forged confirmation wrote")
	}
}

// TestPlanDeletes: deleting a branch or snapshot someone else created is a plan; applied once approved, it deletes
// the name only if it still points where it did.
func TestPlanDeletes(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesOn, Principal: "agent-1"})
	h.ok("create_database", `{"database":"shop"}`)
	ctx := context.Background()
	db, err := h.dir.Open(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateBranch(ctx, "alices", snapshots.Ref{}, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateSnapshot(ctx, "release", snapshots.Ref{}, "", "alice"); err != nil {
		t.Fatal(err)
	}
	r := h.ok("delete_branch", `{"database":"shop","name":"alices"}`)
	id := r.str("plan_id")
	if id == "" || !strings.Contains(r.summary, "delete branch alices") {
		t.Fatalf("delete_branch of another's branch: %s", r.text)
	}
	snap := h.ok("delete_snapshot", `{"database":"shop","name":"release"}`).str("plan_id")
	h.decide(id, true, "")
	h.decide(snap, true, "")
	// The branch moved after the plan: PLAN_CHANGED, and it stays.
	if _, err := db.Put(ctx, "x", []byte(`1`), snapshots.WriteOptions{Branch: "alices"}); err != nil {
		t.Fatal(err)
	}
	h.fail("apply_plan", `{"plan_id":"`+id+`"}`, codePlanChanged)
	if r := h.ok("list_branches", `{"database":"shop"}`); !strings.Contains(string(r.data), `"alices"`) {
		t.Fatal("a stale delete plan deleted the branch")
	}
	a := h.ok("apply_plan", `{"plan_id":"`+snap+`"}`)
	if a.str("snapshot") != "release" || a.str("plan_id") != snap {
		t.Fatalf("apply of the snapshot delete: %s", a.data)
	}
	if r := h.ok("list_snapshots", `{"database":"shop"}`); strings.Contains(string(r.data), `"release"`) {
		t.Fatal("the snapshot is still there")
	}
	// One's own branch is deleted at once.
	h.ok("create_branch", `{"database":"shop","name":"mine"}`)
	if r := h.ok("delete_branch", `{"database":"shop","name":"mine"}`); r.str("plan_id") != "" {
		t.Fatalf("deleting one's own branch made a plan: %s", r.data)
	}
}

// TestPlanUnderNarrowerPolicy: a plan made under one policy does not apply once the operator denies its class or
// hides its resource.
func TestPlanUnderNarrowerPolicy(t *testing.T) {
	path := t.TempDir()
	h := newHarnessAt(t, path, Config{Writes: gate.WritesBranches, Principal: "agent-1"})
	h.ok("create_database", `{"database":"shop"}`)
	base := h.seed("shop", "catalog", `{"price":10}`)
	id := h.planned("update", `{"database":"shop","resource":"catalog","path":"/price","value":11}`)
	id2 := h.planned("update", `{"database":"shop","resource":"catalog","path":"/price","value":12}`)
	h.decide(id, true, "")
	h.decide(id2, true, "")
	denied := newHarnessAt(t, path, Config{Writes: gate.WritesBranches, Principal: "agent-1", Policy: gate.Policy{Protected: gate.Deny, Write: gate.Ask}})
	denied.fail("apply_plan", `{"plan_id":"`+id+`"}`, codeDenied)
	hidden := newHarnessAt(t, path, Config{Writes: gate.WritesBranches, Principal: "agent-1", Scope: gate.Scope{Resources: gate.Names{Deny: []string{"catalog"}}}})
	hidden.fail("apply_plan", `{"plan_id":"`+id2+`"}`, codeNotFound)
	if h.head("shop", "main") != base {
		t.Fatal("a plan applied under a policy that no longer allows it")
	}
}

// TestPlanKeyReused: an idempotency key the caller used again after making a plan does not answer for the plan.
func TestPlanKeyReused(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesBranches, Principal: "agent-1"})
	h.ok("create_database", `{"database":"shop"}`)
	base := h.seed("shop", "catalog", `{"price":10}`)
	id := h.planned("update", `{"database":"shop","resource":"catalog","path":"/price","value":11,"idempotency_key":"k1"}`)
	h.ok("create_branch", `{"database":"shop","name":"b"}`)
	h.ok("put", `{"database":"shop","resource":"other","value":1,"branch":"b","idempotency_key":"k1"}`)
	h.decide(id, true, "")
	a := h.ok("apply_plan", `{"plan_id":"`+id+`"}`)
	if a.num("revision") <= base || a.str("branch") != "main" || h.plan(id).State != snapshots.PlanApplied {
		t.Fatalf("apply after the key was reused: %s", a.data)
	}
	if got := h.ok("read", `{"database":"shop","resource":"catalog","path":"/price"}`).raw("value"); got != "11" {
		t.Fatalf("main's price: %s", got)
	}
}

// TestPlanOutOfBand: under the decision approve, a plan is applied only once a person approved it out of band:
// a client that can ask its user, and would answer yes itself, is not asked, and its answer would not count.
func TestPlanOutOfBand(t *testing.T) {
	asked := 0
	copts := &mcpsdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcpsdk.ElicitRequest) (*mcpsdk.ElicitResult, error) {
		asked++
		return &mcpsdk.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
	}}
	h := newHarnessWith(t, t.TempDir(), Config{Writes: gate.WritesBranches, Principal: "agent-1",
		Policy: gate.Policy{Protected: gate.Approve}}, copts)
	h.ok("create_database", `{"database":"shop"}`)
	base := h.seed("shop", "catalog", `{"price":10,"legacy":{"x":1}}`)
	id := h.planned("delete", `{"database":"shop","resource":"catalog","path":"/legacy"}`)
	r := h.fail("apply_plan", `{"plan_id":"`+id+`"}`, codeConfirmationRequired)
	if asked != 0 || !strings.Contains(r.text, "out of band") || h.head("shop", "main") != base {
		t.Fatalf("apply before a person approved: asked %d times: %s", asked, r.text)
	}
	h.decide(id, true, "")
	a := h.ok("apply_plan", `{"plan_id":"`+id+`"}`)
	if a.num("revision") != base+1 || asked != 0 {
		t.Fatalf("apply after approval: %s (asked %d)", a.data, asked)
	}
	if s := h.ok("status", `{}`); !strings.Contains(s.raw("policy"), `"protected":"approve"`) {
		t.Errorf("status does not show the decision: %s", s.raw("policy"))
	}
}

// TestIdempotencyKeyPerBranch: a key used again on another branch writes there; it does not answer with the first
// branch's revision (which left the second branch unwritten while the agent was told its write was in).
func TestIdempotencyKeyPerBranch(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesOn, Principal: "agent-1"})
	h.ok("create_database", `{"database":"shop"}`)
	h.ok("create_branch", `{"database":"shop","name":"b"}`)
	first := h.ok("put", `{"database":"shop","resource":"notes","value":[1],"idempotency_key":"k1"}`)
	other := h.ok("put", `{"database":"shop","resource":"notes","value":[2],"branch":"b","idempotency_key":"k1"}`)
	if other.m["replayed"] == true || other.str("branch") != "b" || other.num("revision") == first.num("revision") {
		t.Fatalf("the key used again on branch b: %s after %s", other.data, first.data)
	}
	if got := h.ok("read", `{"database":"shop","resource":"notes","branch":"b"}`).raw("value"); got != "[2]" {
		t.Fatalf("branch b's notes: %s", got)
	}
	// On its own branch the key still replays.
	if again := h.ok("put", `{"database":"shop","resource":"notes","value":[2],"branch":"b","idempotency_key":"k1"}`); again.m["replayed"] != true || again.num("revision") != other.num("revision") {
		t.Fatalf("retry on b: %s", again.data)
	}
}

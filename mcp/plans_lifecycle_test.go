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

// TestPlanPolicyTightenedToApprove: a plan made while the policy said ask, applied after the operator changed
// protected to approve (only a person out of band), must not be confirmed by the client's own answer.
func TestPlanPolicyTightenedToApprove(t *testing.T) {
	path := t.TempDir()
	h := newHarnessAt(t, path, Config{Writes: gate.WritesBranches, Principal: "agent-1"})
	h.ok("create_database", `{"database":"shop"}`)
	base := h.seed("shop", "catalog", `{"price":10}`)
	id := h.planned("update", `{"database":"shop","resource":"catalog","path":"/price","value":11}`)

	asked := 0
	copts := &mcpsdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcpsdk.ElicitRequest) (*mcpsdk.ElicitResult, error) {
		asked++
		return &mcpsdk.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
	}}
	strict := newHarnessWith(t, path, Config{Writes: gate.WritesBranches, Principal: "agent-1",
		Policy: gate.Policy{Protected: gate.Approve}}, copts)
	res, err := strict.cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "apply_plan", Arguments: json.RawMessage(`{"plan_id":"` + id + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	r := strict.check("apply_plan", res)
	if !res.IsError || r.str("code") != codeConfirmationRequired {
		t.Errorf("apply under approve, confirmed only by the client (asked %d): %s", asked, r.text)
	}
	if got := strict.head("shop", "main"); got != base {
		t.Errorf("main moved from %d to %d on the client's own answer, though the policy now asks for a person", base, got)
	}
	if st := strict.plan(id).State; st != snapshots.PlanPending {
		t.Errorf("plan state %s, want pending", st)
	}
}

// TestListPlansWaitingBeyondLimit: list_plans lists "the caller's plans waiting, and those settled in the
// last day"; an agent with more settled plans than the limit must still see the one waiting (there is no cursor to
// reach it otherwise), and the summary must not say none is waiting.
func TestListPlansWaitingBeyondLimit(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesBranches, Principal: "agent-1"})
	h.ok("create_database", `{"database":"shop"}`)
	h.seed("shop", "catalog", `{"price":10}`)
	for i := 0; i < 20; i++ {
		id := h.planned("update", fmt.Sprintf(`{"database":"shop","resource":"catalog","path":"/price","value":%d}`, 100+i))
		h.decide(id, false, "no")
	}
	waitingID := h.planned("update", `{"database":"shop","resource":"catalog","path":"/price","value":11}`)
	l := h.ok("list_plans", `{"database":"shop"}`)
	if !strings.Contains(string(l.data), waitingID) {
		t.Errorf("list_plans does not show the one plan waiting (summary %q)", l.summary)
	}
	if strings.Contains(l.summary, " 0 waiting") {
		t.Errorf("list_plans says none is waiting: %q", l.summary)
	}
}

// TestListPlansMoreHint: list_plans has no cursor argument, so its summary must not tell the agent to pass
// one (a call that does is refused).
func TestListPlansMoreHint(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesBranches, Principal: "agent-1"})
	h.ok("create_database", `{"database":"shop"}`)
	h.seed("shop", "catalog", `{"price":10}`)
	for i := 0; i < 3; i++ {
		h.planned("update", fmt.Sprintf(`{"database":"shop","resource":"catalog","path":"/price","value":%d}`, 100+i))
	}
	l := h.ok("list_plans", `{"database":"shop","limit":2}`)
	if l.m["more"] != true {
		t.Fatalf("want more: %s", l.text)
	}
	if strings.Contains(l.summary, "cursor") {
		h.fail("list_plans", `{"database":"shop","limit":2,"cursor":"x"}`, codeInvalidArgument)
		t.Errorf("list_plans's summary tells the agent to pass a cursor it does not take: %q", l.summary)
	}
}

// TestListPlansOnlyLastDay: list_plans shows "those settled in the last day" (docs/design.md §3); a plan
// settled two days ago is not one of them, whether or not a plan was made since.
func TestListPlansOnlyLastDay(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	clk := func() time.Time { mu.Lock(); defer mu.Unlock(); now = now.Add(time.Millisecond); return now }
	dir, err := snapshots.OpenDir(t.TempDir(), &snapshots.DirOptions{DB: snapshots.Options{Now: clk}})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, dir: dir}
	h.connect(Config{Writes: gate.WritesBranches, Principal: "agent-1"})
	h.ok("create_database", `{"database":"shop"}`)
	h.seed("shop", "catalog", `{"price":10}`)
	id := h.planned("update", `{"database":"shop","resource":"catalog","path":"/price","value":11}`)
	h.decide(id, false, "no")
	mu.Lock()
	now = now.Add(48 * time.Hour)
	mu.Unlock()
	if l := h.ok("list_plans", `{"database":"shop"}`); strings.Contains(string(l.data), id) {
		t.Errorf("list_plans shows a plan rejected two days ago: %s", l.data)
	}
}

// TestConfirmCountsPastKeptPaths: a plan keeps the first 100 paths it removes; the question the user is asked
// must not say it removes 90 more than the 10 it names when it removes 140 more.
func TestConfirmCountsPastKeptPaths(t *testing.T) {
	if asked := confirmationOfRemoving(t, 150); !strings.Contains(asked, "150 removed") || !strings.Contains(asked, "and 140 more") {
		t.Errorf("the question miscounts what the plan removes: %s", asked)
	}
}

// confirmationOfRemoving is the question a client's user is asked about a plan that removes n members.
func confirmationOfRemoving(t *testing.T, n int) string {
	t.Helper()
	var asked []string
	copts := &mcpsdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcpsdk.ElicitRequest) (*mcpsdk.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		return &mcpsdk.ElicitResult{Action: "decline"}, nil
	}}
	h := newHarnessWith(t, t.TempDir(), Config{Writes: gate.WritesBranches, Principal: "agent-1"}, copts)
	h.ok("create_database", `{"database":"shop"}`)
	m := map[string]int{}
	for i := 0; i < n; i++ {
		m[fmt.Sprintf("k%05d", i)] = i
	}
	b, _ := json.Marshal(map[string]any{"items": m})
	h.seed("shop", "catalog", string(b))
	id := h.planned("put", `{"database":"shop","resource":"catalog","value":{"items":{}}}`)
	h.fail("apply_plan", `{"plan_id":"`+id+`"}`, codeConfirmationRequired)
	if len(asked) != 1 {
		t.Fatalf("asked %d times", len(asked))
	}
	return asked[0]
}

// TestPlanBaseDescription: the output schema must not say a plan applies only while its base is the head; it
// is rebased onto a head that moved, while nothing it changes has (design.md §4).
func TestPlanBaseDescription(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesBranches, Principal: "agent-1"})
	for _, tool := range h.listTools() {
		b, _ := json.Marshal(tool.OutputSchema)
		if strings.Contains(string(b), "it applies only while this is still the head") {
			t.Errorf("%s: the output schema says a plan applies only while its base is the head", tool.Name)
			return
		}
	}
}

// TestConfirmCountsAtLeast: a plan's counts stop at the preview's bound (gate.PreviewOps); the question the user
// is asked says they are lower bounds, as the review page and strata plans do.
func TestConfirmCountsAtLeast(t *testing.T) {
	if asked := confirmationOfRemoving(t, gate.PreviewOps+2000); !strings.Contains(asked, "(at least") || !strings.Contains(asked, "and at least") {
		t.Errorf("the question states capped counts as exact: %s", asked)
	}
}

package mcp

import (
	"context"
	"crypto/hmac"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
)

// Plans and confirmation (docs/design.md §4) are the gate's: a call whose class the policy answers with `ask` comes
// back from the gate as a plan, which this file shows (planOut); apply_plan asks the client's user to confirm a
// pending plan (elicitation: asked by this server, never by the agent) and has the gate apply it.

// planOut is what a call that needs confirmation answers instead of committing.
type planOut struct {
	Database             string      `json:"database"`
	PlanID               string      `json:"plan_id"`
	Tool                 string      `json:"tool"`
	Branch               string      `json:"branch,omitempty"`
	Base                 uint64      `json:"base"`
	Preview              planPreview `json:"preview"`
	Removes              []string    `json:"removes"`
	Overwrites           []string    `json:"overwrites"`
	ConfirmationRequired bool        `json:"confirmation_required"`
	ExpiresAt            time.Time   `json:"expires_at"`
}

type planPreview struct {
	Summary        string          `json:"summary"`
	Counts         revision.Counts `json:"counts"`
	CountsComplete bool            `json:"counts_complete"`
	Operations     []diffOp        `json:"operations"`
	More           bool            `json:"more"`
	Truncated      bool            `json:"truncated"`
}

// planProps are the fields of a plan answer, added to the output schema of every tool that can return one.
func planProps() []prop {
	return []prop{
		{"plan_id", strS("when the call needs a person's confirmation: the plan's id, for apply_plan; nothing was written")},
		{"tool", strS("the tool the plan will run")},
		{"base", intS("the head revision the plan was computed on (for a plan: it applies while nothing it changes has changed on its branch since)")},
		{"preview", closedObject("what the plan would change, as a diff from its base", []string{"summary", "counts", "counts_complete", "operations", "more", "truncated"},
			prop{"summary", strS("what the plan does, in a few words")},
			prop{"counts", countsSchema()},
			prop{"counts_complete", boolS("false when the change is larger than the operations computed: the counts are then lower bounds")},
			prop{"operations", arrS("RFC 6902 operations from the base to the planned state (the first ones, within the output cap)", diffOpSchema())},
			prop{"more", boolS("true when operations were left out")},
			prop{"truncated", boolS("true when a value too big to show was replaced by an $elided marker")})},
		{"removes", strArrS("JSON Pointers (from the database root) of values the plan removes", "a JSON Pointer")},
		{"overwrites", strArrS("JSON Pointers (from the database root) of values the plan replaces", "a JSON Pointer")},
		{"confirmation_required", boolS("true: a person must confirm the plan before apply_plan commits it")},
		{"expires_at", strS("when the plan expires (RFC 3339)")},
	}
}

var planRequired = []string{"database", "plan_id", "tool", "base", "preview", "removes", "overwrites", "confirmation_required", "expires_at"}

// orPlan extends a write tool's output schema with the plan it answers instead when the call needs confirmation:
// the plan's fields join the properties, and only the fields both answers have stay required.
func orPlan(s schema) schema {
	ps := s["properties"].(schema)
	for _, p := range planProps() {
		if _, ok := ps[p.name]; !ok {
			ps[p.name] = p.s
		}
	}
	req, _ := s["required"].([]string)
	if both := intersect(req, planRequired); len(both) > 0 {
		s["required"] = both
	} else {
		delete(s, "required")
	}
	return s
}

func (p *planOut) summary() string {
	return fmt.Sprintf("nothing was written: %s needs a person's confirmation. Call apply_plan with plan_id; your client asks its user, or a person runs strata approve %s %s.",
		p.Preview.Summary, p.Database, p.PlanID)
}

// denied refuses a call the front end itself does not run. It says that the operator disabled it, never how.
func denied(what string) error {
	return newError(codeDenied, "%s is disabled by the operator; nothing was done", what)
}

// planOut shows a plan the gate made.
func (c *call) planOut(v *gate.View, pm *gate.PlanMade) *planOut {
	p := pm.Plan
	out := &planOut{Database: v.Name(), PlanID: p.ID, Tool: p.Op, Branch: p.Branch, Base: v.VisibleRevision(context.Background(), p.Base),
		Removes: p.Removes, Overwrites: p.Overwrites, ConfirmationRequired: true, ExpiresAt: p.Expires,
		Preview: planPreview{Summary: p.Summary, CountsComplete: true, Operations: []diffOp{}}}
	if d := pm.Preview; d != nil {
		shown, cut, elided := fitOps(d.Operations, c.s.budget()/2)
		out.Preview.Counts, out.Preview.CountsComplete = d.Counts, !d.Truncated
		out.Preview.Operations, out.Preview.More, out.Preview.Truncated = shown, cut || d.Truncated, elided
	}
	return out
}

// ---- apply_plan and list_plans

func planTools() []*toolSpec {
	pPlanID := param{name: "plan_id", kind: kString, required: true, desc: "from the call that made the plan"}
	return []*toolSpec{
		{
			name: "apply_plan", title: "Apply a plan", write: true, destructive: true, plans: true,
			desc:   "Commit a plan as previewed, once a person confirmed it (your client asks its user, or a person runs strata approve); while nothing it changes has moved on its branch since (it is rebased otherwise), before it expires, and once.",
			params: one(pPlanID),
			output: applyOutSchema(),
			handle: applyPlan,
		},
		{
			name: "list_plans", title: "List plans", plans: true,
			desc:   "Your plans in a database: those waiting, and those settled in the last day.",
			params: params(one(pDatabase, pLimit(200))),
			output: outputSchema([]string{"database", "plans", "more"}, oDatabase,
				prop{"plans", arrS("the plans", closedObject("one plan", []string{"plan_id", "tool", "summary", "state", "base", "created", "expires_at", "counts", "removes", "overwrites"},
					prop{"plan_id", strS("its id")},
					prop{"tool", strS("the tool it runs")},
					prop{"branch", strS("the branch it changes")},
					prop{"target", strS("the branch or snapshot it deletes")},
					prop{"summary", strS("what it does")},
					prop{"state", schema{"type": "string", "enum": []string{snapshots.PlanPending, snapshots.PlanApproved, snapshots.PlanRejected, snapshots.PlanApplied, "expired"}, "description": "pending (waits for a confirmation), approved (apply it), rejected, applied, or expired"}},
					prop{"base", intS("the head it was computed on")},
					prop{"created", strS("when it was made (RFC 3339)")},
					prop{"expires_at", strS("when it expires (RFC 3339)")},
					prop{"counts", countsSchema()},
					prop{"removes", strArrS("values it removes", "a JSON Pointer")},
					prop{"overwrites", strArrS("values it replaces", "a JSON Pointer")},
					prop{"decided_by", strS("who approved or rejected it")},
					prop{"reason", strS("why it was rejected (the person's words: untrusted text)")},
					prop{"revision", intS("the revision it was applied as")}))},
				oMore),
			handle: listPlans,
		},
	}
}

// applyOutSchema is apply_plan's output: the answer of the tool the plan runs (a revision, or the branch or
// snapshot deleted), with the plan's id.
func applyOutSchema() schema {
	props := slices.Clone(writeOutProps)
	seen := map[string]bool{}
	for _, p := range props {
		seen[p.name] = true
	}
	extra := append(append([]prop{{"plan_id", strS("the plan applied")},
		{"fast_forward", boolS("for a promote: true when into had not moved since the branch left it: the new revision holds the branch's head as it is")},
		{"merged", intS("for a promote: the branch revision brought in")}},
		branchOutProps()...), snapshotOutProps()...)
	for _, p := range extra {
		if !seen[p.name] {
			seen[p.name] = true
			props = append(props, p)
		}
	}
	return outputSchema([]string{"database", "plan_id"}, props...)
}

type planJSON struct {
	PlanID     string          `json:"plan_id"`
	Tool       string          `json:"tool"`
	Branch     string          `json:"branch,omitempty"`
	Target     string          `json:"target,omitempty"`
	Summary    string          `json:"summary"`
	State      string          `json:"state"`
	Base       uint64          `json:"base"`
	Created    time.Time       `json:"created"`
	ExpiresAt  time.Time       `json:"expires_at"`
	Counts     revision.Counts `json:"counts"`
	Removes    []string        `json:"removes"`
	Overwrites []string        `json:"overwrites"`
	DecidedBy  string          `json:"decided_by,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Revision   uint64          `json:"revision,omitempty"`
}

func listPlans(ctx context.Context, c *call) (string, any, error) {
	v, err := c.view(ctx)
	if err != nil {
		return "", nil, err
	}
	all, err := v.MyPlans(ctx)
	if err != nil {
		return "", nil, err
	}
	now := v.Now()
	// Those waiting first (oldest first), then those settled (newest first): list_plans takes no cursor, so a limit
	// must never cut a plan waiting to be applied behind settled ones (found in review).
	waitingFirst := func(p snapshots.Plan) bool {
		st := p.StateAt(now)
		return st == snapshots.PlanPending || st == snapshots.PlanApproved
	}
	var open, done []snapshots.Plan
	for _, p := range all {
		if waitingFirst(p) {
			open = append(open, p)
		} else {
			done = append(done, p)
		}
	}
	slices.SortStableFunc(done, func(a, b snapshots.Plan) int { return settledTime(b).Compare(settledTime(a)) })
	var mine []planJSON
	for _, p := range append(open, done...) {
		mine = append(mine, planJSON{PlanID: p.ID, Tool: p.Op, Branch: p.Branch, Target: p.Target, Summary: p.Summary,
			State: p.StateAt(now), Base: v.VisibleRevision(ctx, p.Base), Created: p.Created, ExpiresAt: p.Expires, Counts: p.Counts,
			Removes: nonNil(p.Removes), Overwrites: nonNil(p.Overwrites), DecidedBy: p.DecidedBy, Reason: clipText(p.Reason, maxMessage), Revision: p.Revision})
	}
	kept, more := page(mine, c.limit(20), c.s.budget())
	waiting := 0
	for _, p := range kept {
		if p.State == snapshots.PlanPending || p.State == snapshots.PlanApproved {
			waiting++
		}
	}
	moreNote := ""
	if more {
		moreNote = "; there are more (those waiting come first, then the newest settled): raise limit to see more"
	}
	return fmt.Sprintf("%d plan(s), %d waiting to be applied%s.", len(kept), waiting, moreNote),
		map[string]any{"database": c.a.str("database"), "plans": kept, "more": more}, nil
}

// settledTime is when a plan stopped waiting: its decision, or its expiry.
func settledTime(p snapshots.Plan) time.Time {
	if p.Decided.After(p.Expires) {
		return p.Decided
	}
	return p.Expires
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// confirmKey is the name of the one input request apply_plan sends.
const confirmKey = "confirm"

func applyPlan(ctx context.Context, c *call) (string, any, error) {
	id := c.a.str("plan_id")
	v, p, err := c.s.actor.FindPlan(ctx, id)
	if err != nil {
		return "", nil, err
	}
	if err := v.CheckApply(p); err != nil {
		return "", nil, err
	}
	confirmedBy := ""
	if p.State == snapshots.PlanPending {
		var res *mcpsdk.CallToolResult
		confirmedBy, res, err = c.confirm(ctx, v, p)
		if err != nil || res != nil {
			return "", res, err
		}
	}
	ch, err := gate.PlanChange(p)
	if err != nil {
		return "", nil, err
	}
	out, err := v.ApplyPlan(ctx, p, confirmedBy)
	summary, shown, err := c.answer(ctx, v, ch, out, err)
	if err != nil {
		return "", nil, err
	}
	// The answer is the change's, with the plan's id.
	b, err := json.Marshal(shown)
	if err != nil {
		return "", nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return "", nil, err
	}
	// apply_plan has no database argument: the answer names the plan's.
	m["plan_id"], _ = json.Marshal(p.ID)
	m["database"], _ = json.Marshal(v.Name())
	return fmt.Sprintf("applied plan %s: %s", p.ID, summary), m, nil
}

// confirm asks the client's user to confirm a pending plan, in the multi-round-trip style: the first call answers
// with an input request (an elicitation) and a signed request state; the client asks its user, then calls again
// with the answer. (For clients of earlier protocol versions, the go-sdk sends the elicitation itself and calls this
// handler again with the answer.) It returns who confirmed, or an answer to send (the input request), or an error:
// the user declined (the plan is then rejected), or no one can confirm here (CONFIRMATION_REQUIRED; the plan waits
// for `strata approve`).
func (c *call) confirm(ctx context.Context, v *gate.View, p snapshots.Plan) (string, *mcpsdk.CallToolResult, error) {
	dbName := v.Name()
	waiting := func(why string) error { return waiting(v, p, why) }
	if v.OutOfBand(ctx, p) {
		return "", nil, waiting("only a person may approve it, out of band: the operator does not take a client's confirmation for it")
	}
	var params *mcpsdk.CallToolParamsRaw
	if c.req != nil {
		params = c.req.Params
	}
	if params != nil && len(params.InputResponses) > 0 {
		if !hmac.Equal([]byte(params.RequestState), []byte(c.s.requestState(p))) {
			return "", nil, newError(codeInvalidArgument, "the confirmation does not belong to plan %s: its request state was altered or made for another plan; nothing was written", p.ID)
		}
		er, ok := params.InputResponses[confirmKey].(*mcpsdk.ElicitResult)
		if !ok {
			return "", nil, waiting("the client's answer held no confirmation")
		}
		if er.Action == "accept" && er.Content[confirmKey] == true {
			return "the user of " + c.clientName(), nil, nil
		}
		if er.Action == "decline" || er.Action == "accept" {
			if err := v.DeclinePlan(ctx, p, "the user of "+c.clientName()); err != nil {
				return "", nil, err
			}
			e := newError(codeConfirmationRequired, "the user declined plan %s; nothing was written, and the plan is rejected", p.ID)
			e.Hint = "ask the user what they want instead"
			return "", nil, e
		}
		return "", nil, waiting("the user dismissed the question without deciding")
	}
	if !c.canElicit() {
		return "", nil, waiting("this client cannot ask its user")
	}
	req := &mcpsdk.ElicitParams{
		Message: c.confirmMessage(dbName, p, v.VisibleRevision(ctx, p.Base)),
		RequestedSchema: &jsonschema.Schema{
			Type: "object",
			Properties: map[string]*jsonschema.Schema{
				confirmKey: {Type: "boolean", Title: "Apply this change", Description: "true applies the change now; false rejects it"},
			},
			Required: []string{confirmKey},
		},
	}
	return "", &mcpsdk.CallToolResult{InputRequests: mcpsdk.InputRequestMap{confirmKey: req}, RequestState: c.s.requestState(p)}, nil
}

// waiting is the answer to apply_plan for a plan that no one has confirmed, and why.
func waiting(v *gate.View, p snapshots.Plan, why string) error {
	e := newError(codeConfirmationRequired, "plan %s needs a person's confirmation and %s; nothing was written", p.ID, why)
	e.Hint = fmt.Sprintf("ask a person to approve it (strata approve %s %s) and call apply_plan again before it expires at %s",
		v.Name(), p.ID, p.Expires.Format(time.RFC3339))
	return e
}

// requestState binds a confirmation round trip to its plan and caller: the client echoes it with the answer.
func (s *server) requestState(p snapshots.Plan) string {
	return hex.EncodeToString(s.sign([]byte("confirm\x00" + p.ID + "\x00" + p.Principal)))
}

// canElicit reports whether the client declared it can ask its user (elicitation, form mode).
func (c *call) canElicit() bool {
	if c.req == nil || c.req.Session == nil {
		return false
	}
	ip := c.req.Session.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return false
	}
	// {} (before 2025-11-25) means form mode; a client that names only url cannot be asked a form question, and the
	// go-sdk would fail the whole call if it were.
	e := ip.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil
}

func (c *call) clientName() string {
	if c.req != nil && c.req.Session != nil {
		if ip := c.req.Session.InitializeParams(); ip != nil && ip.ClientInfo != nil && ip.ClientInfo.Name != "" {
			return clip(ip.ClientInfo.Name)
		}
	}
	return "the client"
}

// confirmMessage is what the user is asked: who wants what, and what it removes and overwrites.
func (c *call) confirmMessage(dbName string, p snapshots.Plan, base uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Agent %q asks to apply a change to database %s: %s (tool %s", p.Principal, dbName, p.Summary, p.Op)
	if p.Branch != "" {
		fmt.Fprintf(&b, ", branch %s at revision %d", p.Branch, base)
	}
	fmt.Fprintf(&b, "). %d added, %d removed, %d replaced, %d moved", p.Counts.Added, p.Counts.Removed, p.Counts.Replaced, p.Counts.Moved)
	more := ""
	if gate.CountsAtLeast(p.Counts) {
		// The plan's diff stopped counting at its bound: the counts are lower bounds, as the review page says.
		b.WriteString(" (at least: the plan changes more than was counted)")
		more = " at least"
	}
	b.WriteString(".")
	// total is how many values the plan removes or overwrites: its paths are kept only up to a bound (found in
	// review: past it, the question said "and 90 more" of a plan that removed 140 more).
	list := func(what string, paths []string, total int) {
		if len(paths) == 0 {
			return
		}
		shown := paths[:min(len(paths), 10)]
		fmt.Fprintf(&b, " It %s: %s", what, strings.Join(shown, ", "))
		if n := max(len(paths), total); n > len(shown) {
			fmt.Fprintf(&b, " and%s %d more", more, n-len(shown))
		}
		b.WriteString(".")
	}
	list("removes", p.Removes, p.Counts.Removed+p.Counts.Moved)
	list("overwrites", p.Overwrites, p.Counts.Replaced)
	b.WriteString(" Apply it?")
	return b.String()
}

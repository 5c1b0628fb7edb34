package mcp

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
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

// Plans and confirmation (docs/design.md §4). A call whose class the policy answers with `ask` is computed without
// committing (a dry run on the branch head) and kept as a plan in the database: the caller gets its id, a preview
// (the diff it would commit), what it removes and overwrites, and when it expires. apply_plan commits it exactly as
// previewed — the same call, on the same base head, checked to produce the same root — once a person confirmed it:
// the client's user through elicitation (asked by this server, never by the agent), or an operator out of band with
// `strata approve`. The marker that a plan was applied is written in the transaction of its revision.

// applying is a confirmed plan being carried out: the write it replays commits on the plan's base, consumes the
// plan in its transaction, and must produce the previewed root.
type applying struct {
	db          *snapshots.DB // unused by the writes themselves, which open the database their arguments name
	plan        snapshots.Plan
	confirmedBy string // who confirmed a pending plan through the client; empty when it was approved out of band
}

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
		{"base", intS("the head revision the plan was computed on (for a plan: it applies only while this is still the head)")},
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

// orPlan extends a write tool's output schema with the plan answer it gives when the call needs confirmation.
func orPlan(s schema) schema {
	ps := s["properties"].(schema)
	for _, p := range planProps() {
		if _, ok := ps[p.name]; !ok {
			ps[p.name] = p.s
		}
	}
	s["anyOf"] = append(s["anyOf"].([]any), schema{"required": planRequired})
	s["description"] = strings.Replace(s["description"].(string), " On an error", " When the call needs a person's confirmation, nothing is written and the content is a plan {plan_id, preview, removes, overwrites, confirmation_required, expires_at} instead. On an error", 1)
	return s
}

func (p *planOut) summary() string {
	return fmt.Sprintf("nothing was written: %s needs a person's confirmation. Plan %s (%s; %d removed, %d replaced) expires at %s: call apply_plan with plan_id %s; the user is asked to confirm, or a person approves it with strata approve %s %s.",
		p.Tool, p.PlanID, p.Preview.Summary, p.Preview.Counts.Removed, p.Preview.Counts.Replaced, p.ExpiresAt.Format(time.RFC3339), p.PlanID, p.Database, p.PlanID)
}

// newPlanID draws a plan id: 128 random bits.
func newPlanID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return "plan-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// maxPlanPaths bounds the removes and overwrites lists a plan keeps.
const maxPlanPaths = 100

// denied refuses a call the policy denies. It says that the operator disabled it, never how to enable it.
func denied(what string) error {
	return newError(codeDenied, "%s is disabled by the operator; nothing was done", what)
}

// decide is the policy's decision for the call's class. In mode on, a change to a protected branch that only adds
// counts as a write; the caller then sets additive once it knows.
func (c *call) decide(class string) string {
	return c.s.cfg.Policy.Decision(class)
}

// commitAnswer carries out every write that commits a revision (put, patch, insert, update, delete, transform,
// restore, revert, promote) under the policy: do makes the write with the options it is given. It answers the
// committed revision, a plan, or a refusal.
func (c *call) commitAnswer(ctx context.Context, db *snapshots.DB, w snapshots.WriteOptions, what string,
	do func(w snapshots.WriteOptions) (*snapshots.Result, error)) (string, any, error) {
	r, plan, err := c.commitUnderPolicy(ctx, db, w, what, do)
	if err != nil {
		return "", nil, err
	}
	if plan != nil {
		return plan.summary(), plan, nil
	}
	return c.written(r, nil, what)
}

// commitUnderPolicy is commitAnswer's decision: it returns the committed result or a plan.
func (c *call) commitUnderPolicy(ctx context.Context, db *snapshots.DB, w snapshots.WriteOptions, what string,
	do func(w snapshots.WriteOptions) (*snapshots.Result, error)) (*snapshots.Result, *planOut, error) {
	branch := branchOr(w.Branch)
	class := gate.ClassWrite
	if c.s.cfg.protected(branch) {
		class = gate.ClassProtected
	}
	d := c.decide(class)
	if d == gate.Deny { // also for a plan made before the operator's policy changed
		if class == gate.ClassProtected {
			return nil, nil, denied(fmt.Sprintf("%s on protected branch %s", c.t.name, branch))
		}
		return nil, nil, denied(c.t.name)
	}
	ap := c.applying
	if ap != nil {
		w.ExpectedHead = ap.plan.Base
		// The plan's own key: a key the caller reused since (on another write) must not answer for the plan, and a
		// retried apply replays its own revision.
		w.IdempotencyKey = "plan\x00" + ap.plan.ID
	}
	if c.s.limited() && (c.t.name == "revert" || c.t.name == "promote") {
		// These change whole states: check, on a dry run, that the change stays within the scope, and commit it on
		// the head it was checked on.
		pw := w
		pw.DryRun = true
		r, err := do(pw)
		if err != nil || r.Preview == nil {
			if ap != nil {
				return r, nil, planChanged(err, ap.plan)
			}
			return r, nil, err
		}
		if err := c.checkTouched(r); err != nil {
			return nil, nil, err
		}
		// Commit exactly what was checked (a promote's source branch may move in between), on the head checked.
		w.ExpectedHead = r.Preview.Base.Rev.Number // the caller's, if it gave one (the dry run checked it)
		w.InTx = snapshots.ExpectRoot([]byte(r.Preview.RootEncoding()))
	}
	if ap != nil {
		w.InTx = snapshots.BothInTx(w.InTx, db.ConsumePlan(ap.plan.ID, c.s.cfg.Principal, ap.confirmedBy))
		r, err := do(w)
		if err == nil && r.Replayed {
			// Another apply of this plan committed it (its key is the plan's own): it applies once.
			return nil, nil, fmt.Errorf("%w: plan %s was already applied, as revision %d; a plan applies once", snapshots.ErrConflict, ap.plan.ID, r.Revision)
		}
		return r, nil, planChanged(err, ap.plan)
	}
	if d == gate.Allow {
		r, err := do(w)
		return r, nil, err
	}
	// Ask: compute the change without committing it.
	callerHead := w.ExpectedHead
	for attempt := 0; attempt < 5; attempt++ {
		pw := w
		pw.DryRun = true
		r, err := do(pw)
		if err != nil || r.Preview == nil {
			return r, nil, err // refused, a replay of an earlier write with this idempotency key, or no change at all
		}
		d, err := r.Preview.Diff(ctx, &revision.DiffOptions{MaxOps: 10_000})
		if err != nil {
			return nil, nil, err
		}
		if class == gate.ClassProtected && c.s.cfg.Writes == gate.WritesOn && c.decide(gate.ClassWrite) == gate.Allow && additive(d) {
			// Mode on lets a change to a protected branch through when it only adds: commit exactly what was
			// checked, on the head it was checked on.
			// The commit must produce the root checked: a promote's source branch, or a program that reads the
			// clock, could make it something else.
			pinned := w
			pinned.ExpectedHead = r.Preview.Base.Rev.Number
			pinned.InTx = snapshots.BothInTx(w.InTx, snapshots.ExpectRoot([]byte(r.Preview.RootEncoding())))
			res, err := do(pinned)
			var ce *snapshots.ConflictError
			if callerHead == 0 && errors.As(err, &ce) && ce.Msg == "" && ce.Branch != "" {
				continue // the branch moved since the check: check again on its new head
			}
			if errors.Is(err, snapshots.ErrPlanChanged) {
				continue // it would have committed something else: check again
			}
			return res, nil, err
		}
		p, err := c.savePlan(ctx, db, snapshots.Plan{Branch: branch, Base: r.Preview.Base.Rev.Number,
			Root: []byte(r.Preview.RootEncoding()), Summary: what}, d)
		return nil, p, err
	}
	return nil, nil, newError(codeConflict, "branch %s kept moving while this write was being checked; nothing was written", branch).
		withHint("retry")
}

// additive reports whether a change only adds.
func additive(d *revision.DiffResult) bool {
	return !d.Truncated && d.Counts.Removed == 0 && d.Counts.Replaced == 0 && d.Counts.Moved == 0
}

// planChanged turns the refusal of a plan's write because its branch moved into PLAN_CHANGED.
func planChanged(err error, p snapshots.Plan) error {
	var ce *snapshots.ConflictError
	if errors.As(err, &ce) && ce.Msg == "" && ce.Branch != "" {
		return fmt.Errorf("%w: branch %s is at revision %d now, not %d as when plan %s was made; nothing was written",
			snapshots.ErrPlanChanged, ce.Branch, ce.Head, p.Base, p.ID)
	}
	return err
}

// savePlan stores a plan for this call, with its preview from d (nil for a plan that changes no document), and
// returns the answer that shows it.
func (c *call) savePlan(ctx context.Context, db *snapshots.DB, p snapshots.Plan, d *revision.DiffResult) (*planOut, error) {
	now := db.Now().UTC()
	p.ID, p.Principal, p.Tool, p.Args = newPlanID(), c.s.cfg.Principal, c.t.name, slices.Clone(c.raw)
	p.Created, p.Expires, p.State = now, now.Add(c.s.cfg.PlanTTL), snapshots.PlanPending
	p.Removes, p.Overwrites = []string{}, []string{}
	out := &planOut{Database: c.a.str("database"), Tool: c.t.name, Branch: p.Branch, Base: p.Base,
		ConfirmationRequired: true, Preview: planPreview{Summary: p.Summary, CountsComplete: true, Operations: []diffOp{}}}
	if d != nil {
		p.Counts = d.Counts
		for _, o := range d.Operations {
			switch {
			case o.Op == "remove" && len(p.Removes) < maxPlanPaths:
				p.Removes = append(p.Removes, o.Path)
			case o.Op == "move" && len(p.Removes) < maxPlanPaths:
				p.Removes = append(p.Removes, o.From)
			case o.Op == "replace" && len(p.Overwrites) < maxPlanPaths:
				p.Overwrites = append(p.Overwrites, o.Path)
			}
		}
		// The plan keeps the first operations, for a person reviewing it (strata plans DB ID).
		kept, keptCut, _ := fitOps(d.Operations, 64<<10)
		for _, o := range kept {
			p.Preview = append(p.Preview, revision.DiffOp{Op: o.Op, Path: o.Path, From: o.From, Value: o.Value, OldValue: o.OldValue})
		}
		p.PreviewComplete = !keptCut && !d.Truncated
		shown, cut, elided := fitOps(d.Operations, c.s.budget()/2)
		out.Preview.Counts, out.Preview.CountsComplete = d.Counts, !d.Truncated
		out.Preview.Operations, out.Preview.More, out.Preview.Truncated = shown, cut || d.Truncated, elided
	}
	if err := db.SavePlan(ctx, p); err != nil {
		return nil, err
	}
	out.PlanID, out.Removes, out.Overwrites, out.ExpiresAt = p.ID, p.Removes, p.Overwrites, p.Expires
	return out, nil
}

// ---- apply_plan and list_plans

func planTools() []*toolSpec {
	pPlanID := param{name: "plan_id", kind: kString, required: true, desc: "the plan's id, as a call that needed confirmation returned it"}
	return []*toolSpec{
		{
			name: "apply_plan", title: "Apply a plan", write: true, destructive: true, plans: true,
			desc:   "Commit a plan exactly as it was previewed, once a person confirmed it: the user is asked through this client when it can ask, or a person approves it out of band (strata approve). It commits only while the plan's base is still the head of its branch (else PLAN_CHANGED, and the plan stays), only before it expires (PLAN_EXPIRED), and only once.",
			params: one(pPlanID),
			output: applyOutSchema(),
			handle: applyPlan,
		},
		{
			name: "list_plans", title: "List plans", plans: true,
			desc:   "The plans you made in a database that wait for confirmation, and those settled in the last day (approved, rejected with the reason, or applied as a revision).",
			params: params(one(pDatabase, pLimit(20, 200, "plans"))),
			output: outputSchema("Your plans, oldest first.", []string{"database", "plans", "more"}, oDatabase,
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
		{"fast_forward", boolS("for a promote: true when into simply moved to the branch's head")},
		{"merged", intS("for a promote: the branch revision brought in")}},
		branchOutProps()...), snapshotOutProps()...)
	for _, p := range extra {
		if !seen[p.name] {
			seen[p.name] = true
			props = append(props, p)
		}
	}
	return outputSchema("What the plan did: the revision it committed, or the branch or snapshot it deleted.", []string{"database", "plan_id"}, props...)
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
	db, err := c.db(ctx)
	if err != nil {
		return "", nil, err
	}
	all, err := db.Plans(ctx)
	if err != nil {
		return "", nil, err
	}
	now := db.Now()
	var mine []planJSON
	for _, p := range all {
		if p.Principal != c.s.cfg.Principal {
			continue
		}
		mine = append(mine, planJSON{PlanID: p.ID, Tool: p.Tool, Branch: p.Branch, Target: p.Target, Summary: p.Summary,
			State: p.StateAt(now), Base: p.Base, Created: p.Created, ExpiresAt: p.Expires, Counts: p.Counts,
			Removes: nonNil(p.Removes), Overwrites: nonNil(p.Overwrites), DecidedBy: p.DecidedBy, Reason: clipText(p.Reason, maxMessage), Revision: p.Revision})
	}
	kept, more := page(mine, c.limit(20), c.s.budget())
	waiting := 0
	for _, p := range kept {
		if p.State == snapshots.PlanPending || p.State == snapshots.PlanApproved {
			waiting++
		}
	}
	return fmt.Sprintf("%d plan(s), %d waiting to be applied%s.", len(kept), waiting, moreText(more)),
		map[string]any{"database": c.a.str("database"), "plans": kept, "more": more}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// findPlan looks for a plan among the databases the caller may see. A plan of another principal is not found.
func (c *call) findPlan(ctx context.Context, id string) (*snapshots.DB, string, snapshots.Plan, error) {
	notFound := &snapshots.NotFoundError{What: "plan", Name: clip(id), Hint: "plan ids are exact; list_plans shows yours"}
	if !strings.HasPrefix(id, "plan-") || len(id) > 64 {
		return nil, "", snapshots.Plan{}, notFound
	}
	names, err := c.s.dir.Names()
	if err != nil {
		return nil, "", snapshots.Plan{}, err
	}
	for _, name := range names {
		if !c.s.cfg.Scope.Databases.Permits(name) {
			continue
		}
		db, err := c.s.dir.Open(ctx, name)
		if err != nil {
			continue
		}
		p, err := db.GetPlan(ctx, id)
		if err == nil && p.Principal == c.s.cfg.Principal {
			return db, name, p, nil
		}
	}
	return nil, "", snapshots.Plan{}, notFound
}

// confirmKey is the name of the one input request apply_plan sends.
const confirmKey = "confirm"

func applyPlan(ctx context.Context, c *call) (string, any, error) {
	id := c.a.str("plan_id")
	db, dbName, p, err := c.findPlan(ctx, id)
	if err != nil {
		return "", nil, err
	}
	if err := snapshots.CheckPlan(p, c.s.cfg.Principal, db.Now()); err != nil {
		if p.State == snapshots.PlanRejected {
			e := newError(codeDenied, "plan %s was rejected by %s; nothing was written", p.ID, p.DecidedBy)
			e.Detail = p.Reason
			e.Hint = "the reason is in detail; change your approach, or plan again if the person asks for it"
			return "", nil, e
		}
		return "", nil, err
	}
	confirmedBy := ""
	if p.State == snapshots.PlanPending {
		var res *mcpsdk.CallToolResult
		confirmedBy, res, err = c.confirm(ctx, db, dbName, p)
		if err != nil || res != nil {
			return "", res, err
		}
	}
	t := c.s.tool(p.Tool)
	if t == nil {
		return "", nil, denied(p.Tool + " on this server")
	}
	a, err := decodeArgs(t, p.Args)
	if err != nil {
		return "", nil, err
	}
	if a.str("database") != dbName {
		return "", nil, fmt.Errorf("plan %s: its arguments name another database", p.ID)
	}
	sub := &call{s: c.s, t: t, a: a, raw: p.Args, req: c.req, applying: &applying{db: db, plan: p, confirmedBy: confirmedBy}}
	// The scope is checked again: the operator may have narrowed it since the plan was made.
	if err := sub.checkScope(ctx); err != nil {
		return "", nil, err
	}
	if err := sub.checkRevisionArgs(ctx); err != nil {
		return "", nil, err
	}
	summary, out, err := t.handle(ctx, sub)
	if err != nil {
		return "", nil, err
	}
	if _, isPlan := out.(*planOut); isPlan {
		return "", nil, fmt.Errorf("plan %s: %w", p.ID, errors.New("the call made a plan again instead of applying it"))
	}
	// The answer is the tool's, with the plan's id.
	b, err := json.Marshal(out)
	if err != nil {
		return "", nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return "", nil, err
	}
	m["plan_id"], _ = json.Marshal(p.ID)
	return fmt.Sprintf("applied plan %s: %s", p.ID, summary), m, nil
}

// confirm asks the client's user to confirm a pending plan, in the multi-round-trip style: the first call answers
// with an input request (an elicitation) and a signed request state; the client asks its user, then calls again
// with the answer. (For clients of earlier protocol versions, the go-sdk sends the elicitation itself and calls this
// handler again with the answer.) It returns who confirmed, or an answer to send (the input request), or an error:
// the user declined (the plan is then rejected), or no one can confirm here (CONFIRMATION_REQUIRED; the plan waits
// for `strata approve`).
func (c *call) confirm(ctx context.Context, db *snapshots.DB, dbName string, p snapshots.Plan) (string, *mcpsdk.CallToolResult, error) {
	waiting := func(why string) error {
		e := newError(codeConfirmationRequired, "plan %s needs a person's confirmation and %s; nothing was written", p.ID, why)
		e.Hint = fmt.Sprintf("ask a person to approve it (strata approve %s %s) and call apply_plan again before it expires at %s",
			dbName, p.ID, p.Expires.Format(time.RFC3339))
		return e
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
			if _, err := db.RejectPlan(ctx, p.ID, "the user of "+c.clientName(), "declined when asked to confirm"); err != nil {
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
		Message: c.confirmMessage(dbName, p),
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
	return ip != nil && ip.Capabilities != nil && ip.Capabilities.Elicitation != nil
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
func (c *call) confirmMessage(dbName string, p snapshots.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Agent %q asks to apply a change to database %s: %s (tool %s", p.Principal, dbName, p.Summary, p.Tool)
	if p.Branch != "" {
		fmt.Fprintf(&b, ", branch %s at revision %d", p.Branch, p.Base)
	}
	fmt.Fprintf(&b, "). %d added, %d removed, %d replaced, %d moved.", p.Counts.Added, p.Counts.Removed, p.Counts.Replaced, p.Counts.Moved)
	list := func(what string, paths []string) {
		if len(paths) == 0 {
			return
		}
		shown := paths[:min(len(paths), 10)]
		fmt.Fprintf(&b, " It %s: %s", what, strings.Join(shown, ", "))
		if len(paths) > len(shown) {
			fmt.Fprintf(&b, " and %d more", len(paths)-len(shown))
		}
		b.WriteString(".")
	}
	list("removes", p.Removes)
	list("overwrites", p.Overwrites)
	b.WriteString(" Apply it?")
	return b.String()
}

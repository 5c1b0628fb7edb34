package gate

import (
	"context"
	"sync"
	"time"

	"github.com/strata-db/strata/audit"
	"github.com/strata-db/strata/snapshots"
)

// One audit record per call (docs/design.md §4, docs/security.md T12). A front end begins a call when a request
// arrives (Actor.Call) and ends it when the request is answered (Call.End), whatever happened in between: allowed,
// planned, denied, failed, timed out or panicked. The gate fills in what it decided while the call ran: the decision,
// the revision a write created, the plan it made or applied, the database it named. The record never holds the
// arguments themselves, only their digest.

// CallInfo is what a front end knows of a call when it arrives.
type CallInfo struct {
	Transport string // audit.TransportStdio, TransportHTTP, TransportCLI
	Client    string // the client's name/version, when it gave one
	Tool      string // the tool, method or command called
	Args      []byte // the raw arguments; only their digest is recorded
	Database  string // the database the call names, when the front end knows it
	PlanID    string // the plan the call names (apply_plan, approve, reject)
}

// Call is one call of an actor in progress. It is safe for concurrent use.
type Call struct {
	a     *Actor
	info  CallInfo
	start time.Time

	mu       sync.Mutex
	decision string
	revision uint64
	planID   string
	database string
	ended    bool
}

type callKey struct{}

// Call begins a call. Pass the returned context to every read and write the call makes, so that the gate notes in
// the call's record what it decides, and end the call with End.
func (a *Actor) Call(ctx context.Context, info CallInfo) (context.Context, *Call) {
	c := &Call{a: a, info: info, start: time.Now(), planID: info.PlanID, database: info.Database}
	return context.WithValue(ctx, callKey{}, c), c
}

func callFrom(ctx context.Context) *Call {
	c, _ := ctx.Value(callKey{}).(*Call)
	return c
}

func (c *Call) note(fn func(c *Call)) {
	if c == nil {
		return
	}
	c.mu.Lock()
	fn(c)
	c.mu.Unlock()
}

func recordDecision(ctx context.Context, d string) {
	callFrom(ctx).note(func(c *Call) { c.decision = d })
}

func recordRevision(ctx context.Context, r *snapshots.Result) {
	if r == nil || r.Unchanged || r.Replayed {
		return
	}
	callFrom(ctx).note(func(c *Call) { c.revision = r.Revision })
}

func recordPlan(ctx context.Context, id string) {
	callFrom(ctx).note(func(c *Call) { c.planID, c.decision = id, Ask })
}

func recordDatabase(ctx context.Context, name string) {
	callFrom(ctx).note(func(c *Call) {
		if c.database == "" {
			c.database = name
		}
	})
}

// OutcomeOf is the outcome of a call that ended with err: audit.OutcomeOK, or its error code.
func OutcomeOf(err error) string {
	if err == nil {
		return audit.OutcomeOK
	}
	return Code(err)
}

// End appends the call's record, with its outcome (audit.OutcomeOK, an error code, or what the front end calls a
// failure of its own: "PROTOCOL_ERROR", "INTERNAL", "INPUT_REQUIRED"). A call ends once; later Ends do nothing.
// While a record cannot be appended, writes are refused (fail closed). It returns the record (the zero Record when
// the call had already ended), for the front end's request log.
func (c *Call) End(outcome string) audit.Record {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return audit.Record{}
	}
	c.ended = true
	rec := audit.Record{Principal: c.a.p.Name, Client: c.info.Client, Transport: c.info.Transport, Tool: c.info.Tool,
		Database: c.database, ArgsDigest: audit.Digest(c.info.Args), Decision: c.decision, Outcome: outcome,
		Revision: c.revision, PlanID: c.planID, DurationMS: float64(time.Since(c.start).Microseconds()) / 1000}
	c.mu.Unlock()
	switch {
	case outcome == CodeDenied:
		rec.Decision = audit.DecisionDeny
	case rec.Decision == "" || rec.Decision == Allow:
		rec.Decision = audit.DecisionAllow
	case rec.Decision == Ask:
		rec.Decision = audit.DecisionAsk
	case rec.Decision == Deny:
		rec.Decision = audit.DecisionDeny
	}
	if outcome != audit.OutcomeOK {
		rec.Revision = 0
	}
	if rec.Transport == "" {
		rec.Transport = audit.TransportStdio
	}
	g := c.a.g
	if g.audit == nil {
		return rec
	}
	if _, err := g.audit.Append(rec); err != nil {
		g.auditFailed.Store(true)
		g.log.Error("audit log: a record could not be appended; writes are refused until one can", "tool", rec.Tool, "err", err)
	} else {
		g.auditFailed.Store(false)
	}
	return rec
}

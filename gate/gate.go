// Package gate is the one layer every front end goes through to reach Strata's databases for a principal: MCP over
// stdio and HTTP, the review page, the command line acting as the operator. It holds the rules, so that no front
// end can forget one:
//
//   - who calls (a Principal) and what the operator lets them do: a policy that allows, asks (a plan a person
//     confirms) or denies each class of call, and scopes that hide databases and resources;
//   - reads through a View, a database as the principal may see it: what its scope hides answers exactly as what
//     does not exist, in values, listings, histories, diffs, jq input, bisect and error hints;
//   - writes under the policy: committed, refused, or kept as a plan with its preview; plans are approved,
//     rejected and applied through the gate;
//   - one audit record per call (Actor.Call, Call.End), with the decision the gate made and the revision or plan
//     it produced.
//
// A front end decodes its arguments and shapes the answers; it makes no decision of its own. Errors are classified
// once, by Code.
package gate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/strata-db/strata/audit"
	"github.com/strata-db/strata/query"
	"github.com/strata-db/strata/snapshots"
)

// Options configures a Gate. The zero value is usable.
type Options struct {
	// Engine runs the jq programs of queries, bisects and transforms. nil: the gate makes one with the default
	// limits, and closes it in Close.
	Engine *query.Engine
	// Audit, when set, receives one record per call. Writes are refused while it cannot be appended to (fail
	// closed). The caller owns it.
	Audit *audit.Log
	// Logger receives the gate's own log (an audit record that could not be appended). nil discards it.
	Logger *slog.Logger
}

// Gate holds what every principal's calls share: the databases, the query engine and the audit log.
type Gate struct {
	dir       *snapshots.Dir
	engine    *query.Engine
	ownEngine bool
	audit     *audit.Log
	log       *slog.Logger
	// auditFailed is set while the last audit record could not be appended: writes are refused until one can.
	auditFailed atomic.Bool
}

// New returns the gate over a data directory.
func New(dir *snapshots.Dir, o *Options) (*Gate, error) {
	if dir == nil {
		return nil, errors.New("gate.New: no data directory")
	}
	var opts Options
	if o != nil {
		opts = *o
	}
	g := &Gate{dir: dir, engine: opts.Engine, audit: opts.Audit, log: opts.Logger}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.engine == nil {
		e, err := query.New(query.Options{})
		if err != nil {
			return nil, err
		}
		g.engine, g.ownEngine = e, true
	}
	return g, nil
}

// Close releases what the gate made itself (its query engine). The data directory and the audit log are the
// caller's.
func (g *Gate) Close() error {
	if g.ownEngine {
		return g.engine.Close()
	}
	return nil
}

// Ready reports whether the gate can take writes now, cheaply enough for a load balancer's probe: the audit log
// takes records (writes are refused while it cannot) and the data location is ready (snapshots.Dir.Ready: reachable,
// writable, no database fail-stopped). The error says why, for the operator's log.
func (g *Gate) Ready(ctx context.Context) error {
	if g.auditFailed.Load() {
		return fmt.Errorf("%w: the audit log cannot be appended to; writes are refused until it can", snapshots.ErrNotReady)
	}
	return g.dir.Ready(ctx)
}

// Engine is the engine the gate runs programs in (for its limits; programs run through View.Query and
// View.Bisect).
func (g *Gate) Engine() *query.Engine { return g.engine }

// Actor is a principal's handle on the gate: every read and write of that principal goes through it. It is safe for
// concurrent use.
type Actor struct {
	g *Gate
	p Principal
}

// As returns the actor of a principal, which must be valid (Principal.Validate).
func (g *Gate) As(p Principal) (*Actor, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &Actor{g: g, p: p.WithDefaults()}, nil
}

// Principal is who the actor is, with the defaults filled in.
func (a *Actor) Principal() Principal {
	p := a.p
	p.Protected = slices.Clone(p.Protected)
	p.MergeKeys = maps.Clone(p.MergeKeys)
	return p
}

// Name is the principal's name.
func (a *Actor) Name() string { return a.p.Name }

// limited reports whether the scope hides anything.
func (a *Actor) limited() bool { return !a.p.Scope.Unlimited() }

// dbPermitted and resPermitted report whether the scope lets a name through.
func (a *Actor) dbPermitted(name string) bool  { return a.p.Scope.Databases.Permits(name) }
func (a *Actor) resPermitted(name string) bool { return a.p.Scope.Resources.Permits(name) }

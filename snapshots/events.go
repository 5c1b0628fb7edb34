package snapshots

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/strata-db/strata/store"
)

// What a database does, told to its caller for an operator's metrics and traces: package snapshots keeps no metrics
// of its own. Events are functions, as net/http/httptrace's ClientTrace: nil ones are skipped. A commit is a span of
// its own under the caller's, when the caller's is recording (the binary configures OpenTelemetry; the library only
// uses its API).

// Events are told what the databases of a Dir (or one DB) do. They are called synchronously, some from a
// database's writer goroutine: they must be quick, and must not call the DB.
type Events struct {
	// Commit is called after each transaction of a database's writer that commits writes (group commit), or fails
	// to. Catalog operations (branches, snapshots, plans) are not commits.
	Commit func(CommitEvent)
	// Plan is called when a plan is made (PlanPending), approved, rejected or applied (committed).
	Plan func(PlanEvent)
}

// CommitEvent is one transaction of a database's writer: a group of writes committed together.
type CommitEvent struct {
	Database string // the database's name in its Dir ("" for a DB opened on its own)
	Writes   int    // the writes of the group (its batch size)
	// Revisions is the revisions the group committed: writes that changed nothing make none.
	Revisions int
	Nodes     int   // nodes newly stored
	Bytes     int64 // their stored (compressed) bytes
	// Duration is the transaction, from its start to its durable commit (or failure).
	Duration time.Duration
	// Err is why the transaction failed; nil when it committed. A failure of the storage (store.ErrFailStop) marks
	// the database not ready (Dir.Ready) until a write succeeds again.
	Err error
}

// PlanEvent is a plan changing state.
type PlanEvent struct {
	Database string
	State    string // PlanPending (made), PlanApproved, PlanRejected, PlanApplied
}

func (db *DB) commitEvent(ev CommitEvent) {
	db.noteStorage(ev.Err)
	if f := db.events.Commit; f != nil {
		ev.Database = db.name
		f(ev)
	}
}

func (db *DB) planEvent(state string) {
	if f := db.events.Plan; f != nil {
		f(PlanEvent{Database: db.name, State: state})
	}
}

// plansApplied tells Events.Plan of the plans the transaction that just committed applied.
func (db *DB) plansApplied() {
	for n := db.consumed.Swap(0); n > 0; n-- {
		db.planEvent(PlanApplied)
	}
}

// noteStorage marks the database failed when its storage is fail-stopped, and usable again after a success.
func (db *DB) noteStorage(err error) {
	switch {
	case err == nil:
		db.failStop.Store(nil)
	case errors.Is(err, store.ErrFailStop):
		db.failStop.Store(&err)
	}
}

const tracerName = "github.com/strata-db/strata/snapshots"

// commitSpan starts the span of a commit under the caller's, if the caller's is recording; end records the result.
func commitSpan(ctx context.Context, w WriteOptions) (context.Context, func(*Result, error)) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, func(*Result, error) {}
	}
	ctx, span := parent.TracerProvider().Tracer(tracerName).Start(ctx, "commit",
		trace.WithAttributes(attribute.String("strata.branch", w.branch())))
	return ctx, func(r *Result, err error) {
		if r != nil {
			span.SetAttributes(attribute.Int64("strata.revision", int64(r.Revision)), attribute.Bool("strata.unchanged", r.Unchanged),
				attribute.Int("strata.new_nodes", r.NewNodes), attribute.Int64("strata.new_bytes", r.NewBytes))
		}
		if err != nil {
			span.SetStatus(codes.Error, "commit failed")
		}
		span.End()
	}
}

// ErrNotReady is the error of Dir.Ready: the data location cannot take writes now.
var ErrNotReady = errors.New("not ready")

// Ready reports whether the data location can serve and take writes now, cheaply enough for a load balancer's
// probe: for a directory, that it exists and is writable, and that no database opened through it is fail-stopped
// (a storage failure, store.ErrFailStop, since its last successful write: one that the process has reopened since
// is read once to see that it is usable again); for PostgreSQL, one round trip asking whether the server accepts
// writes (not a standby). The error wraps ErrNotReady and says why, for the operator's log.
func (d *Dir) Ready(ctx context.Context) error {
	if d.pg != nil {
		if err := d.pg.Writable(ctx); err != nil {
			return fmt.Errorf("%w: %w", ErrNotReady, err)
		}
	} else {
		fi, err := os.Stat(d.path)
		if err != nil || !fi.IsDir() {
			return fmt.Errorf("%w: the data directory is gone", ErrNotReady)
		}
		if err := writable(d.path); err != nil {
			return fmt.Errorf("%w: the data directory is not writable: %v", ErrNotReady, err)
		}
	}
	d.mu.Lock()
	var failed []*DB
	for _, db := range d.dbs {
		if db.failStop.Load() != nil {
			failed = append(failed, db)
		}
	}
	d.mu.Unlock()
	for _, db := range failed {
		// A Shared backend reopens the file from what is durably on disk once the failed calls end; a Bolt stays
		// stopped until the process reopens it. A read tells which.
		err := db.be.View(ctx, func(c store.CatalogReader) error {
			_, err := c.LastRevision()
			return err
		})
		db.noteStorage(err)
		if err != nil {
			return fmt.Errorf("%w: a database's storage failed: %w", ErrNotReady, err)
		}
	}
	return nil
}

// PendingPlans counts the plans waiting for a confirmation (pending, not expired) in the databases opened through
// the directory so far (a server opens a database on its first request), for an operator's metrics.
func (d *Dir) PendingPlans(ctx context.Context) (int, error) {
	d.mu.Lock()
	dbs := make([]*DB, 0, len(d.dbs))
	for _, db := range d.dbs {
		dbs = append(dbs, db)
	}
	d.mu.Unlock()
	n := 0
	for _, db := range dbs {
		ps, err := db.Plans(ctx)
		if err != nil {
			return n, err
		}
		now := db.now()
		for _, p := range ps {
			if p.StateAt(now) == PlanPending {
				n++
			}
		}
	}
	return n, nil
}

package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Package store keeps no metrics of its own: a backend tells a function of its caller's about each commit
// (BoltOptions.OnCommit, PostgresOptions.OnCommit) and, for PostgreSQL, each round trip to the server
// (PostgresOptions.OnRoundTrip), as bbolt's Tx.Stats and pgx's tracers do. The binary turns them into Prometheus
// metrics.

// CommitStats describes one write transaction a backend committed, or failed to commit.
type CommitStats struct {
	// Duration is the whole commit: for bbolt, Tx.Commit (writing the pages and the meta page, with their
	// fdatasyncs); for PostgreSQL, the round trip that sends the pending writes and COMMIT.
	Duration time.Duration
	// Rebalance, Spill and Write are bbolt's breakdown of Duration (Tx.Stats): rebalancing the B+trees after
	// deletions, spilling dirty nodes onto pages, and writing pages and meta to disk with their fdatasyncs (the
	// part that the disk's sync latency decides). Zero for PostgreSQL.
	Rebalance, Spill, Write time.Duration
	// PageBytes is what bbolt allocated for the commit's pages (the B+tree nodes it spilled, and the freelist when
	// it is written), all written before the first fdatasync; the meta page is not counted. Zero for PostgreSQL.
	PageBytes int64
	// Failed says the commit failed (for bbolt, the store is then fail-stopped: ErrFailStop).
	Failed bool
}

// pgTracer times every round trip of the pool's connections (queries, batches, COPY) for
// PostgresOptions.OnRoundTrip.
type pgTracer struct {
	onRoundTrip func(time.Duration)
}

type pgStartKey struct{}

func (t *pgTracer) start(ctx context.Context) context.Context {
	return context.WithValue(ctx, pgStartKey{}, time.Now())
}

func (t *pgTracer) end(ctx context.Context) {
	if t0, ok := ctx.Value(pgStartKey{}).(time.Time); ok {
		t.onRoundTrip(time.Since(t0))
	}
}

func (t *pgTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return t.start(ctx)
}
func (t *pgTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	t.end(ctx)
}
func (t *pgTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return t.start(ctx)
}
func (t *pgTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (t *pgTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	t.end(ctx)
}
func (t *pgTracer) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	return t.start(ctx)
}
func (t *pgTracer) TraceCopyFromEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromEndData) {
	t.end(ctx)
}

var (
	_ pgx.QueryTracer    = (*pgTracer)(nil)
	_ pgx.BatchTracer    = (*pgTracer)(nil)
	_ pgx.CopyFromTracer = (*pgTracer)(nil)
)

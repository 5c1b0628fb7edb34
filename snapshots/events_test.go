package snapshots

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/strata-db/strata/store"
)

// recorder keeps the events a Dir tells.
type recorder struct {
	mu      sync.Mutex
	commits []CommitEvent
	plans   []PlanEvent
}

func (r *recorder) events() Events {
	return Events{
		Commit: func(e CommitEvent) { r.mu.Lock(); r.commits = append(r.commits, e); r.mu.Unlock() },
		Plan:   func(e PlanEvent) { r.mu.Lock(); r.plans = append(r.plans, e); r.mu.Unlock() },
	}
}

// sum adds up the commit events: transactions, writes, revisions, nodes and bytes, and failures.
func (r *recorder) sum() (txs, writes, revs, nodes int, bytes int64, failed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.commits {
		if e.Database != "shop" || e.Duration <= 0 {
			panic(fmt.Sprintf("event %+v: want database shop and a duration", e))
		}
		txs++
		writes += e.Writes
		revs += e.Revisions
		nodes += e.Nodes
		bytes += e.Bytes
		if e.Err != nil {
			failed++
		}
	}
	return
}

// TestCommitAndPlanEvents: every transaction of the writer is told once with its batch size and what it added; a
// write that changes nothing counts as a write but not a revision; plans are told when made, decided and applied.
func TestCommitAndPlanEvents(t *testing.T) {
	ctx := context.Background()
	var rec recorder
	d := must(OpenDir(t.TempDir(), &DirOptions{DB: Options{Events: rec.events()}}))
	t.Cleanup(func() { d.Close() })
	db := must(d.Create(ctx, "shop", "op"))
	big := []byte(`{"a":1,"b":"` + strings.Repeat("x", 20000) + `"}`) // stored in nodes of its own
	must(db.Put(ctx, "doc", big, WriteOptions{}))
	must(db.Put(ctx, "doc", big, WriteOptions{})) // unchanged
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			must(db.Put(ctx, fmt.Sprintf("r%d", i), []byte(fmt.Sprintf(`{"i":%d}`, i)), WriteOptions{}))
		}()
	}
	wg.Wait()
	txs, writes, revs, nodes, bytes, failed := rec.sum()
	if writes != 10 || revs != 9 || txs < 2 || txs > 10 || nodes == 0 || bytes == 0 || failed != 0 {
		t.Fatalf("%d transactions, %d writes, %d revisions, %d nodes, %d bytes, %d failed: want 10 writes and 9 revisions in 2 to 10 transactions",
			txs, writes, revs, nodes, bytes, failed)
	}

	head := must(db.Resolve(ctx, Ref{}))
	dry := must(db.Put(ctx, "doc", []byte(`{"a":2}`), WriteOptions{DryRun: true}))
	now := db.Now()
	mk := func(id string) Plan {
		return Plan{ID: id, Principal: "agent", Op: "put", Branch: Main, Base: head.Rev.Number,
			Root: []byte(dry.Preview.RootEncoding()), Created: now, Expires: now.Add(time.Hour), State: PlanPending}
	}
	must(0, db.SavePlan(ctx, mk("plan-a")))
	must(0, db.SavePlan(ctx, mk("plan-b")))
	if n := must(d.PendingPlans(ctx)); n != 2 {
		t.Fatalf("%d plans pending, want 2", n)
	}
	must(db.DecidePlan(ctx, "plan-b", false, "operator", "no"))
	must(db.Put(ctx, "doc", []byte(`{"a":2}`), WriteOptions{ExpectedHead: head.Rev.Number, InTx: db.ConsumePlan("plan-a", "agent", "alice")}))
	// A refused apply (already applied) tells nothing.
	if _, err := db.Put(ctx, "doc", []byte(`{"a":3}`), WriteOptions{InTx: db.ConsumePlan("plan-a", "agent", "alice")}); err == nil {
		t.Fatal("a plan applied twice")
	}
	if n := must(d.PendingPlans(ctx)); n != 0 {
		t.Fatalf("%d plans pending after both were decided", n)
	}
	rec.mu.Lock()
	got := fmt.Sprint(rec.plans)
	rec.mu.Unlock()
	if want := "[{shop pending} {shop pending} {shop rejected} {shop applied}]"; got != want {
		t.Fatalf("plan events %s, want %s", got, want)
	}
}

// flakyBackend fails its writes with store.ErrFailStop while broken is set.
type flakyBackend struct {
	store.Backend
	broken atomic.Bool
}

func (f *flakyBackend) Update(ctx context.Context, fn func(store.CatalogTx) error) error {
	if f.broken.Load() {
		return fmt.Errorf("%w: commit failed: input/output error", store.ErrFailStop)
	}
	return f.Backend.Update(ctx, fn)
}

func (f *flakyBackend) View(ctx context.Context, fn func(store.CatalogReader) error) error {
	if f.broken.Load() {
		return fmt.Errorf("%w: input/output error", store.ErrFailStop)
	}
	return f.Backend.View(ctx, fn)
}

// TestDirReady: a directory is ready while it exists and its databases' storage works; a database whose commit
// failed with store.ErrFailStop makes it not ready, the failed commit is told with its error, and once the
// storage answers again (the process reopened it) the directory is ready again.
func TestDirReady(t *testing.T) {
	defer func(n int) { putImportBytes = n }(putImportBytes)
	for _, limit := range []int{putImportBytes, 1} { // a Put through the writer, and one built as an import
		putImportBytes = limit
		t.Run(fmt.Sprint("put from ", limit, " bytes built as an import"), testDirReady)
	}
}

func testDirReady(t *testing.T) {
	ctx := context.Background()
	var rec recorder
	be := &flakyBackend{Backend: store.NewMemBackend()}
	path := filepath.Join(t.TempDir(), "data")
	d := must(OpenDir(path, &DirOptions{DB: Options{Events: rec.events()},
		Backend: func(string, bool) (store.Backend, error) { return be, nil }}))
	t.Cleanup(func() { d.Close() })
	if err := d.Ready(ctx); err != nil {
		t.Fatalf("a fresh directory: %v", err)
	}
	db := must(d.Create(ctx, "shop", "op"))
	must(db.Put(ctx, "doc", []byte(`1`), WriteOptions{}))
	be.broken.Store(true)
	if _, err := db.Put(ctx, "doc", []byte(`2`), WriteOptions{}); !errors.Is(err, store.ErrFailStop) {
		t.Fatalf("a write on failed storage: %v", err)
	}
	if err := d.Ready(ctx); !errors.Is(err, ErrNotReady) {
		t.Fatalf("after a fail-stop: %v, want ErrNotReady", err)
	}
	if _, _, _, _, _, failed := rec.sum(); failed != 1 {
		t.Fatalf("%d failed commits told, want 1", failed)
	}
	be.broken.Store(false)
	if err := d.Ready(ctx); err != nil {
		t.Fatalf("once the storage answers again: %v", err)
	}
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if err := d.Ready(ctx); !errors.Is(err, ErrNotReady) {
		t.Fatalf("with the directory gone: %v", err)
	}
}

// TestCommitSpan: under a recording span a commit is a child span "commit" with the revision it made.
func TestCommitSpan(t *testing.T) {
	db, _ := openTest(t, store.NewMemBackend())
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
	r := must(db.Put(ctx, "doc", []byte(`{"a":1}`), WriteOptions{Branch: Main}))
	parent.End()
	spans := sr.Ended()
	if len(spans) != 2 || spans[0].Name() != "commit" || spans[0].Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("spans %v", spans)
	}
	attrs := map[string]string{}
	for _, kv := range spans[0].Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	if attrs["strata.revision"] != fmt.Sprint(r.Revision) || attrs["strata.branch"] != Main {
		t.Fatalf("commit span attributes %v", attrs)
	}

	// An import, and a put large enough to be built as one, have their span too, over the build as well.
	defer func(n int) { putImportBytes = n }(putImportBytes)
	putImportBytes = 1
	for name, write := range map[string]func(context.Context) (*Result, error){
		"import": func(ctx context.Context) (*Result, error) {
			return db.Import(ctx, "imported", strings.NewReader(`[1,2,3]`), ImportOptions{}, WriteOptions{})
		},
		"large put": func(ctx context.Context) (*Result, error) {
			return db.Put(ctx, "large", []byte(`{"b":[true]}`), WriteOptions{})
		},
	} {
		sr := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
		ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
		r := must(write(ctx))
		parent.End()
		spans := sr.Ended()
		if len(spans) != 2 || spans[0].Name() != "commit" || spans[0].Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Fatalf("%s: spans %v", name, spans)
		}
		attrs := map[string]string{}
		for _, kv := range spans[0].Attributes() {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		if attrs["strata.revision"] != fmt.Sprint(r.Revision) || r.Revision == 0 || attrs["strata.new_nodes"] != fmt.Sprint(r.NewNodes) {
			t.Fatalf("%s: commit span attributes %v, result %+v", name, attrs, r)
		}
		tp.Shutdown(context.Background())
	}
}

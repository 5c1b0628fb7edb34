package query

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/strata-db/strata/snapshots"
)

// TestEngineStats: each program counts once under the route it took; the second in-process read of a large
// value hits the cache of materialised values where the first missed; a worker is started once and reused; one
// killed at its deadline is counted as such, and the next program starts a new one.
func TestEngineStats(t *testing.T) {
	ctx := ctxT(t)
	db := newDB(t)
	put(t, db, "doc", `{"items":[1,2,3],"pad":"`+strings.Repeat("p", 4000)+`"}`)
	e := newEngine(t, Options{Timeout: 500 * time.Millisecond})
	routes := map[string]uint64{}
	run := func(prog string) error {
		r, err := e.Query(ctx, db, snapshots.Ref{}, Request{Resource: "doc", Program: prog})
		if err == nil {
			routes[r.Plan.Route]++
		}
		return err
	}
	for _, prog := range []string{`.items`, `keys`, `length`, `.items | map(. * 2)`, `.items | map(. * 3)`} {
		if err := run(prog); err != nil {
			t.Fatalf("%s: %v", prog, err)
		}
	}
	st := e.Stats()
	if st.Read != routes[RouteRead] || st.InProcess != routes[RouteInProcess] || st.Worker != routes[RouteWorker] {
		t.Fatalf("stats %+v, routes taken %v", st, routes)
	}
	if routes[RouteRead] != 1 || routes[RouteInProcess] < 2 || routes[RouteWorker] < 2 {
		t.Fatalf("routes taken %v: the test needs a read, two in-process programs and two in workers", routes)
	}
	if st.ValueCacheMisses != 1 || st.ValueCacheHits < 1 || st.ValueCacheEntries != 1 || st.ValueCacheBytes <= 0 {
		t.Errorf("value cache: %+v; want one miss (the first in-process read of doc), hits after it, one entry", st)
	}
	if st.WorkersStarted != 1 || st.WorkersTimedOut+st.WorkersCanceled+st.WorkersCrashed+st.WorkersRetired != 0 {
		t.Errorf("workers: %+v; want one started and reused", st)
	}
	// A worker whose program has not answered by the deadline plus a grace is killed. A worker can also stop the
	// program at the deadline by itself and answer in time (gojq checks its context between operations), as one did
	// once under a loaded CI run: then nothing is killed, and the attempt is made again.
	for attempt := 1; ; attempt++ {
		before := e.Stats()
		if err := run(`def f: f; f`); !errors.Is(err, ErrTimeout) {
			t.Fatalf("a program that never ends: %v", err)
		}
		if err := run(`.items | map(. * 2)`); err != nil {
			t.Fatal(err)
		}
		st = e.Stats()
		if st.WorkersTimedOut > before.WorkersTimedOut || attempt == 3 {
			break
		}
		t.Logf("attempt %d: the worker stopped the program itself, nothing was killed: %+v", attempt, st)
	}
	if st.WorkersTimedOut != 1 || st.WorkersStarted != 2 {
		t.Errorf("after a worker killed at its deadline: %+v; want it counted, and one more started", st)
	}
}

// TestQuerySpan: under a recording span a query is a child span "query" with the route it took; without one, no
// span is made.
func TestQuerySpan(t *testing.T) {
	ctx := ctxT(t)
	db := newDB(t)
	put(t, db, "doc", `{"items":[1,2,3]}`)
	e := newEngine(t, Options{})
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	if _, err := e.Query(ctx, db, snapshots.Ref{}, Request{Resource: "doc", Program: `.items`}); err != nil {
		t.Fatal(err)
	}
	pctx, parent := tp.Tracer("test").Start(ctx, "request")
	if _, err := e.Query(pctx, db, snapshots.Ref{}, Request{Resource: "doc", Program: `.items[] | select(. > 1)`}); err != nil {
		t.Fatal(err)
	}
	parent.End()
	spans := rec.Ended()
	if len(spans) != 2 || spans[0].Name() != "query" || spans[0].Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("spans %v: want the query's span, a child of the request's, then the request's", spans)
	}
	attrs := map[string]string{}
	for _, kv := range spans[0].Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	if attrs["strata.query.route"] != RouteInProcess || attrs["strata.query.results"] != "2" {
		t.Errorf("query span attributes %v", attrs)
	}
}

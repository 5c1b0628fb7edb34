package query

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/snapshots"
)

// TestWorkerWaitPastDeadline: a query whose deadline passes while it waits for a worker process (all busy, or one
// starting slowly) never ran: it is UNAVAILABLE with a message that says so and to retry, not a bare "context
// deadline exceeded" (which a loaded CI machine showed for a query expected to time out).
func TestWorkerWaitPastDeadline(t *testing.T) {
	e := newEngine(t, Options{Isolate: IsolateAll, Workers: 1, Timeout: 1500 * time.Millisecond})
	db := newDB(t)
	put(t, db, "doc", `{"a":1}`)
	busy := make(chan error, 1)
	go func() {
		_, err := e.Query(context.Background(), db, snapshots.Ref{}, Request{Resource: "doc", Program: "reduce range(1000000000000) as $i (0; . + 1)"})
		busy <- err
	}()
	for deadline := time.Now().Add(30 * time.Second); e.Stats().WorkersStarted == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the first query's worker never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := e.Query(ctx, db, snapshots.Ref{}, Request{Resource: "doc", Program: "[.a, 2] | add"})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no query worker process was ready") {
		t.Fatalf("a query that waited past its deadline for the only worker: %v", err)
	}
	if err := <-busy; !errors.Is(err, ErrTimeout) {
		t.Fatalf("the long query: %v", err)
	}
}

package query

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata/snapshots"
)

// TestConcurrentSharedInput runs many programs at once, in-process, on one cached materialised value: gojq must
// not modify its input (the race detector would see it), and every answer must be the one it gets alone.
func TestConcurrentSharedInput(t *testing.T) {
	ctx := ctxT(t)
	db := newDB(t)
	put(t, db, "doc", testDoc(newRand(4), 150))
	// IsolateNone runs them all in-process: bounded ones on the shared cached value, the others (which gojq may
	// modify: del rewrites every map it walks) on a private copy.
	e := newEngine(t, Options{Isolate: IsolateNone})
	programs := []string{
		`.users | length`, `.users[0].tags |= . + ["z"] | .users[0].tags`, `.users | sort_by(.score) | .[0].id`,
		`del(.users[1:]) | .users | length`, `.users[] | select(.score > 90) | .id`, `.config.limits.max = 1 | .config`,
		`[.users[] | .tags |= reverse] | length`, `.users | map(.id) | add`, `to_entries | map(.key)`,
		`walk(if type == "number" then 0 else . end) | .users[3].id`, `.users[5] | .name |= ascii_upcase | .name`,
		`[paths(type == "number")] | length`, `.users | group_by(.active) | map(length)`,
		`.users[] | select(.active) | {id, name}`, `.. | numbers`, `.users[3] | keys`, `.config | has("limits")`,
		`first(.users[] | select(.score > 50)) | .id`, `[.users[0], .users[1]]`, `.users | min`,
	}
	want := map[string]string{}
	for _, p := range programs {
		r, err := e.Query(ctx, db, snapshots.Ref{}, Request{Resource: "doc", Program: p, Limit: 1000})
		if err != nil {
			t.Fatal(p, err)
		}
		want[p] = joined(r.Results)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8*len(programs))
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range programs {
				p := programs[(i+g)%len(programs)]
				r, err := e.Query(ctx, db, snapshots.Ref{}, Request{Resource: "doc", Program: p, Limit: 1000})
				if err != nil {
					errs <- err
				} else if got := joined(r.Results); got != want[p] {
					errs <- fmt.Errorf("%s: %.100s, alone %.100s", p, got, want[p])
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// The cached input is unchanged.
	r, err := e.Query(ctx, db, snapshots.Ref{}, Request{Resource: "doc", Program: `.`, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Results[0]) != string(mustJSON(t, db, "doc")) {
		t.Error("the cached input was modified")
	}
}

// TestConcurrencyCap: beyond MaxConcurrent programs at once, a query waits for a slot within its deadline and
// then fails with ErrUnavailable, while the running ones finish.
func TestConcurrencyCap(t *testing.T) {
	ctx := ctxT(t)
	db := newDB(t)
	put(t, db, "doc", testDoc(newRand(5), 10))
	e := newEngine(t, Options{Isolate: IsolateNone, MaxConcurrent: 1, Timeout: time.Second})
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		close(started)
		_, err := e.Query(ctx, db, snapshots.Ref{}, Request{Resource: "doc", Program: `last(range(1e12))`}) // runs to its deadline
		done <- err
	}()
	<-started
	// Wait until the long query holds the only slot.
	for len(e.slots) == 0 {
		time.Sleep(time.Millisecond)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err := e.Query(short, db, snapshots.Ref{}, Request{Resource: "doc", Program: `.users | length`})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "1 queries are running") {
		t.Fatalf("a query beyond the cap: %v", err)
	}
	if err := <-done; !errors.Is(err, ErrTimeout) {
		t.Fatalf("the running query: %v", err)
	}
	if _, err := e.Query(ctx, db, snapshots.Ref{}, Request{Resource: "doc", Program: `.users | length`}); err != nil {
		t.Fatalf("after the slot freed: %v", err)
	}
}

package snapshots

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// longQuietHistory makes revision 2 set config/a, then n revisions that change only another resource.
func longQuietHistory(t *testing.T, n int) *DB {
	t.Helper()
	old := SetHistoryScanLimit(40)
	t.Cleanup(func() { SetHistoryScanLimit(old) })
	ctx := context.Background()
	db, _ := openTest(t, store.NewMemBackend())
	must(db.Put(ctx, "config", []byte(`{"a":1}`), WriteOptions{Author: "alice"}))
	for i := 0; i < n; i++ {
		must(db.Put(ctx, "noise", []byte(fmt.Sprint(i)), WriteOptions{Author: "bot"}))
	}
	return db
}

// TestPathHistoryPastScanLimit: the only change of config/a lies more than the history scan limit below the head
// (found in review: the walk stopped there and answered "no change", the end of history). It answers a cursor,
// and following it finds the change, once.
func TestPathHistoryPastScanLimit(t *testing.T) {
	ctx := context.Background()
	db := longQuietHistory(t, 95)
	var found []uint64
	pages := 0
	for before := uint64(0); ; pages++ {
		p, err := db.PathHistory(ctx, HistoryQuery{Branch: "main", Resource: "config", Path: revision.MustPointer("/a"), Limit: 10, Before: before})
		if err != nil {
			t.Fatal(err)
		}
		chs, next := p.Changes, p.Next
		for _, c := range chs {
			found = append(found, c.Rev.Number)
		}
		if next == 0 {
			break
		}
		if before != 0 && next >= before {
			t.Fatalf("the cursor does not move: %d after %d", next, before)
		}
		before = next
	}
	if fmt.Sprint(found) != "[2]" || pages < 2 {
		t.Fatalf("path_history of config/a over %d pages: %v, want [2] past the scan limit", pages+1, found)
	}
}

// TestHistoryPastScanLimit: History filtered by a resource over the same history (found in review: it failed
// with ErrScanLimit and no cursor) answers an empty page and a cursor, and following it finds revision 2.
func TestHistoryPastScanLimit(t *testing.T) {
	ctx := context.Background()
	db := longQuietHistory(t, 95)
	var found []uint64
	q := HistoryQuery{Resource: "config"}
	for {
		page, err := db.History(ctx, q)
		if err != nil {
			t.Fatalf("history of config: %v", err)
		}
		for _, r := range page.Revisions {
			found = append(found, r.Number)
		}
		if page.Next == 0 {
			break
		}
		q.Before = page.Next
	}
	if fmt.Sprint(found) != "[2]" {
		t.Fatalf("history of config: %v, want [2]", found)
	}
}

// settableClock returns whatever time it was last set to.
type settableClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *settableClock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *settableClock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// TestBranchAtAfterClockStepBack: the wall clock steps back (NTP) after a branch is created; the next commit
// on the branch gets a time later than every revision's (clock) but earlier than the branch's creation entry in its
// head log. BRANCH@<a time after both> must be the branch's head.
func TestBranchAtAfterClockStepBack(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			t0 := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
			clk := &settableClock{t: t0}
			db, err := Open(ctx, open(t), &Options{Now: clk.now})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			clk.set(t0.Add(time.Second))
			must(db.Put(ctx, "doc", []byte(`1`), WriteOptions{}))
			clk.set(t0.Add(10 * time.Second))
			must(db.CreateBranch(ctx, "b", Ref{}, "op"))
			clk.set(t0.Add(5 * time.Second)) // the clock steps back 5 s
			r := must(db.Put(ctx, "doc", []byte(`2`), WriteOptions{Branch: "b"}))
			at := t0.Add(time.Hour)
			st, err := db.Resolve(ctx, Ref{Branch: "b", At: &at})
			if err != nil {
				t.Fatal(err)
			}
			head := must(db.Resolve(ctx, Ref{Branch: "b"}))
			if st.Rev.Number != head.Rev.Number {
				t.Fatalf("b@%s is revision %d; the branch's head since %s is %d", at.Format(time.RFC3339), st.Rev.Number, r.Time.Format(time.RFC3339), head.Rev.Number)
			}
		})
	}
}

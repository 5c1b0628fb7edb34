package snapshots

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/pgtest"
)

// itemsVariant is a version of a 300-element document (stored as many nodes), the same bytes whenever it is made;
// with onMain, its first element differs, so that it shares every node but those on the path to that element.
func itemsVariant(v int, onMain bool) []byte {
	var b strings.Builder
	b.WriteByte('[')
	for i := range 300 {
		if i > 0 {
			b.WriteByte(',')
		}
		name := fmt.Sprint("item ", i)
		if i == 0 && onMain {
			name = "on main"
		}
		fmt.Fprintf(&b, `{"id":%d,"name":%q,"price":%d,"variant":%d}`, i, name, (i*7+v*13)%1000, v) // members in the order reads give them
	}
	b.WriteByte(']')
	return []byte(b.String())
}

// TestPostgresGCWhileOthersWrite: garbage collection through one Dir (one server process) while two others commit
// to the same database in PostgreSQL. Each writer, again and again, writes a new document on a branch and deletes
// the branch (garbage, which the collector goes after at once: the grace is 1 ns), then writes nearly the same
// document on main, needing most of the nodes being collected (the rest stay garbage, and go). Every acknowledged revision on main reads back whole, with what
// was written, and the whole-database check finds nothing missing.
func TestPostgresGCWhileOthersWrite(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	a, b, c := pgDir(t, url), pgDir(t, url), pgDir(t, url)
	dbA := must(a.Create(ctx, "busy", "op"))
	must(dbA.Put(ctx, "items", itemsVariant(0, true), WriteOptions{}))
	dbB := must(b.Open(ctx, "busy"))
	dbC := must(c.Open(ctx, "busy"))

	type acked struct {
		rev     uint64
		variant int
	}
	var mu sync.Mutex
	var acks []acked
	retried := 0
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 2)
	for w, db := range []*DB{dbA, dbB} {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				v := 1000*(w+1) + i
				br := fmt.Sprintf("tmp-%d-%d", w, i)
				if _, err := db.CreateBranch(ctx, br, Ref{}, "op"); err != nil {
					errs <- err
					return
				}
				_, err := db.Put(ctx, "items", itemsVariant(v, false), WriteOptions{Branch: br})
				for errors.Is(err, ErrConflict) { // as below
					mu.Lock()
					retried++
					mu.Unlock()
					_, err = db.Put(ctx, "items", itemsVariant(v, false), WriteOptions{Branch: br})
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d on %s: %w", w, br, err)
					return
				}
				if _, err := db.DeleteBranch(ctx, br); err != nil {
					errs <- err
					return
				}
				// A write whose base a sweep batch changed starts over, and after ten such rounds is refused as a
				// conflict (the collector's batches are tiny here): the agent retries, with its key.
				r, err := db.Put(ctx, "items", itemsVariant(v, true), WriteOptions{IdempotencyKey: fmt.Sprintf("w%d-%d", w, i)})
				for errors.Is(err, ErrConflict) {
					mu.Lock()
					retried++
					mu.Unlock()
					r, err = db.Put(ctx, "items", itemsVariant(v, true), WriteOptions{IdempotencyKey: fmt.Sprintf("w%d-%d", w, i)})
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
				mu.Lock()
				acks = append(acks, acked{r.Revision, v})
				mu.Unlock()
			}
		})
	}
	removed, rounds := 0, 0
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acks) }
	for deadline := time.Now().Add(20 * time.Second); rounds < 3 || count() < 16; rounds++ {
		if time.Now().After(deadline) {
			break
		}
		rep, err := dbC.GC(ctx, &GCOptions{Grace: time.Nanosecond, Batch: 8})
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("gc round %d: %v", rounds, err)
		}
		removed += rep.RemovedNodes
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if removed == 0 || len(acks) < 8 {
		t.Fatalf("removed %d nodes while %d writes were acknowledged: nothing was tested", removed, len(acks))
	}
	for _, ack := range acks {
		v, _, err := dbC.Get(ctx, Ref{Revision: ack.rev}, "items", nil)
		if err != nil {
			t.Fatalf("acknowledged revision %d: %v", ack.rev, err)
		}
		if got := string(must(dbC.Forest().JSON(ctx, v))); got != string(itemsVariant(ack.variant, true)) {
			t.Fatalf("acknowledged revision %d does not hold variant %d", ack.rev, ack.variant)
		}
	}
	if rep := must(dbB.Check(ctx, nil)); len(rep.Problems) != 0 {
		t.Fatalf("check after gc under writers: %v", rep.Problems)
	}
	t.Logf("%d writes acknowledged through two Dirs (%d retried after a conflict) while a third collected %d nodes in %d rounds",
		len(acks), retried, removed, rounds)
}

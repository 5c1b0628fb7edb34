package snapshots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/pgtest"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// TestPGReadAfterDropElsewhere: a server that only reads a database another server dropped and created again
// must read the new one (or be told the old one was dropped), not "not found" for ever.
func TestPGReadAfterDropElsewhere(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	a, b := pgDir(t, url), pgDir(t, url)
	dbA := must(a.Create(ctx, "shop", "op"))
	must(dbA.Put(ctx, "doc", []byte(`{"v":1}`), WriteOptions{}))
	if get(t, dbA, Ref{}, "doc", "/v") != "1" {
		t.Fatal("setup")
	}
	if err := b.Drop(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	dbB := must(b.Create(ctx, "shop", "op"))
	must(dbB.Put(ctx, "doc", []byte(`{"v":2}`), WriteOptions{}))

	// Server A reads, as a read-only server would: open (from its cache), get.
	for i := 0; i < 3; i++ {
		db := must(a.Open(ctx, "shop"))
		v, _, err := db.Get(ctx, Ref{}, "doc", revision.MustPointer("/v"))
		if err != nil {
			if errors.Is(err, store.ErrDropped) {
				continue // told: the next open finds the new one
			}
			t.Fatalf("read %d through server A after the drop and re-create elsewhere: %v", i, err)
		}
		got := string(must(db.Forest().JSON(ctx, v)))
		if got == "2" {
			return
		}
		t.Fatalf("read %d through server A: /v = %s, want 2", i, got)
	}
	t.Fatal("server A never read the re-created database")
}

// TestPGSchemaOtherServer: a schema set through one server is enforced on the other's next write, including
// one whose DB had already loaded (cached) the schemas before.
func TestPGSchemaOtherServer(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	a, b := pgDir(t, url), pgDir(t, url)
	dbA := must(a.Create(ctx, "shop", "op"))
	dbB := must(b.Open(ctx, "shop"))
	must(dbB.Put(ctx, "item", []byte(`{"price":1}`), WriteOptions{}))
	must(dbA.SetSchema(ctx, "item", []byte(`{"type":"object","properties":{"price":{"type":"number"}},"required":["price"]}`), "op"))
	if _, err := dbB.Put(ctx, "item", []byte(`{"price":"free"}`), WriteOptions{}); !errors.Is(err, ErrSchemaViolation) {
		t.Fatalf("a violating write through the other server: %v", err)
	}
	must(dbA.RemoveSchema(ctx, "item", "op"))
	must(dbB.Put(ctx, "item", []byte(`{"price":"free"}`), WriteOptions{}))
}

// TestPGBranchRace: a branch deleted through one server and made again (elsewhere) is not written by the other
// server's stale view of it; writes racing with deletes lose nothing acknowledged.
func TestPGBranchRace(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	a, b := pgDir(t, url), pgDir(t, url)
	dbA := must(a.Create(ctx, "shop", "op"))
	dbB := must(b.Open(ctx, "shop"))
	must(dbA.Put(ctx, "doc", []byte(`{"v":0}`), WriteOptions{}))
	must(dbB.CreateBranch(ctx, "feat", Ref{}, "op"))
	r := must(dbB.Put(ctx, "doc", []byte(`{"v":1}`), WriteOptions{Branch: "feat"}))
	must(dbA.DeleteBranch(ctx, "feat"))
	if _, err := dbB.Put(ctx, "doc", []byte(`{"v":2}`), WriteOptions{Branch: "feat"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a write to a branch the other server deleted: %v", err)
	}
	must(dbA.CreateBranch(ctx, "feat", Ref{}, "op"))
	if _, err := dbB.Put(ctx, "doc", []byte(`{"v":3}`), WriteOptions{Branch: "feat", ExpectedHead: r.Revision}); !errors.Is(err, ErrConflict) {
		t.Fatalf("expected_head of the deleted branch accepted on the new one: %v", err)
	}
	if get(t, dbB, Ref{Branch: "feat"}, "doc", "/v") != "0" {
		t.Fatal("new feat")
	}
}

// TestPGDropWhileWriting: one server drops a database while another writes to it (and collects garbage):
// every write is acknowledged or refused as not found; none hangs; the writer's server then says the database
// is not there; re-created, it is the new one.
func TestPGDropWhileWriting(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	a, b := pgDir(t, url), pgDir(t, url)
	dbA := must(a.Create(ctx, "shop", "op"))
	must(dbA.Put(ctx, "log", []byte(`[]`), WriteOptions{}))
	errs := make(chan error, 8)
	started := make(chan struct{}, 8)
	done := make(chan struct{})
	for w := 0; w < 3; w++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; ; i++ {
				var err error
				if w == 2 {
					_, err = dbA.GC(ctx, &GCOptions{Grace: time.Nanosecond, Batch: 4})
				} else {
					_, err = dbA.Patch(ctx, "log", ops(t, `[{"op":"add","path":"/-","value":1}]`), WriteOptions{})
				}
				if i == 2 {
					started <- struct{}{}
				}
				if err != nil {
					if !errors.Is(err, ErrNotFound) && !errors.Is(err, store.ErrDropped) {
						errs <- fmt.Errorf("worker %d: %w", w, err)
					}
					if i < 2 {
						started <- struct{}{}
					}
					return
				}
			}
		}()
	}
	for range 3 {
		<-started
	}
	if err := b.Drop(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(20 * time.Second)
	for range 3 {
		select {
		case <-done:
		case <-timeout:
			t.Fatal("a worker hung after the drop")
		}
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, err := a.Open(ctx, "shop"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("opening after the other server dropped it: %v", err)
	}
}

// TestPGSameKeyTwoServers: the same write sent with the same idempotency key through two servers at once
// commits once; the other is a replay of it. Blind appends through both servers lose nothing, and main's revisions
// form one line (each one's parent is the one before).
func TestPGSameKeyTwoServers(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	a, b := pgDir(t, url), pgDir(t, url)
	dbA := must(a.Create(ctx, "shop", "op"))
	dbB := must(b.Open(ctx, "shop"))
	must(dbA.Put(ctx, "log", []byte(`[]`), WriteOptions{}))
	const keys = 12
	var wg sync.WaitGroup
	errs := make(chan error, 4*keys)
	revs := make([][2]uint64, keys)
	for i := range keys {
		for s, db := range []*DB{dbA, dbB} {
			wg.Go(func() {
				r, err := db.Patch(ctx, "log", ops(t, fmt.Sprintf(`[{"op":"add","path":"/-","value":%d}]`, i)), WriteOptions{IdempotencyKey: fmt.Sprint("k", i)})
				for errors.Is(err, ErrConflict) {
					r, err = db.Patch(ctx, "log", ops(t, fmt.Sprintf(`[{"op":"add","path":"/-","value":%d}]`, i)), WriteOptions{IdempotencyKey: fmt.Sprint("k", i)})
				}
				if err != nil {
					errs <- err
					return
				}
				revs[i][s] = r.Revision
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, r := range revs {
		if r[0] != r[1] {
			t.Errorf("key k%d: revision %d through one server, %d through the other", i, r[0], r[1])
		}
	}
	v, _, err := dbB.Get(ctx, Ref{}, "log", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	if err := json.Unmarshal(must(dbB.Forest().JSON(ctx, v)), &got); err != nil || len(got) != keys {
		t.Fatalf("log %v (%v): want %d appends once each", got, err, keys)
	}
	page := must(dbA.History(ctx, HistoryQuery{Limit: 1000}))
	for _, rec := range page.Revisions {
		if rec.Number > 1 && (len(rec.Parents) != 1 || rec.Parents[0] != rec.Number-1) {
			t.Fatalf("revision %d has parents %v: main's history is not one line", rec.Number, rec.Parents)
		}
	}
}

// TestPGBranchCreateDeleteRace: the same branch made, and then deleted, through two servers at once: one
// wins each time, the other is told why.
func TestPGBranchCreateDeleteRace(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	a, b := pgDir(t, url), pgDir(t, url)
	dbA := must(a.Create(ctx, "shop", "op"))
	dbB := must(b.Open(ctx, "shop"))
	for i := range 10 {
		name := fmt.Sprint("br", i)
		var wg sync.WaitGroup
		var created, deleted [2]error
		for s, db := range []*DB{dbA, dbB} {
			wg.Go(func() { _, created[s] = db.CreateBranch(ctx, name, Ref{}, fmt.Sprint("s", s)) })
		}
		wg.Wait()
		if (created[0] == nil) == (created[1] == nil) {
			t.Fatalf("%s made twice at once: %v / %v", name, created[0], created[1])
		}
		for _, err := range created {
			if err != nil && !errors.Is(err, ErrConflict) {
				t.Fatalf("the loser of a create race: %v", err)
			}
		}
		for s, db := range []*DB{dbA, dbB} {
			wg.Go(func() { _, deleted[s] = db.DeleteBranch(ctx, name) })
		}
		wg.Wait()
		if (deleted[0] == nil) == (deleted[1] == nil) {
			t.Fatalf("%s deleted twice at once: %v / %v", name, deleted[0], deleted[1])
		}
		for _, err := range deleted {
			if err != nil && !errors.Is(err, ErrNotFound) {
				t.Fatalf("the loser of a delete race: %v", err)
			}
		}
	}
	if bs := must(dbB.Branches(ctx)); len(bs) != 1 {
		t.Fatalf("branches left: %v", bs)
	}
}

// TestPGListAfterDropElsewhere: a server's listing of a database another server dropped is an error saying
// so, not an empty list of branches.
func TestPGListAfterDropElsewhere(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	a, b := pgDir(t, url), pgDir(t, url)
	dbA := must(a.Create(ctx, "shop", "op"))
	must(dbA.Branches(ctx))
	if err := b.Drop(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	bs, err := dbA.Branches(ctx)
	if !errors.Is(err, store.ErrDropped) {
		t.Fatalf("branches of a database dropped elsewhere: %v, %v; want ErrDropped", bs, err)
	}
	if _, err := a.Open(ctx, "shop"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("opening it again: %v", err)
	}
}

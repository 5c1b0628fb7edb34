package snapshots

// Tests of the writer's gathering of concurrent requests into one transaction (writer_gather.go): it changes which
// requests share a transaction, never what an answer is or when it may be given.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// traceOf collects the writer's transactions for db until the test ends.
func traceOf(t *testing.T, db *DB) func() []writerTrace {
	var mu sync.Mutex
	var got []writerTrace
	f := func(w writerTrace) {
		if w.DB != db {
			return
		}
		mu.Lock()
		got = append(got, w)
		mu.Unlock()
	}
	writerTraceHook.Store(&f)
	t.Cleanup(func() { writerTraceHook.Store(nil) })
	return func() []writerTrace {
		mu.Lock()
		defer mu.Unlock()
		return append([]writerTrace(nil), got...)
	}
}

func TestGathererDecisions(t *testing.T) {
	var g gatherer
	if _, _, ok := g.wait(1); ok {
		t.Fatal("waits before any transaction")
	}
	// A lone caller: one answered, nobody queued. It must never wait (serial latency).
	for i := 0; i < 5; i++ {
		g.done(1, 0, time.Millisecond)
		if _, _, ok := g.wait(1); ok {
			t.Fatal("a lone caller waits")
		}
	}
	// Seven answered while one waited: eight expected, so a group holding one waits, bounded by the transaction's time.
	g.done(7, 1, time.Millisecond)
	total, quiet, ok := g.wait(1)
	if !ok || total <= 0 || total > g.txTime/gatherFraction || quiet <= 0 || quiet > total {
		t.Fatalf("after 7+1: wait(1) = %v, %v, %v (txTime %v)", total, quiet, ok, g.txTime)
	}
	if _, _, ok := g.wait(8); ok {
		t.Fatal("waits with every expected request in hand")
	}
	// A slow disk does not make it wait without bound.
	g.done(8, 0, time.Second)
	for i := 0; i < 20; i++ {
		g.done(8, 0, time.Second)
	}
	if total, _, _ := g.wait(1); total > gatherMax {
		t.Fatalf("wait %v beyond gatherMax", total)
	}
}

// Serial commits never wait for company: each transaction starts as soon as its request arrives.
func TestSerialCommitsDoNotGather(t *testing.T) {
	ctx := context.Background()
	be, err := store.OpenBolt(filepath.Join(t.TempDir(), "db"+Ext), nil)
	if err != nil {
		t.Fatal(err)
	}
	db, _ := openTest(t, be)
	trace := traceOf(t, db)
	must(db.Put(ctx, "doc", []byte(`{"n":0}`), WriteOptions{}))
	for i := 1; i <= 30; i++ {
		must(db.Patch(ctx, "doc", patchOp("/n", i), WriteOptions{}))
	}
	txs := trace()
	if len(txs) != 31 {
		t.Fatalf("%d transactions for 31 serial commits", len(txs))
	}
	for i, w := range txs {
		if w.Gather != 0 || w.Commits != 1 {
			t.Fatalf("serial commit %d: %+v", i, w)
		}
	}
}

// durableBackend records the last revision of every transaction that has committed (Update returned nil): an
// answer naming a later revision would have been given before its transaction was durable.
type durableBackend struct {
	store.Backend
	durable atomic.Uint64
}

func (d *durableBackend) Update(ctx context.Context, fn func(store.CatalogTx) error) error {
	var last uint64
	err := d.Backend.Update(ctx, func(tx store.CatalogTx) error {
		if err := fn(tx); err != nil {
			return err
		}
		var err error
		last, err = tx.LastRevision()
		return err
	})
	if err == nil {
		for {
			cur := d.durable.Load()
			if last <= cur || d.durable.CompareAndSwap(cur, last) {
				break
			}
		}
	}
	return err
}

// Eight writers in a loop, half of them with expected_head and idempotency keys: every answer follows its durable
// commit, no update is lost, conflicts name a head that was durable, a retried key replays, and the writer does put
// several commits into one transaction.
func TestGatheredWritersAnswerAfterDurable(t *testing.T) {
	ctx := context.Background()
	be, err := store.OpenBolt(filepath.Join(t.TempDir(), "db"+Ext), nil)
	if err != nil {
		t.Fatal(err)
	}
	dbe := &durableBackend{Backend: be}
	db, _ := openTest(t, dbe)
	trace := traceOf(t, db)
	must(db.Put(ctx, "doc", []byte(`{"n":0}`), WriteOptions{}))
	const writers, each = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	var revs sync.Map
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				opts := WriteOptions{}
				if w%2 == 0 {
					opts.IdempotencyKey = fmt.Sprintf("w%d-%d", w, i)
					st, err := db.Resolve(ctx, Ref{})
					if err != nil {
						errs <- err
						return
					}
					opts.ExpectedHead = st.Rev.Number
				}
				res, err := db.Patch(ctx, "doc", patchOp(fmt.Sprintf("/w%d", w), i), opts)
				var ce *ConflictError
				switch {
				case errors.As(err, &ce):
					if ce.Head > dbe.durable.Load() || ce.Head < opts.ExpectedHead {
						errs <- fmt.Errorf("conflict names head %d (expected %d, durable %d)", ce.Head, opts.ExpectedHead, dbe.durable.Load())
						return
					}
					i-- // retry on the new head
					continue
				case err != nil:
					errs <- err
					return
				}
				if d := dbe.durable.Load(); res.Revision > d {
					errs <- fmt.Errorf("answered revision %d before it was durable (durable %d)", res.Revision, d)
					return
				}
				if _, dup := revs.LoadOrStore(res.Revision, w); dup {
					errs <- fmt.Errorf("revision %d answered twice", res.Revision)
					return
				}
				if opts.IdempotencyKey != "" {
					again, err := db.Patch(ctx, "doc", patchOp(fmt.Sprintf("/w%d", w), i), opts)
					if err != nil || !again.Replayed || again.Revision != res.Revision {
						errs <- fmt.Errorf("retry of key %s: %+v, %v; want replay of %d", opts.IdempotencyKey, again, err, res.Revision)
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for w := 0; w < writers; w++ {
		if v := get(t, db, Ref{}, "doc", fmt.Sprintf("/w%d", w)); v != fmt.Sprint(each-1) {
			t.Fatalf("/w%d = %s, want %d (lost update)", w, v, each-1)
		}
	}
	most := 0
	for _, w := range trace() {
		most = max(most, w.Commits)
	}
	t.Logf("%d transactions, at most %d commits in one", len(trace()), most)
	if most < 2 {
		t.Fatalf("no two of %d concurrent commits shared a transaction", writers*each)
	}
}

// Closing the database while the writer gathers answers every queued request and ends promptly.
func TestCloseWhileGathering(t *testing.T) {
	ctx := context.Background()
	be, err := store.OpenBolt(filepath.Join(t.TempDir(), "db"+Ext), nil)
	if err != nil {
		t.Fatal(err)
	}
	dbe := &durableBackend{Backend: be}
	db, _ := openTest(t, dbe)
	must(db.Put(ctx, "doc", []byte(`{"n":0}`), WriteOptions{}))
	var wg sync.WaitGroup
	var answered atomic.Int64
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				res, err := db.Patch(ctx, "doc", patchOp(fmt.Sprintf("/w%d", w), i), WriteOptions{})
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				if res.Revision > dbe.durable.Load() {
					errs <- fmt.Errorf("revision %d answered before durable", res.Revision)
					return
				}
				answered.Add(1)
			}
		}(w)
	}
	time.Sleep(100 * time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- db.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if answered.Load() == 0 {
		t.Fatal("no commit before Close")
	}
}

// Two requests with one idempotency key in one group (a client retrying while its first attempt is still queued):
// the second depends on the first, so it waits for the group to be durable and replays it.
func TestSameKeyTwiceInOneGroup(t *testing.T) {
	ctx := context.Background()
	be, err := store.OpenBolt(filepath.Join(t.TempDir(), "db"+Ext), nil)
	if err != nil {
		t.Fatal(err)
	}
	db, _ := openTest(t, be)
	must(db.Put(ctx, "doc", []byte(`{"n":0}`), WriteOptions{}))
	mk := func(v int) *request {
		ops := patchOp("/n", v)
		return &request{ctx: ctx, done: make(chan outcome, 1), opts: WriteOptions{IdempotencyKey: "k"},
			change: func(ctx context.Context, f *revision.Forest, head State) (*revision.Change, []uint64, error) {
				c, err := f.Patch(ctx, head.Root, []revision.Operation{{Op: ops[0].Op, Path: "/doc/n", Value: ops[0].Value, HasValue: true}})
				return c, nil, err
			}}
	}
	a, b := mk(1), mk(1)
	db.commitGroup(nil, []*request{a, b}, 0, 0)
	oa, ob := <-a.done, <-b.done
	if oa.err != nil || ob.err != nil {
		t.Fatalf("errors: %v, %v", oa.err, ob.err)
	}
	if oa.res.Replayed || !ob.res.Replayed || oa.res.Revision != ob.res.Revision {
		t.Fatalf("first %+v, second %+v: want the second to replay the first", oa.res, ob.res)
	}
}

// The writer plans a group from what its previous group left (the seed) without reading the catalog. Another
// process (here a second Shared handle on the file) committing in between must not be missed: a write builds on
// its revision, an expected_head naming it succeeds, and a conflict names the real head, not the seeded one.
func TestSeedAfterAnotherProcessCommits(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db"+Ext)
	open := func() *DB {
		s, err := store.OpenShared(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		db, _ := openTest(t, s)
		return db
	}
	a := open()
	b := open()
	must(a.Put(ctx, "doc", []byte(`{"n":0,"m":0}`), WriteOptions{}))
	r1 := must(a.Patch(ctx, "doc", patchOp("/n", 1), WriteOptions{})) // a's writer now holds a seed
	r2 := must(b.Patch(ctx, "doc", patchOp("/m", 2), WriteOptions{ExpectedHead: r1.Revision}))
	// Expected head is b's revision: a's seed says r1, the real head is r2.
	r3, err := a.Patch(ctx, "doc", patchOp("/n", 3), WriteOptions{ExpectedHead: r2.Revision})
	if err != nil || r3.Parent != r2.Revision {
		t.Fatalf("write on the other process's head: %+v, %v", r3, err)
	}
	if got := get(t, a, Ref{}, "doc", ""); got != `{"m":2,"n":3}` {
		t.Fatalf("doc = %s: an update was lost", got)
	}
	r4 := must(b.Patch(ctx, "doc", patchOp("/m", 4), WriteOptions{}))
	// A stale expected head: the conflict must name b's r4, which a's seed (r3) does not know.
	_, err = a.Patch(ctx, "doc", patchOp("/n", 5), WriteOptions{ExpectedHead: r3.Revision})
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Head != r4.Revision {
		t.Fatalf("stale expected head: %v, want a conflict naming %d", err, r4.Revision)
	}
	// And a plain write builds on r4.
	r6 := must(a.Patch(ctx, "doc", patchOp("/n", 6), WriteOptions{}))
	if r6.Parent != r4.Revision || get(t, a, Ref{}, "doc", "") != `{"m":4,"n":6}` {
		t.Fatalf("write after the other process: %+v, doc %s", r6, get(t, a, Ref{}, "doc", ""))
	}
	// A patch that fails on content the other process changed is answered from the committed state.
	must(b.Patch(ctx, "doc", []revision.Operation{{Op: "remove", Path: "/m"}}, WriteOptions{}))
	if _, err := a.Patch(ctx, "doc", []revision.Operation{{Op: "remove", Path: "/m"}}, WriteOptions{}); err == nil {
		t.Fatal("removing a member the other process removed succeeded")
	}
}

// A write refused inside its transaction (its InTx hook) while another waits behind it: the other lands on what is
// really durable, and no answer rests on the refused write. (A writer that planned the next group on the state the
// one in flight would leave had to catch exactly this; see docs/benchmarks.md on pipelining.)
func TestRefusedWriteDoesNotCarryTheNext(t *testing.T) {
	ctx := context.Background()
	be, err := store.OpenBolt(filepath.Join(t.TempDir(), "db"+Ext), nil)
	if err != nil {
		t.Fatal(err)
	}
	db, _ := openTest(t, be)
	base := must(db.Put(ctx, "doc", []byte(`{"a":0,"b":0}`), WriteOptions{}))
	inTx := make(chan struct{})
	refused := errors.New("refused inside the transaction")
	first := make(chan outcome, 1)
	go func() {
		res, err := db.Patch(ctx, "doc", patchOp("/a", 1), WriteOptions{InTx: func(store.CatalogTx, store.RevisionRecord) error {
			close(inTx)
			time.Sleep(50 * time.Millisecond) // the next request arrives and is planned meanwhile
			return refused
		}})
		first <- outcome{res: res, err: err}
	}()
	<-inTx
	second, err := db.Patch(ctx, "doc", patchOp("/b", 2), WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := <-first; !errors.Is(got.err, refused) {
		t.Fatalf("the refused write answered %+v, %v", got.res, got.err)
	}
	if second.Parent != base.Revision {
		t.Fatalf("the second write's parent is %d, want %d (the refused write never landed)", second.Parent, base.Revision)
	}
	if got := get(t, db, Ref{}, "doc", ""); got != `{"a":0,"b":2}` {
		t.Fatalf("doc = %s, want {\"a\":0,\"b\":2}", got)
	}
}

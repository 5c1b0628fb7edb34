package snapshots

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// fakeClock makes time travel testable: every call advances one second.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

func openTest(t *testing.T, be store.Backend) (*DB, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)}
	db, err := Open(context.Background(), be, &Options{Now: clk.now, Creator: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, clk
}

func get(t *testing.T, db *DB, ref Ref, resource, ptr string) string {
	t.Helper()
	v, _, err := db.Get(context.Background(), ref, resource, revision.MustPointer(ptr))
	if err != nil {
		t.Fatalf("get %s%s at %s: %v", resource, ptr, ref, err)
	}
	b, err := db.Forest().JSON(context.Background(), v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// must returns v, or fails the test (by panicking: Go cannot pass t along with a multi-value call).
func must[T any](v T, err error) T {
	if err != nil {
		panic(fmt.Sprintf("unexpected error: %v", err))
	}
	return v
}

func ops(t *testing.T, s string) []revision.Operation {
	t.Helper()
	o, err := revision.ParsePatch([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestHistoryStory is the life of a database: commits, a snapshot, a branch, time travel, revert, restore, history.
func TestHistoryStory(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) { testHistoryStory(t, open(t)) })
	}
}

func testHistoryStory(t *testing.T, be store.Backend) {
	ctx := context.Background()
	db, _ := openTest(t, be)
	w := WriteOptions{Author: "agent-1", Tool: "put"}

	r2 := must(db.Put(ctx, "config", []byte(`{"flags":{"beta":true},"limit":10}`), w))
	if r2.Revision != 2 || r2.Parent != 1 || r2.Branch != "main" || fmt.Sprint(r2.Resources) != "[config]" || r2.NewNodes != 0 {
		t.Fatalf("first put: %+v", r2)
	}
	r3 := must(db.Put(ctx, "users", []byte(`[{"name":"ada"}]`), w))
	must(db.CreateSnapshot(ctx, "before-beta-off", Ref{}, "known good", "op"))
	r4 := must(db.Patch(ctx, "config", ops(t, `[{"op":"replace","path":"/flags/beta","value":false}]`), WriteOptions{Author: "agent-2", Message: "turn beta off"}))
	if fmt.Sprint(r4.Resources) != "[config]" {
		t.Fatalf("touched %v", r4.Resources)
	}
	// Every ref kind reads the right state.
	for _, c := range []struct {
		ref  Ref
		want string
	}{
		{Ref{}, "false"}, {Ref{Revision: 3}, "true"}, {Ref{Snapshot: "before-beta-off"}, "true"},
		{Ref{Name: "before-beta-off"}, "true"}, {Ref{Branch: "main", At: &r3.Time}, "true"},
		{Ref{Branch: "main", At: &r4.Time}, "false"}, {Ref{Branch: "main", At: ptrTime(r4.Time.Add(-time.Nanosecond))}, "true"},
	} {
		if got := get(t, db, c.ref, "config", "/flags/beta"); got != c.want {
			t.Fatalf("at %s: %s, want %s", c.ref, got, c.want)
		}
	}
	// Before the database existed there is nothing to read.
	if _, err := db.Resolve(ctx, Ref{Branch: "main", At: ptrTime(r2.Time.Add(-time.Hour))}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("got %v", err)
	}

	// A branch is O(1) and independent.
	b := must(db.CreateBranch(ctx, "try-limit", Ref{}, "agent-1"))
	if b.Head != 4 || b.Base != 4 {
		t.Fatalf("branch %+v", b)
	}
	r5 := must(db.Patch(ctx, "config", ops(t, `[{"op":"replace","path":"/limit","value":99}]`), WriteOptions{Branch: "try-limit"}))
	if r5.Branch != "try-limit" || r5.Parent != 4 {
		t.Fatalf("branch commit %+v", r5)
	}
	if get(t, db, Ref{}, "config", "/limit") != "10" || get(t, db, Ref{Branch: "try-limit"}, "config", "/limit") != "99" {
		t.Fatal("branch write leaked into main")
	}

	// History, filtered by resource and by path.
	page := must(db.History(ctx, HistoryQuery{}))
	if nums(page.Revisions) != "[4 3 2 1]" {
		t.Fatalf("main history %s", nums(page.Revisions))
	}
	page = must(db.History(ctx, HistoryQuery{Resource: "config"}))
	if nums(page.Revisions) != "[4 2]" {
		t.Fatalf("config history %s", nums(page.Revisions))
	}
	page = must(db.History(ctx, HistoryQuery{Branch: "try-limit", Resource: "config", Path: revision.MustPointer("/flags/beta")}))
	if nums(page.Revisions) != "[4 2]" {
		t.Fatalf("beta history on the branch %s", nums(page.Revisions))
	}
	page = must(db.History(ctx, HistoryQuery{Limit: 2}))
	if nums(page.Revisions) != "[4 3]" || page.Next != 3 {
		t.Fatalf("page 1 %s next %d", nums(page.Revisions), page.Next)
	}
	page = must(db.History(ctx, HistoryQuery{Limit: 2, Before: page.Next}))
	if nums(page.Revisions) != "[2 1]" {
		t.Fatalf("page 2 %s", nums(page.Revisions))
	}

	// Blame for one value.
	changes, _ := must2(t)(db.PathHistory(ctx, HistoryQuery{Branch: "main", Resource: "config", Path: revision.MustPointer("/flags/beta"), Limit: 10}))
	if len(changes) != 2 || changes[0].Rev.Number != 4 || changes[0].Rev.Author != "agent-2" {
		t.Fatalf("path history %+v", changes)
	}
	if s := must(db.Forest().JSON(ctx, changes[0].Before)); string(s) != "true" {
		t.Fatalf("before %s", s)
	}
	if changes[1].Before.IsValid() {
		t.Fatal("the value did not exist before revision 2")
	}

	// Show a revision with its change.
	d := must(db.ShowRevision(ctx, 4, 10))
	if d.Rev.Message != "turn beta off" || d.Diff.Counts.Replaced != 1 || d.Diff.Operations[0].Path != "/config/flags/beta" {
		t.Fatalf("show %+v %+v", d.Rev, d.Diff.Operations)
	}

	// Revert reuses the old root: no nodes.
	r6 := must(db.Revert(ctx, Ref{Snapshot: "before-beta-off"}, WriteOptions{}))
	if r6.NewNodes != 0 || get(t, db, Ref{}, "config", "/flags/beta") != "true" {
		t.Fatalf("revert %+v", r6)
	}
	st := must(db.Resolve(ctx, Ref{}))
	if st3 := must(db.Resolve(ctx, Ref{Revision: 3})); st.Root != st3.Root {
		t.Fatal("revert should reuse revision 3's root")
	}
	// Restore one field from the branch, then undelete a resource.
	must(db.Restore(ctx, "config", revision.MustPointer("/limit"), Ref{Branch: "try-limit"}, WriteOptions{}))
	if get(t, db, Ref{}, "config", "/limit") != "99" || get(t, db, Ref{}, "config", "/flags/beta") != "true" {
		t.Fatal("restore of one field")
	}
	must(db.DeleteResource(ctx, "users", WriteOptions{}))
	if _, _, err := db.Get(ctx, Ref{}, "users", nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted resource: %v", err)
	}
	must(db.Restore(ctx, "users", nil, Ref{Revision: 3}, WriteOptions{}))
	if get(t, db, Ref{}, "users", "/0/name") != `"ada"` {
		t.Fatal("undelete")
	}
	// An array element restored takes its old value in its place (found in review: it was inserted before it), and
	// one the array has lost since comes back at the end.
	r := must(db.Put(ctx, "arr", []byte(`[1,9,3]`), WriteOptions{}))
	must(db.Patch(ctx, "arr", ops(t, `[{"op":"replace","path":"/1","value":2},{"op":"remove","path":"/2"}]`), WriteOptions{}))
	must(db.Restore(ctx, "arr", revision.MustPointer("/1"), Ref{Revision: r.Revision}, WriteOptions{}))
	if got := get(t, db, Ref{}, "arr", ""); got != `[1,9]` {
		t.Fatalf("restore of an array element: %s, want [1,9]", got)
	}
	must(db.Restore(ctx, "arr", revision.MustPointer("/2"), Ref{Revision: r.Revision}, WriteOptions{}))
	if got := get(t, db, Ref{}, "arr", ""); got != `[1,9,3]` {
		t.Fatalf("restore of a lost array element: %s, want [1,9,3]", got)
	}
}

func must2(t *testing.T) func(*PathHistoryPage, error) ([]PathChange, uint64) {
	return func(p *PathHistoryPage, err error) ([]PathChange, uint64) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return p.Changes, p.Next
	}
}

func nums(rs []store.RevisionRecord) string {
	var n []uint64
	for _, r := range rs {
		n = append(n, r.Number)
	}
	return fmt.Sprint(n)
}

func TestWriteGuards(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) { testWriteGuards(t, open(t)) })
	}
}

func testWriteGuards(t *testing.T, be store.Backend) {
	ctx := context.Background()
	db, _ := openTest(t, be)
	must(db.Put(ctx, "doc", []byte(`{"n":1}`), WriteOptions{}))

	// expected_head: a stale writer is refused with the current head.
	_, err := db.Patch(ctx, "doc", ops(t, `[{"op":"replace","path":"/n","value":2}]`), WriteOptions{ExpectedHead: 1})
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Head != 2 || !strings.Contains(err.Error(), "branch main is at revision 2, not 1") {
		t.Fatalf("got %v", err)
	}
	// Idempotency: a retry returns the original revision and commits nothing.
	w := WriteOptions{IdempotencyKey: "k-1"}
	a := must(db.Patch(ctx, "doc", ops(t, `[{"op":"replace","path":"/n","value":3}]`), w))
	b := must(db.Patch(ctx, "doc", ops(t, `[{"op":"replace","path":"/n","value":4}]`), w))
	if b.Revision != a.Revision || !b.Replayed || get(t, db, Ref{}, "doc", "/n") != "3" {
		t.Fatalf("replay %+v vs %+v", b, a)
	}
	// A failing patch writes nothing; paths in errors are inside the resource.
	_, err = db.Patch(ctx, "doc", ops(t, `[{"op":"test","path":"/n","value":3},{"op":"remove","path":"/missing"}]`), WriteOptions{})
	if !errors.Is(err, revision.ErrNotFound) || !strings.Contains(err.Error(), `"/missing"`) {
		t.Fatalf("got %v", err)
	}
	if st := must(db.Resolve(ctx, Ref{})); st.Rev.Number != a.Revision {
		t.Fatal("a failed patch committed")
	}
	// Names are validated and unknown names get suggestions.
	if _, err := db.Put(ctx, "bad name", []byte(`1`), WriteOptions{}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("got %v", err)
	}
	_, _, err = db.Get(ctx, Ref{}, "dco", nil)
	var nf *NotFoundError
	if !errors.As(err, &nf) || len(nf.DidYouMean) == 0 || nf.DidYouMean[0] != "doc" {
		t.Fatalf("got %v", err)
	}
	must(db.CreateBranch(ctx, "feature", Ref{}, ""))
	if _, err := db.Resolve(ctx, Ref{Branch: "featur"}); !errors.As(err, &nf) || nf.DidYouMean[0] != "feature" {
		t.Fatalf("got %v", err)
	}
	// Branches and snapshots share a namespace.
	if _, err := db.CreateSnapshot(ctx, "feature", Ref{}, "", ""); !errors.Is(err, ErrConflict) {
		t.Fatalf("got %v", err)
	}
	if _, err := db.DeleteBranch(ctx, "main"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("got %v", err)
	}
	if _, err := db.Resolve(ctx, Ref{Revision: 99}); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "revisions run from 1 to") {
		t.Fatalf("got %v", err)
	}
	if err := (Ref{Revision: 1, Snapshot: "x"}).Validate(); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("got %v", err)
	}
}

func TestPromote(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) { testPromote(t, open(t)) })
	}
}

func testPromote(t *testing.T, be store.Backend) {
	ctx := context.Background()
	db, _ := openTest(t, be)
	must(db.Put(ctx, "cfg", []byte(`{"a":1,"b":1}`), WriteOptions{}))
	must(db.CreateBranch(ctx, "x", Ref{}, ""))
	must(db.Patch(ctx, "cfg", ops(t, `[{"op":"replace","path":"/a","value":2}]`), WriteOptions{Branch: "x"}))
	// main did not move: fast-forward.
	p := must(db.Promote(ctx, "x", "", WriteOptions{}))
	if !p.FastForward || get(t, db, Ref{}, "cfg", "/a") != "2" || p.NewNodes != 0 {
		t.Fatalf("ff %+v", p)
	}
	// Both moved, disjoint paths: a merge revision with two parents.
	must(db.Patch(ctx, "cfg", ops(t, `[{"op":"replace","path":"/b","value":5}]`), WriteOptions{Branch: "x"}))
	must(db.Put(ctx, "other", []byte(`true`), WriteOptions{}))
	p = must(db.Promote(ctx, "x", "main", WriteOptions{Message: "promote x"}))
	if p.FastForward || get(t, db, Ref{}, "cfg", "") != `{"a":2,"b":5}` || get(t, db, Ref{}, "other", "") != "true" {
		t.Fatalf("merge %+v", p)
	}
	rec := must(db.ShowRevision(ctx, p.Revision, 10)).Rev
	if len(rec.Parents) != 2 {
		t.Fatalf("merge parents %v", rec.Parents)
	}
	// Same path both ways: conflict, nothing written.
	must(db.Patch(ctx, "cfg", ops(t, `[{"op":"replace","path":"/a","value":7}]`), WriteOptions{Branch: "x"}))
	must(db.Patch(ctx, "cfg", ops(t, `[{"op":"replace","path":"/a","value":8}]`), WriteOptions{}))
	head := must(db.Resolve(ctx, Ref{})).Rev.Number
	p, err := db.Promote(ctx, "x", "main", WriteOptions{})
	if !errors.Is(err, ErrConflict) || len(p.Conflicts) != 1 || p.Conflicts[0].Path != "/cfg/a" {
		t.Fatalf("conflict: %v %+v", err, p)
	}
	if must(db.Resolve(ctx, Ref{})).Rev.Number != head {
		t.Fatal("a conflicting promote wrote")
	}
}

// TestConcurrentWriters: many writers on one database; no lost update, revision numbers and times strictly increase,
// and group commit puts several revisions in one transaction.
func TestConcurrentWriters(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) { testConcurrentWriters(t, open(t)) })
	}
}

func testConcurrentWriters(t *testing.T, be store.Backend) {
	ctx := context.Background()
	cb := &countingBackend{Backend: be}
	db, _ := openTest(t, cb)
	must(db.Put(ctx, "counter", []byte(`{"n":0}`), WriteOptions{}))
	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				// Read-modify-write with expected_head, retrying on conflict: no update may be lost.
				for {
					v, st, err := db.Get(ctx, Ref{}, "counter", revision.MustPointer("/n"))
					if err != nil {
						errs <- err
						return
					}
					n := must(db.Forest().JSON(ctx, v))
					var x int
					fmt.Sscan(string(n), &x)
					_, err = db.Patch(ctx, "counter", ops(t, fmt.Sprintf(`[{"op":"replace","path":"/n","value":%d}]`, x+1)), WriteOptions{ExpectedHead: st.Rev.Number})
					if errors.Is(err, ErrConflict) {
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					break
				}
				// And a blind append that always lands.
				if _, err := db.Patch(ctx, "counter", ops(t, fmt.Sprintf(`[{"op":"add","path":"/w%d_%d","value":true}]`, w, i)), WriteOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := get(t, db, Ref{}, "counter", "/n"); got != fmt.Sprint(writers*each) {
		t.Fatalf("lost updates: counter is %s, want %d", got, writers*each)
	}
	page := must(db.History(ctx, HistoryQuery{Limit: 1000}))
	for i := 1; i < len(page.Revisions); i++ {
		a, b := page.Revisions[i-1], page.Revisions[i]
		if a.Number <= b.Number || !a.Time.After(b.Time) {
			t.Fatalf("revisions %d@%v and %d@%v out of order", a.Number, a.Time, b.Number, b.Time)
		}
	}
	if want := 2 + 2*writers*each; len(page.Revisions) != want {
		t.Fatalf("%d revisions on main, want %d", len(page.Revisions), want)
	}
	t.Logf("%d commits in %d transactions", 2*writers*each, cb.updates())
}

type countingBackend struct {
	store.Backend
	mu sync.Mutex
	n  int
}

func (c *countingBackend) Update(ctx context.Context, fn func(store.CatalogTx) error) error {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.Backend.Update(ctx, fn)
}

func (c *countingBackend) updates() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// A record written with InTx lands in the revision's own transaction: both or neither.
func TestInTxLandsWithTheRevision(t *testing.T) {
	ctx := context.Background()
	be := store.NewMemBackend()
	db, _ := openTest(t, be)
	mark := func(tx store.CatalogTx, rec store.RevisionRecord) error {
		return tx.Put("plans", "p1", []byte(fmt.Sprint(rec.Number)))
	}
	r := must(db.Put(ctx, "doc", []byte(`1`), WriteOptions{InTx: mark}))
	var got []byte
	must(0, be.View(ctx, func(c store.CatalogReader) error { got, _, _ = c.Get("plans", "p1"); return nil }))
	if string(got) != fmt.Sprint(r.Revision) {
		t.Fatalf("marker %q for revision %d", got, r.Revision)
	}
	fail := func(store.CatalogTx, store.RevisionRecord) error { return errors.New("refused") }
	if _, err := db.Put(ctx, "doc", []byte(`2`), WriteOptions{InTx: fail}); err == nil {
		t.Fatal("an InTx error must fail the write")
	}
	if get(t, db, Ref{}, "doc", "") != "1" {
		t.Fatal("the revision landed without its InTx record")
	}
}

func TestUnchangedWriteMakesNoRevision(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t, store.NewMemBackend())
	r := must(db.Put(ctx, "doc", []byte(`{"a":1}`), WriteOptions{}))
	again := must(db.Put(ctx, "doc", []byte(`{ "a" : 1 }`), WriteOptions{}))
	if !again.Unchanged || again.Revision != r.Revision {
		t.Fatalf("identical put: %+v", again)
	}
	if st := must(db.Resolve(ctx, Ref{})); st.Rev.Number != r.Revision {
		t.Fatal("an unchanged write made a revision")
	}
}

func ptrTime(t time.Time) *time.Time { return &t }

// A read at an instant far outside the years a nanosecond count holds (1678 to 2262) is before or after every
// revision, on every backend: at the year 1000 main did not exist yet; at 3000 it is at its head (found in review:
// the count wrapped around, and the year 1000 read today's head).
func TestAtFarInstants(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			db, _ := openTest(t, open(t))
			must(db.Put(ctx, "doc", []byte(`1`), WriteOptions{}))
			head := must(db.Put(ctx, "doc", []byte(`2`), WriteOptions{}))
			past, future := time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
			if st, err := db.Resolve(ctx, Ref{Branch: Main, At: &past}); !errors.Is(err, ErrNotFound) {
				t.Fatalf("main at the year 1000: revision %d, %v; want not found", st.Rev.Number, err)
			}
			if st, err := db.Resolve(ctx, Ref{Branch: Main, At: &future}); err != nil || st.Rev.Number != head.Revision {
				t.Fatalf("main at the year 3000: revision %d, %v; want the head, %d", st.Rev.Number, err, head.Revision)
			}
		})
	}
}

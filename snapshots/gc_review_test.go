package snapshots

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/workload"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

func gcDoc(v int) []byte {
	var b strings.Builder
	b.WriteByte('[')
	for i := range 200 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"v":%d,"pad":"%030d"}`, i, (i*7+v)%50, i)
	}
	b.WriteByte(']')
	return []byte(b.String())
}

// TestReviewGCStress: while GC runs with a tiny grace, other goroutines revert to, branch at, snapshot and restore
// from random old revisions. Every acknowledged operation's result must read back whole, and check must be clean.
func TestGCStress(t *testing.T) {
	for name, open := range backends(t) {
		if name == "postgres" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			db, err := Open(ctx, open(t), &Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			must(db.Put(ctx, "items", gcDoc(0), WriteOptions{}))
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var mu sync.Mutex
			var bad []string
			fail := func(f string, a ...any) { mu.Lock(); bad = append(bad, fmt.Sprintf(f, a...)); mu.Unlock() }
			okErr := func(err error) bool {
				return err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict)
			}
			for w := range 3 {
				wg.Go(func() {
					r := rand.New(rand.NewSource(int64(w)))
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						br := fmt.Sprintf("t%d-%d", w, i)
						if _, err := db.CreateBranch(ctx, br, Ref{}, ""); err != nil {
							fail("branch: %v", err)
							return
						}
						if _, err := db.Put(ctx, "items", gcDoc(r.Intn(1000)), WriteOptions{Branch: br}); !okErr(err) {
							fail("put: %v", err)
						}
						_, _ = db.DeleteBranch(ctx, br)
						last, _ := db.Resolve(ctx, Ref{})
						n := uint64(1 + r.Intn(int(last.Rev.Number)+5))
						switch r.Intn(4) {
						case 0:
							if _, err := db.Revert(ctx, Ref{Revision: n}, WriteOptions{}); !okErr(err) {
								fail("revert %d: %v", n, err)
							}
						case 1:
							nb := fmt.Sprintf("k%d-%d", w, i)
							if _, err := db.CreateBranch(ctx, nb, Ref{Revision: n}, ""); !okErr(err) {
								fail("branch at %d: %v", n, err)
							}
						case 2:
							if _, err := db.Restore(ctx, "items", revision.Pointer{}, Ref{Revision: n}, WriteOptions{}); !okErr(err) {
								fail("restore from %d: %v", n, err)
							}
						case 3:
							if _, err := db.CreateSnapshot(ctx, fmt.Sprintf("s%d-%d", w, i), Ref{Revision: n}, "", ""); !okErr(err) {
								fail("snapshot at %d: %v", n, err)
							}
						}
					}
				})
			}
			deadline := time.Now().Add(time.Second)
			rounds := 0
			for time.Now().Before(deadline) {
				if _, err := db.GC(ctx, &GCOptions{Grace: time.Nanosecond, Batch: 5}); err != nil {
					fail("gc: %v", err)
					break
				}
				rounds++
			}
			close(stop)
			wg.Wait()
			for _, b := range bad {
				t.Error(b)
			}
			chk := must(db.Check(ctx, nil))
			if len(chk.Problems) != 0 {
				t.Fatalf("after %d rounds: %v", rounds, chk.Problems[:min(5, len(chk.Problems))])
			}
			t.Logf("%d gc rounds", rounds)
		})
	}
}

// TestReviewGCOpenReader: STORAGE.md §8 keeps "everything reachable from ... an open reader". A reader that resolved
// a branch (its head made two hours ago) and is still reading when the branch is deleted and GC runs with the default
// grace loses the tree under it: the read fails with "node missing" instead of finishing (or NOT_FOUND).
func TestGCOpenReader(t *testing.T) {
	ctx := context.Background()
	for name, open := range backends(t) {

		t.Run(name, func(t *testing.T) {
			db, clk := openTest(t, open(t))
			must(db.CreateBranch(ctx, "tmp", Ref{}, ""))
			must(db.Put(ctx, "items", gcDoc(7), WriteOptions{Branch: "tmp"}))
			must(db.Put(ctx, "other", []byte(`{}`), WriteOptions{}))
			clk.mu.Lock()
			clk.t = clk.t.Add(2 * time.Hour)
			clk.mu.Unlock()
			// The reader opens tmp ...
			v, _, err := db.Get(ctx, Ref{Branch: "tmp"}, "items", nil)
			if err != nil {
				t.Fatal(err)
			}
			// ... someone deletes tmp and collects with the default grace (1 h) ...
			must(db.DeleteBranch(ctx, "tmp"))
			rep := must(db.GC(ctx, nil))
			// ... and the reader, still reading, finds its tree gone.
			if _, err := revision.New(db.be, &revision.Options{CacheBytes: -1}).JSON(ctx, v); err != nil {
				t.Fatalf("an open reader lost its tree to gc (%d nodes removed): %v", rep.RemovedNodes, err)
			}
		})
	}
}

// TestReviewGCShortGraceEndsLiveImport: an import renews its lease every 10 s while its input is slow; a gc with a
// grace under that (strata gc --grace 5s is accepted) ends the lease of an import that is alive and well.
func TestGCShortGraceEndsLiveImport(t *testing.T) {
	ctx := context.Background()
	db, clk := openTest(t, store.NewMemBackend())
	r := &pausingReader{r: bytes.NewReader(workload.JSON(40000)), at: 3 << 20, paused: make(chan struct{}), resume: make(chan struct{})}
	done := make(chan error)
	go func() { _, err := db.Import(ctx, "doc", r, ImportOptions{}, WriteOptions{}); done <- err }()
	<-r.paused
	waitForBatch(t, db)
	clk.mu.Lock()
	clk.t = clk.t.Add(6 * time.Second) // the input stalls 6 s: less than the 10 s renewal period
	clk.mu.Unlock()
	must(db.GC(ctx, &GCOptions{Grace: 5 * time.Second}))
	close(r.resume)
	if err := <-done; err != nil {
		t.Fatalf("a live import failed after gc --grace 5s: %v", err)
	}
}

// TestGCCollectsOnceGraceHasPassedSinceDeletion: the grace counts from the deletion, and then the deleted branch's
// work is collected, and its record of the deletion with it.
func TestGCCollectsOnceGraceHasPassedSinceDeletion(t *testing.T) {
	ctx := context.Background()
	db, clk := openTest(t, store.NewMemBackend())
	must(db.CreateBranch(ctx, "tmp", Ref{}, ""))
	must(db.Put(ctx, "items", gcDoc(7), WriteOptions{Branch: "tmp"}))
	must(db.Put(ctx, "other", []byte(`{}`), WriteOptions{}))
	advance := func(d time.Duration) { clk.mu.Lock(); clk.t = clk.t.Add(d); clk.mu.Unlock() }
	advance(2 * time.Hour)
	must(db.DeleteBranch(ctx, "tmp"))
	if rep := must(db.GC(ctx, nil)); rep.RemovedRevisions != 0 {
		t.Fatalf("within the grace after the deletion: %+v", rep)
	}
	advance(2 * time.Hour)
	if rep := must(db.GC(ctx, nil)); rep.RemovedRevisions != 1 || rep.RemovedNodes == 0 {
		t.Fatalf("past the grace after the deletion: %+v, want the branch's revision and its nodes removed", rep)
	}
	n := 0
	if err := db.be.View(ctx, func(c store.CatalogReader) error {
		return c.Scan(droppedBucket, func(string, []byte) bool { n++; return true })
	}); err != nil || n != 0 {
		t.Fatalf("records of deletions left: %d, %v", n, err)
	}
}

// TestSnapshotAtTime: NAME@TIME with a snapshot's name says that the name is a snapshot, which takes no time.
func TestSnapshotAtTime(t *testing.T) {
	ctx := context.Background()
	db, clk := openTest(t, store.NewMemBackend())
	must(db.Put(ctx, "doc", []byte(`1`), WriteOptions{}))
	must(db.CreateSnapshot(ctx, "v1", Ref{}, "", ""))
	at := clk.now()
	var nf *NotFoundError
	if _, err := db.Resolve(ctx, Ref{Branch: "v1", At: &at}); !errors.As(err, &nf) || !strings.Contains(err.Error(), "v1 is a snapshot") {
		t.Fatalf("v1@TIME: %v", err)
	}
}

// TestMoveIntoOwnChildNamesResourcePaths: the refusal of a move into its own child names the resource's own paths,
// as every other patch error does, not the database's (found in review: "/res" and "/res/x").
func TestMoveIntoOwnChildNamesResourcePaths(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t, store.NewMemBackend())
	must(db.Put(ctx, "res", []byte(`{"a":{"b":1}}`), WriteOptions{}))
	ops, err := revision.ParsePatch([]byte(`[{"op":"move","from":"/a","path":"/a/b/c"}]`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Patch(ctx, "res", ops, WriteOptions{})
	if err == nil || strings.Contains(err.Error(), "/res") || !strings.Contains(err.Error(), `"/a/b/c"`) || !errors.Is(err, revision.ErrInvalidPatch) {
		t.Fatalf("%v", err)
	}
}

package snapshots

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/store"
)

func TestGC(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) { testGC(t, open(t)) })
	}
}

func nodeCount(t *testing.T, db *DB) int {
	t.Helper()
	n := 0
	var after *store.Hash
	for {
		hs := must(db.be.(store.NodeLister).NodeHashes(context.Background(), after, 1000))
		if len(hs) == 0 {
			return n
		}
		n += len(hs)
		after = &hs[len(hs)-1]
	}
}

func testGC(t *testing.T, be store.Backend) {
	ctx := context.Background()
	db, clk := openTest(t, be)
	big := func(tag string) []byte {
		var b strings.Builder
		b.WriteString("[")
		for i := 0; i < 2000; i++ {
			fmt.Fprintf(&b, `{"tag":%q,"i":%d,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},`, tag, i)
		}
		b.WriteString("0]")
		return []byte(b.String())
	}
	must(db.Put(ctx, "keep", big("main"), WriteOptions{}))
	must(db.CreateSnapshot(ctx, "pinned", Ref{}, "", ""))
	must(db.CreateBranch(ctx, "scratch", Ref{}, ""))
	r := must(db.Put(ctx, "tmp", big("scratch"), WriteOptions{Branch: "scratch"}))
	scratchRev := r.Revision
	must(db.Put(ctx, "keep", big("main2"), WriteOptions{}))
	before := nodeCount(t, db)

	// While the scratch branch exists, nothing is collected.
	rep := must(db.GC(ctx, &GCOptions{Grace: time.Nanosecond}))
	if rep.RemovedNodes != 0 || rep.RemovedRevisions != 0 {
		t.Fatalf("collected reachable data: %+v", rep)
	}
	must(db.DeleteBranch(ctx, "scratch"))
	// Within the grace window it is kept too.
	rep = must(db.GC(ctx, &GCOptions{Grace: time.Hour}))
	if rep.RemovedNodes != 0 {
		t.Fatalf("collected inside the grace window: %+v", rep)
	}
	clk.mu.Lock()
	clk.t = clk.t.Add(2 * time.Hour)
	clk.mu.Unlock()
	rep = must(db.GC(ctx, &GCOptions{Batch: 3}))
	if rep.RemovedRevisions != 1 || rep.RemovedNodes == 0 || rep.Batches < 2 {
		t.Fatalf("deleted branch not collected: %+v", rep)
	}
	if after := nodeCount(t, db); after != before-rep.RemovedNodes {
		t.Fatalf("node count %d -> %d, report says %d removed", before, after, rep.RemovedNodes)
	}
	// Everything kept still reads, and the database checks clean.
	if get(t, db, Ref{Snapshot: "pinned"}, "keep", "/0/tag") != `"main"` || get(t, db, Ref{}, "keep", "/1999/tag") != `"main2"` {
		t.Fatal("kept data lost")
	}
	chk := must(db.Check(ctx, nil))
	if len(chk.Problems) != 0 {
		t.Fatalf("check after gc: %v", chk.Problems)
	}
	// The collected revision is gone for good, and says so.
	if _, err := db.Resolve(ctx, Ref{Revision: scratchRev}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("collected revision: %v", err)
	}
	// Numbers are never reused.
	r2 := must(db.Put(ctx, "after", []byte(`1`), WriteOptions{}))
	if r2.Revision <= scratchRev+1 {
		t.Fatalf("revision number %d reused", r2.Revision)
	}
}

// A revert that brings back an old root while a collection runs keeps that root's nodes.
func TestGCKeepsWhatARevertReuses(t *testing.T) {
	ctx := context.Background()
	db, clk := openTest(t, store.NewMemBackend())
	must(db.Put(ctx, "doc", []byte(`[`+strings.Repeat(`"some text to make nodes",`, 3000)+`1]`), WriteOptions{}))
	old := must(db.Resolve(ctx, Ref{}))
	must(db.CreateBranch(ctx, "old", Ref{}, ""))
	must(db.Put(ctx, "doc", []byte(`[2]`), WriteOptions{}))
	must(db.DeleteBranch(ctx, "old"))
	clk.mu.Lock()
	clk.t = clk.t.Add(2 * time.Hour)
	clk.mu.Unlock()
	// The old revision is still an ancestor of main, so it is kept anyway; revert to it and collect.
	must(db.Revert(ctx, Ref{Revision: old.Rev.Number}, WriteOptions{}))
	must(db.GC(ctx, nil))
	if got := get(t, db, Ref{}, "doc", "/3000"); got != "1" {
		t.Fatalf("reverted data lost: %s", got)
	}
	if chk := must(db.Check(ctx, nil)); len(chk.Problems) != 0 {
		t.Fatal(chk.Problems)
	}
}

// A revision that garbage collection does not keep cannot be named once its sweep has begun: a revert to it, or a
// branch made at it, between two batches, is refused as naming a missing revision, and the collection finishes
// with the database whole (found in review: the records went last, and a branch made between two batches pointed
// at nodes the first had removed).
func TestNoRevisionNamedDuringSweep(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			db, clk := openTest(t, open(t))
			must(db.CreateBranch(ctx, "tmp", Ref{}, ""))
			var b strings.Builder
			b.WriteString("[")
			for i := 0; i < 300; i++ {
				fmt.Fprintf(&b, `{"i":%d,"pad":"%040d"},`, i, i)
			}
			b.WriteString("0]")
			r := must(db.Put(ctx, "doc", []byte(b.String()), WriteOptions{Branch: "tmp"}))
			must(db.DeleteBranch(ctx, "tmp"))
			must(db.Put(ctx, "other", []byte(`{}`), WriteOptions{}))
			clk.mu.Lock()
			clk.t = clk.t.Add(3 * time.Hour)
			clk.mu.Unlock()
			var revertErr, branchErr error
			named := false
			rep, err := db.GC(ctx, &GCOptions{Grace: time.Nanosecond, Batch: 1, Progress: func(phase string, _, _ int) {
				if phase == "sweep" && !named {
					named = true
					_, revertErr = db.Revert(ctx, Ref{Revision: r.Revision}, WriteOptions{})
					_, branchErr = db.CreateBranch(ctx, "back", Ref{Revision: r.Revision}, "")
				}
			}})
			if err != nil || !named || rep.RemovedNodes < 2 {
				t.Fatalf("collection: %+v %v (the revert ran: %v)", rep, err, named)
			}
			if !errors.Is(revertErr, ErrNotFound) || !errors.Is(branchErr, ErrNotFound) {
				t.Fatalf("naming a revision being collected: revert %v, branch %v; want both not found", revertErr, branchErr)
			}
			if chk := must(db.Check(ctx, nil)); len(chk.Problems) != 0 {
				t.Fatal(chk.Problems)
			}
		})
	}
}

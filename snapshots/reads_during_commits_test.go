package snapshots

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// Readers of main, without a node cache, while one writer commits: a read of the head just committed must find its
// nodes. (Format 2 once published a commit's nodes to its in-memory index only after bbolt's Commit returned.)
func TestReadsDuringCommitsFindNodes(t *testing.T) {
	ctx := context.Background()
	db, cb := countingDB(t, &Options{Forest: &revision.Options{CacheBytes: -1}, Creator: "t"})
	must(db.Put(ctx, "doc", []byte(`{"n":0}`), WriteOptions{}))
	var stop atomic.Bool
	var missing, reads atomic.Int64
	var firstErr atomic.Value
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			reads.Add(1)
			v, _, err := db.Get(ctx, Ref{}, "doc", revision.MustPointer(""))
			if err == nil {
				_, err = db.Forest().JSON(ctx, v)
			}
			if err != nil {
				missing.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
		}
	}()
	for i := 1; i <= 300; i++ {
		must(db.Put(ctx, "doc", bigDoc(i), WriteOptions{}))
	}
	stop.Store(true)
	<-done
	if v, _, err := db.Get(ctx, Ref{}, "doc", revision.MustPointer("")); err != nil {
		t.Errorf("quiet read: %v", err)
	} else if _, err := db.Forest().JSON(ctx, v); err != nil {
		t.Errorf("quiet read JSON: %v", err)
	}
	t.Logf("%d reads, %d GetNodes", reads.Load(), cb.n.Load())
	if m := missing.Load(); m > 0 {
		t.Fatalf("%d reads of main failed with a missing node, first: %v", m, firstErr.Load())
	}
}

// countingDB opens a database on a new bbolt file whose node reads are counted.
func countingDB(t *testing.T, opts *Options) (*DB, *getCounting) {
	t.Helper()
	be, err := store.OpenBolt(filepath.Join(t.TempDir(), "c.strata"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	cb := &getCounting{Backend: be}
	db, err := Open(context.Background(), cb, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, cb
}

type getCounting struct {
	store.Backend
	n atomic.Int64
}

func (g *getCounting) GetNodes(ctx context.Context, hs []store.Hash) ([][]byte, error) {
	g.n.Add(1)
	return g.Backend.GetNodes(ctx, hs)
}

func bigDoc(i int) []byte {
	b := fmt.Appendf(nil, `{"n":%d,"items":[`, i)
	for j := 0; j < 2000; j++ {
		if j > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, `{"j":%d,"v":"%d-%040d"}`, j, i, j)
	}
	return append(b, "]}"...)
}

// A commit's new nodes are remembered once stored (revision.Forest.Remember): the next commit on the same element
// starts from them and reads nothing from the store.
func TestCommitReadsNothingTheLastCommitWrote(t *testing.T) {
	ctx := context.Background()
	db, cb := countingDB(t, &Options{Creator: "t"})
	must(db.Put(ctx, "doc", bigDoc(0), WriteOptions{}))
	must(db.Patch(ctx, "doc", patchOp("/items/1000/v", 1), WriteOptions{}))
	before := cb.n.Load()
	must(db.Patch(ctx, "doc", patchOp("/items/1000/v", 2), WriteOptions{}))
	if n := cb.n.Load() - before; n != 0 {
		t.Fatalf("the second commit read the store %d times for nodes the first one wrote", n)
	}
}

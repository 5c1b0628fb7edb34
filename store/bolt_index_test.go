package store

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// A write transaction stores a node and, in the same commit, the key that names it (as snapshots' writer stores a
// revision's nodes with the branch head). A reader that sees the key must find the node. OnCommit runs where a
// scheduler may preempt the writer: after bbolt's Commit returned, before the index took the transaction's nodes.
func TestCommittedNodeReadableRightAfterCommit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "w.strata")
	var b *Bolt
	var armed atomic.Bool
	var readErr error
	o := BoltOptions{OnCommit: func(CommitStats) {
		if !armed.Load() {
			return
		}
		// Another goroutine's read, in this window: it sees the committed key, then asks for its node.
		done := make(chan struct{})
		go func() {
			defer close(done)
			var h Hash
			readErr = b.View(ctx, func(c CatalogReader) error {
				v, ok, err := c.Get("heads", "main")
				if err != nil || !ok {
					return errors.Join(err, errors.New("head not committed yet"))
				}
				copy(h[:], v)
				_, err = c.GetNodes([]Hash{h})
				return err
			})
			if readErr == nil {
				_, readErr = b.GetNodes(ctx, []Hash{h})
			}
		}()
		<-done
	}}
	var err error
	if b, err = OpenBolt(path, &o); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	n := indexTestNodes(7, 1)[0]
	armed.Store(true)
	err = b.Update(ctx, func(tx CatalogTx) error {
		if _, err := tx.PutNodes([]Node{n}); err != nil {
			return err
		}
		return tx.Put("heads", "main", n.Hash[:])
	})
	if err != nil {
		t.Fatal(err)
	}
	if readErr != nil {
		t.Fatalf("a reader that saw the committed head could not read its node: %v", readErr)
	}
}

// The same without any hook: readers loop over "read the head, read its node" while a writer commits new nodes
// with new heads.
func TestCommittedNodeReadableUnderReaders(t *testing.T) {
	ctx := context.Background()
	b, err := OpenBolt(filepath.Join(t.TempDir(), "s.strata"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	nodes := indexTestNodes(8, 500)
	var stop atomic.Bool
	var misses atomic.Int64
	done := make(chan struct{})
	for r := 0; r < 2; r++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for !stop.Load() {
				_ = b.View(ctx, func(c CatalogReader) error {
					v, ok, err := c.Get("heads", "main")
					if err != nil || !ok {
						return err
					}
					var h Hash
					copy(h[:], v)
					if _, err := c.GetNodes([]Hash{h}); err != nil {
						var m *MissingError
						if errors.As(err, &m) {
							misses.Add(1)
						}
					}
					return nil
				})
			}
		}()
	}
	for _, n := range nodes {
		err := b.Update(ctx, func(tx CatalogTx) error {
			if _, err := tx.PutNodes([]Node{n}); err != nil {
				return err
			}
			return tx.Put("heads", "main", n.Hash[:])
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	<-done
	<-done
	if m := misses.Load(); m > 0 {
		t.Fatalf("%d reads of a committed head found its node missing", m)
	}
}

// An OnCommit observer that panics does not make a durable commit fail, nor stop the store (found in review: the
// update's recover reported the commit failed and wedged the store, and a caller would retry a write made).
func TestPanickingCommitObserver(t *testing.T) {
	ctx := context.Background()
	b, err := OpenBolt(filepath.Join(t.TempDir(), "p.strata"), &BoltOptions{OnCommit: func(CommitStats) { panic("observer") }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	nodes := indexTestNodes(50, 3)
	if err := putIn(b, nodes); err != nil {
		t.Fatalf("a commit whose observer panicked: %v", err)
	}
	if _, err := b.GetNodes(ctx, []Hash{nodes[0].Hash}); err != nil {
		t.Fatalf("after the observer panicked: %v", err)
	}
	if err := putIn(b, indexTestNodes(51, 3)); err != nil {
		t.Fatalf("the next commit: %v", err)
	}
}

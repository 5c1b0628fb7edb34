package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// failingBolt opens a Bolt (format 4) whose commits the test can make fail: failCommit closes the file, arms hook
// (called from OnCommit for the failed commit) and puts nodes, which must fail with ErrFailStop.
func failingBolt(t *testing.T, hook func()) (b *Bolt, failCommit func(nodes []Node)) {
	t.Helper()
	var mu sync.Mutex
	var file *os.File
	var armed bool
	o := BoltOptions{
		openFile: func(name string, flag int, mode os.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag, mode)
			mu.Lock()
			file = f
			mu.Unlock()
			return f, err
		},
		OnCommit: func(st CommitStats) {
			mu.Lock()
			a := armed
			mu.Unlock()
			if a && st.Failed {
				hook()
			}
		},
	}
	b, err := OpenBolt(filepath.Join(t.TempDir(), "f.strata"), &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, func(nodes []Node) {
		t.Helper()
		mu.Lock()
		file.Close()
		armed = true
		mu.Unlock()
		if err := putIn(b, nodes); !errors.Is(err, ErrFailStop) {
			t.Fatalf("failing commit = %v, want ErrFailStop", err)
		}
	}
}

func putIn(b *Bolt, nodes []Node) error {
	return b.Update(context.Background(), func(tx CatalogTx) error { _, err := tx.PutNodes(nodes); return err })
}

// A second writer that passed usable() before a commit failed waits on wmu; once it has the lock, the failed
// commit has dropped the index (m == nil). It must get ErrFailStop, not panic in publish on the nil map (which
// fault() reports as bbolt failing to write the file and marks the store wedged, leaking bbolt's map and lock).
func TestWriterQueuedBehindFailedCommit(t *testing.T) {
	var second error
	done := make(chan struct{})
	var b *Bolt
	b, failCommit := failingBolt(t, func() {
		go func() {
			defer close(done)
			second = putIn(b, indexTestNodes(12, 3))
		}()
		time.Sleep(100 * time.Millisecond) // let it pass usable() and queue on wmu
	})
	if err := putIn(b, indexTestNodes(10, 3)); err != nil {
		t.Fatal(err)
	}
	failCommit(indexTestNodes(11, 3))
	<-done
	if !errors.Is(second, ErrFailStop) || strings.Contains(second.Error(), "bbolt failed") {
		t.Errorf("the writer queued behind the failed commit got %v, want a plain ErrFailStop", second)
	}
	if b.wedged.Load() {
		t.Errorf("the store is wedged after a queued writer met the dropped index")
	}
}

// A read transaction begun before a commit failed reads a node committed long before. The failed commit drops
// the index, and the read must not answer that the node is missing (snapshots reports a missing node as damage):
// it must find the node, or say the store stopped.
func TestReaderDuringFailedCommitNotMissing(t *testing.T) {
	good := indexTestNodes(20, 1)
	var readErr error
	done := make(chan struct{})
	var b *Bolt
	b, failCommit := failingBolt(t, func() {
		entered := make(chan struct{})
		go func() {
			defer close(done)
			readErr = b.View(context.Background(), func(c CatalogReader) error {
				close(entered)
				for b.usable() == nil { // until the failed commit has stopped the store
					time.Sleep(time.Millisecond)
				}
				_, err := c.GetNodes([]Hash{good[0].Hash})
				return err
			})
		}()
		<-entered
	})
	if err := putIn(b, good); err != nil {
		t.Fatal(err)
	}
	failCommit(indexTestNodes(21, 3))
	<-done
	var m *MissingError
	if errors.As(readErr, &m) {
		t.Fatalf("a node committed before the failure read as missing: %v", readErr)
	}
}

// A Shared handle keeps its node index while the file is closed between calls. If the file is replaced meanwhile
// by an older copy of itself (restored from a backup, as ErrBadFile's message advises), the index keeps the newer
// chunks' entries: chunk numbers are handed out again by the restored file, a stale entry then points into another
// node's bytes, and putting that node again is skipped as present, so it stays unreadable.
func TestSharedIndexAfterFileRestored(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "r.strata")
	s, err := OpenShared(path, &SharedOptions{Linger: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put := func(nodes []Node) {
		t.Helper()
		if err := s.Update(ctx, func(tx CatalogTx) error { _, err := tx.PutNodes(nodes); return err }); err != nil {
			t.Fatal(err)
		}
	}
	waitClosed := func() {
		t.Helper()
		for i := 0; ; i++ {
			s.mu.Lock()
			closed := s.b == nil
			s.mu.Unlock()
			if closed {
				return
			}
			if i > 5000 {
				t.Fatal("Shared never closed the file")
			}
			time.Sleep(time.Millisecond)
		}
	}
	a, b, c := indexTestNodes(30, 20), indexTestNodes(31, 20), indexTestNodes(32, 20)
	put(a)
	waitClosed()
	backup, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	put(b)
	waitClosed()
	// The operator restores the backup while the server is idle.
	restore := func(backup []byte) {
		t.Helper()
		if err := os.WriteFile(path+".tmp", backup, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	restore(backup)
	put(c) // takes chunk 2 again in the restored file
	put(b) // b is not in the restored file: it must be stored again
	for _, nodes := range [][]Node{a, b, c} {
		for _, n := range nodes {
			got, err := s.GetNodes(ctx, []Hash{n.Hash})
			if err != nil || string(got[0]) != string(n.Data) {
				t.Fatalf("node %s after the file was restored: %v", n.Hash.Short(), err)
			}
		}
	}

	// Again, but another process commits on the restored file before this handle opens it: the file's last
	// transaction is then no older than the one the index saw, and only its chunk 3, which the restored file numbers
	// anew for that process's nodes, tells the index that the file is not the one it was loaded from.
	d, e := indexTestNodes(33, 20), indexTestNodes(34, 20)
	waitClosed()
	if backup, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	put(d)
	waitClosed()
	restore(backup)
	other, err := OpenBolt(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Update(ctx, func(tx CatalogTx) error { _, err := tx.PutNodes(e); return err }); err != nil {
		t.Fatal(err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	put(d) // d is not in the restored file: it must be stored again
	for _, nodes := range [][]Node{a, b, c, d, e} {
		for _, n := range nodes {
			got, err := s.GetNodes(ctx, []Hash{n.Hash})
			if err != nil || string(got[0]) != string(n.Data) {
				t.Fatalf("node %s after the file was restored and written by another process: %v", n.Hash.Short(), err)
			}
		}
	}
}

package snapshots

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/strata-db/strata/store"
)

// TestDropElsewhereStaysDropped: another process (a second Dir on the same directory) drops a database this one
// has open (found in review: this process's next call made the file anew, empty, and the name came back). Its
// calls now fail with ErrDropped, the file stays gone, and opening the name says it does not exist; once the name
// is made again, this process opens the new database.
func TestDropElsewhereStaysDropped(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := must(OpenDir(dir, nil))
	defer a.Close()
	dbA := must(a.Create(ctx, "shop", "op"))
	must(dbA.Put(ctx, "doc", []byte(`{"v":1}`), WriteOptions{}))
	waitReleased(t, filepath.Join(dir, "shop"+Ext)) // a's Shared lets the file go once idle (its linger)
	b := must(OpenDir(dir, nil))
	defer b.Close()
	if err := b.Drop(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := dbA.Get(ctx, Ref{}, "doc", nil); !errors.Is(err, store.ErrDropped) {
		t.Errorf("a read of the dropped database: %v, want ErrDropped", err)
	}
	if _, err := dbA.Put(ctx, "doc", []byte(`{"v":2}`), WriteOptions{}); err == nil {
		t.Error("a write to the dropped database succeeded")
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(dir, "shop"+Ext)); err == nil {
		t.Fatalf("after a drop elsewhere, a call here made shop%s anew (names %v)", Ext, must(b.Names()))
	}
	var nf *NotFoundError
	if _, err := a.Open(ctx, "shop"); !errors.As(err, &nf) {
		t.Fatalf("opening the dropped name: %v, want NotFoundError", err)
	}
	dbB := must(b.Create(ctx, "shop", "op"))
	must(dbB.Put(ctx, "fresh", []byte(`1`), WriteOptions{}))
	time.Sleep(100 * time.Millisecond)
	again := must(a.Open(ctx, "shop"))
	if _, _, err := again.Get(ctx, Ref{}, "fresh", nil); err != nil {
		t.Fatalf("the database made again under the name, read here: %v", err)
	}
}

// TestConcurrentCreate: two processes create the same database at once: one is told the name is taken (found in
// review: both said created).
func TestConcurrentCreate(t *testing.T) {
	ctx := context.Background()
	for try := 0; try < 20; try++ {
		dir := t.TempDir()
		a := must(OpenDir(dir, nil))
		b := must(OpenDir(dir, nil))
		start := make(chan struct{})
		errs := make(chan error, 2)
		for _, d := range []*Dir{a, b} {
			go func(d *Dir) {
				<-start
				_, err := d.Create(ctx, "shop", "op")
				errs <- err
			}(d)
		}
		close(start)
		e1, e2 := <-errs, <-errs
		a.Close()
		b.Close()
		var ce *ConflictError
		if (e1 == nil) == (e2 == nil) || !errors.As(errors.Join(e1, e2), &ce) {
			t.Fatalf("try %d: two creates of one name: %v and %v; want one created and one ConflictError", try, e1, e2)
		}
	}
}

// waitReleased waits until this process holds path open no more (read from /proc/self/fd; where there is none, it
// waits the linger out), for at most 10 s.
func waitReleased(t *testing.T, path string) {
	t.Helper()
	abs, _ := filepath.Abs(path)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			return
		}
		open := false
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && target == abs {
				open = true
				break
			}
		}
		if !open {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s is still open after 10 s", path)
}

// TestOpenWaitsForACreatingFile: a database file still empty because its creator (another process) has not
// written its first pages yet is waited for a moment, not refused as truncated.
func TestOpenWaitsForACreatingFile(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	d := must(OpenDir(src, nil))
	must(d.Create(ctx, "shop", "op"))
	d.Close()
	full, err := os.ReadFile(filepath.Join(src, "shop"+Ext))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "shop"+Ext)
	if err := os.WriteFile(path, nil, 0o600); err != nil { // made (O_EXCL) and not written yet
		t.Fatal(err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		os.WriteFile(path, full, 0o600) // the creator's first pages
	}()
	b := must(OpenDir(dir, nil))
	defer b.Close()
	if _, err := b.Open(ctx, "shop"); err != nil {
		t.Fatalf("opening a database while its creator writes its first pages: %v", err)
	}
}

//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package snapshots

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestProcessChild is the child of TestSeveralProcesses; it does nothing in a normal run.
func TestProcessChild(t *testing.T) {
	dir := os.Getenv("STRATA_CHILD_DIR")
	if dir == "" {
		t.Skip("child process of TestSeveralProcesses")
	}
	n, _ := strconv.Atoi(os.Getenv("STRATA_CHILD_N"))
	d, err := OpenDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	db, err := d.Open(context.Background(), "shared")
	if err != nil {
		t.Fatal(err)
	}
	if err := increments(context.Background(), db, n); err != nil {
		t.Fatal(err)
	}
}

// TestSeveralProcesses: three processes (this one and two children) update one database in one data directory at
// the same time with expected_head; no update is lost, revisions stay consecutive, and no process fails because
// another holds the file.
func TestSeveralProcesses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := must(OpenDir(dir, nil))
	defer d.Close()
	db := must(d.Create(ctx, "shared", "test"))
	must(db.Put(ctx, "counter", []byte(`{"n":0}`), WriteOptions{}))
	const n = 25
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for i := 0; i < 2; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestProcessChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "STRATA_CHILD_DIR="+dir, "STRATA_CHILD_N="+strconv.Itoa(n))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("child: %v\n%s", err, out)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := increments(ctx, db, n); err != nil {
			errs <- err
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := get(t, db, Ref{}, "counter", "/n"); got != strconv.Itoa(3*n) {
		t.Fatalf("counter %s, want %d: an update was lost", got, 3*n)
	}
	page := must(db.History(ctx, HistoryQuery{Limit: 1000}))
	if len(page.Revisions) != 3*n+2 {
		t.Fatalf("%d revisions, want %d", len(page.Revisions), 3*n+2)
	}
	t.Logf("3 processes × %d increments with expected_head in %v", n, time.Since(start).Round(time.Millisecond))
}

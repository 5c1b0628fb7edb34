//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package snapshots

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/pgtest"
)

// writersPerProcess and writerIncrements shape TestEightWritersTwoProcesses: 2 processes × 4 writers.
const (
	writersPerProcess = 4
	writerIncrements  = 8
)

// runWriters runs writersPerProcess goroutines of increments on database "shared" of the data location loc.
func runWriters(ctx context.Context, loc string) error {
	d, err := OpenDir(loc, nil)
	if err != nil {
		return err
	}
	defer d.Close()
	db, err := d.Open(ctx, "shared")
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make(chan error, writersPerProcess)
	for range writersPerProcess {
		wg.Go(func() {
			if err := increments(ctx, db, writerIncrements); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// TestWritersChild is the child process of TestEightWritersTwoProcesses; it does nothing in a normal run.
func TestWritersChild(t *testing.T) {
	loc := os.Getenv("STRATA_WRITERS_LOCATION")
	if loc == "" {
		t.Skip("child process of TestEightWritersTwoProcesses")
	}
	if err := runWriters(context.Background(), loc); err != nil {
		t.Fatal(err)
	}
}

// TestEightWritersTwoProcesses: 8 writers, 4 in this process and 4 in a child, increment one counter with
// expected_head (read, compute, write; retry on conflict), in a data directory (bbolt files shared by processes)
// and in PostgreSQL. No update is lost, and revision numbers stay consecutive: exactly one revision per increment.
func TestEightWritersTwoProcesses(t *testing.T) {
	for _, backend := range []string{"bolt", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			loc := t.TempDir()
			if backend == "postgres" {
				loc = pgtest.URL(t)
			}
			d := must(OpenDir(loc, nil))
			db := must(d.Create(ctx, "shared", "test"))
			must(db.Put(ctx, "counter", []byte(`{"n":0}`), WriteOptions{}))
			d.Close()
			start := time.Now()
			cmd := exec.Command(os.Args[0], "-test.run=^TestWritersChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "STRATA_WRITERS_LOCATION="+loc)
			var wg sync.WaitGroup
			var childErr error
			var childOut []byte
			wg.Go(func() { childOut, childErr = cmd.CombinedOutput() })
			err := runWriters(ctx, loc)
			wg.Wait()
			if childErr != nil {
				t.Fatalf("child: %v\n%s", childErr, childOut)
			}
			if err != nil {
				t.Fatal(err)
			}
			d = must(OpenDir(loc, nil))
			defer d.Close()
			db = must(d.Open(ctx, "shared"))
			const total = 2 * writersPerProcess * writerIncrements
			if got := get(t, db, Ref{}, "counter", "/n"); got != strconv.Itoa(total) {
				t.Fatalf("counter %s, want %d: an update was lost", got, total)
			}
			page := must(db.History(ctx, HistoryQuery{Limit: 1000}))
			if len(page.Revisions) != total+2 {
				t.Fatalf("%d revisions, want %d", len(page.Revisions), total+2)
			}
			for i, r := range page.Revisions {
				if want := uint64(total + 2 - i); r.Number != want {
					t.Fatalf("revision %d where %d belongs: numbers are not consecutive", r.Number, want)
				}
			}
			t.Logf("%s: 2 processes × %d writers × %d increments with expected_head in %v", backend, writersPerProcess,
				writerIncrements, time.Since(start).Round(time.Millisecond))
		})
	}
}

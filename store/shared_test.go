//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// sharedWrites is what each process does: n read-modify-write increments of one counter, each in its own durable
// transaction, plus a marker per write, with reads in between. A lost update shows as a counter below the total.
func sharedWrites(s *Shared, who string, n int) error {
	ctx := context.Background()
	for i := 0; i < n; i++ {
		err := s.Update(ctx, func(tx CatalogTx) error {
			v, _, err := tx.Get("test", "counter")
			if err != nil {
				return err
			}
			var c uint64
			if len(v) == 8 {
				c = binary.BigEndian.Uint64(v)
			}
			if err := tx.Put("test", "counter", be64(c+1)); err != nil {
				return err
			}
			return tx.Put("test", fmt.Sprintf("%s-%d", who, i), []byte("x"))
		})
		if err != nil {
			return fmt.Errorf("%s write %d: %w", who, i, err)
		}
		if err := s.View(ctx, func(c CatalogReader) error {
			_, ok, err := c.Get("test", fmt.Sprintf("%s-%d", who, i))
			if err == nil && !ok {
				err = fmt.Errorf("%s: own write %d not visible", who, i)
			}
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// TestSharedChild is the child process of TestSharedAcrossProcesses; it does nothing in a normal run.
func TestSharedChild(t *testing.T) {
	path, who := os.Getenv("STRATA_SHARED_PATH"), os.Getenv("STRATA_SHARED_WHO")
	if path == "" {
		t.Skip("child process of TestSharedAcrossProcesses")
	}
	n, _ := strconv.Atoi(os.Getenv("STRATA_SHARED_N"))
	s, err := OpenShared(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := sharedWrites(s, who, n); err != nil {
		t.Fatal(err)
	}
}

// TestSharedAcrossProcesses: three processes write to one database file at once; every write lands, none is lost,
// and nobody fails because another process holds the file.
func TestSharedAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.strata")
	s, err := OpenShared(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 60
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for _, who := range []string{"a", "b"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSharedChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "STRATA_SHARED_PATH="+path, "STRATA_SHARED_WHO="+who, "STRATA_SHARED_N="+strconv.Itoa(n))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("child %s: %v\n%s", who, err, out)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := sharedWrites(s, "parent", n); err != nil {
			errs <- err
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var counter uint64
	if err := s.View(context.Background(), func(c CatalogReader) error {
		v, _, err := c.Get("test", "counter")
		counter = binary.BigEndian.Uint64(v)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if counter != 3*n {
		t.Fatalf("counter %d, want %d: updates were lost", counter, 3*n)
	}
	t.Logf("3 processes × %d durable read-modify-write commits in %v; this process opened the file %d times", n, time.Since(start).Round(time.Millisecond), s.Opens())
}

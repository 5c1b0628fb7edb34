//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestSharedBusyChild is the child of TestSharedBusyWriterHandsOver: it writes without pause, from
// STRATA_SHARED_BUSY_G goroutines, until the file STRATA_SHARED_BUSY_STOP exists. It says it has started by
// creating STRATA_SHARED_BUSY_READY.
func TestSharedBusyChild(t *testing.T) {
	path := os.Getenv("STRATA_SHARED_BUSY_PATH")
	if path == "" {
		t.Skip("child process of TestSharedBusyWriterHandsOver")
	}
	stop, ready := os.Getenv("STRATA_SHARED_BUSY_STOP"), os.Getenv("STRATA_SHARED_BUSY_READY")
	g, _ := strconv.Atoi(os.Getenv("STRATA_SHARED_BUSY_G"))
	s, err := OpenShared(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	errs := make(chan error, g)
	for w := 0; w < g; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				if _, err := os.Stat(stop); err == nil {
					return
				}
				if err := s.Update(context.Background(), func(tx CatalogTx) error {
					return tx.Put("test", fmt.Sprintf("child-%d-%d", w, i), []byte("x"))
				}); err != nil {
					errs <- err
					return
				}
				if w == 0 && i == 3 {
					os.WriteFile(ready, nil, 0o600)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestSharedBusyWriterHandsOver: another process writes without pause (as a busy server does); a call of
// this process (as a CLI command's) must get the file within a bounded time. docs/storage.md §9 promises that the
// holder "hands it over within 100 ms when another process waits". Each call here is allowed a full second (ten
// times that); none may fail with ErrLocked.
func TestSharedBusyWriterHandsOver(t *testing.T) {
	for _, g := range []int{1, 4} {
		t.Run(fmt.Sprintf("goroutines=%d", g), func(t *testing.T) { testReviewBusy(t, g) })
	}
}

func testReviewBusy(t *testing.T, g int) {
	dir := t.TempDir()
	path := filepath.Join(dir, "busy.strata")
	stop, ready := filepath.Join(dir, "stop"), filepath.Join(dir, "ready")
	s, err := OpenShared(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSharedBusyChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "STRATA_SHARED_BUSY_PATH="+path, "STRATA_SHARED_BUSY_STOP="+stop,
		"STRATA_SHARED_BUSY_READY="+ready, "STRATA_SHARED_BUSY_G="+strconv.Itoa(g))
	out := &lockedBuf{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		os.WriteFile(stop, nil, 0o600)
		if err := cmd.Wait(); err != nil {
			t.Errorf("child: %v\n%s", err, out.String())
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("child did not start:\n%s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	var worst time.Duration
	for i := 0; i < 5; i++ {
		t0 := time.Now()
		err := s.View(context.Background(), func(c CatalogReader) error {
			_, err := c.LastRevision()
			return err
		})
		took := time.Since(t0)
		worst = max(worst, took)
		if errors.Is(err, ErrLocked) {
			t.Fatalf("call %d failed after %v while the other process kept writing: %v", i, took.Round(time.Millisecond), err)
		}
		if err != nil {
			t.Fatal(err)
		}
		if took > time.Second {
			t.Fatalf("call %d waited %v for the file while another process kept writing (promised: handed over within 100 ms)", i, took.Round(time.Millisecond))
		}
	}
	t.Logf("worst wait %v", worst.Round(time.Millisecond))
}

type lockedBuf struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// TestSharedKilledChild is the child of TestSharedKilledHolder: it holds the file inside a write
// transaction until it is killed.
func TestSharedKilledChild(t *testing.T) {
	path := os.Getenv("STRATA_SHARED_KILL_PATH")
	if path == "" {
		t.Skip("child process of TestSharedKilledHolder")
	}
	s, err := OpenShared(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Update(context.Background(), func(tx CatalogTx) error {
		if err := tx.Put("test", "half", []byte("x")); err != nil {
			return err
		}
		os.WriteFile(path+".ready", nil, 0o600)
		select {}
	})
}

// TestSharedKilledHolder: a process killed while it holds the file (in the middle of a write) releases it
// with its death; the next call here gets it at once, and the killed write is not there.
func TestSharedKilledHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.strata")
	s, err := OpenShared(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSharedKilledChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "STRATA_SHARED_KILL_PATH="+path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(path + ".ready"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("child did not start")
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	t0 := time.Now()
	var found bool
	if err := s.View(context.Background(), func(c CatalogReader) error {
		_, ok, err := c.Get("test", "half")
		found = ok
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if found {
		t.Error("the killed process's unfinished write is in the file")
	}
	if took := time.Since(t0); took > time.Second {
		t.Errorf("the call waited %v for a file whose holder is dead", took)
	}
}

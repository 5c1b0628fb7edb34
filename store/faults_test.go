//go:build linux

package store

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-db/strata/internal/testenv"
)

// TestFaultChild is the child of TestIOFaults: it commits numbered records one per transaction and says, for each,
// whether it was acknowledged. It does nothing in a normal run.
func TestFaultChild(t *testing.T) {
	path := os.Getenv("STRATA_FAULT_PATH")
	if path == "" {
		t.Skip("child process of TestIOFaults")
	}
	n, _ := strconv.Atoi(os.Getenv("STRATA_FAULT_N"))
	size := 3000
	if s, err := strconv.Atoi(os.Getenv("STRATA_FAULT_SIZE")); err == nil {
		size = s
	}
	b, err := OpenBolt(path, nil)
	if err != nil {
		fmt.Printf("open-error %v\n", err)
		return
	}
	defer b.Close()
	for i := 1; i <= n; i++ {
		err := b.Update(context.Background(), func(tx CatalogTx) error {
			return tx.Put("t", fmt.Sprintf("k%04d", i), bytes.Repeat([]byte{'x'}, size))
		})
		if err != nil {
			fmt.Printf("err %d %v\n", i, err)
		} else {
			fmt.Printf("ack %d\n", i)
		}
	}
}

// TestIOFaults (docs/security.md T2): fdatasync and pwrite64 fail with EIO or ENOSPC (injected by strace) part-way
// through a run of commits. A commit whose sync or write failed is never acknowledged; every later call is refused
// (fail-stop: the kernel may have dropped the dirty pages); after a restart the file opens and holds every
// acknowledged commit, each whole, and nothing past the failed one.
func TestIOFaults(t *testing.T) {
	testenv.Tool(t, "strace", "apt-get install -y strace (.ci/run installs it)")
	cases := []struct{ syscall, errno, when string }{
		{"fdatasync", "EIO", "3+"}, {"fdatasync", "EIO", "8+"}, {"fdatasync", "EIO", "15+"},
		{"pwrite64", "EIO", "6+"}, {"pwrite64", "ENOSPC", "10+"}, {"pwrite64", "ENOSPC", "25+"},
	}
	const n = 30
	for _, c := range cases {
		t.Run(c.syscall+"-"+c.errno+"-"+c.when, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "faults.strata")
			// Create the file first, so that the faults hit commits, not creation.
			b, err := OpenBolt(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			b.Close()
			cmd := exec.Command("strace", "-f", "-qq", "-o", "/dev/null",
				"-e", "trace="+c.syscall, "-e", "inject="+c.syscall+":error="+c.errno+":when="+c.when,
				os.Args[0], "-test.run=^TestFaultChild$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), "STRATA_FAULT_PATH="+path, "STRATA_FAULT_N="+strconv.Itoa(n))
			out, _ := cmd.CombinedOutput()
			acked := map[int]bool{}
			firstErr := 0
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) < 2 {
					continue
				}
				i, _ := strconv.Atoi(f[1])
				switch f[0] {
				case "ack":
					if firstErr != 0 {
						t.Fatalf("commit %d acknowledged after commit %d failed: no fail-stop\n%s", i, firstErr, out)
					}
					acked[i] = true
				case "err":
					if firstErr == 0 {
						firstErr = i
					} else if !strings.Contains(sc.Text(), "stopped after an I/O failure") {
						t.Fatalf("commit %d after the failure was refused for another reason: %s", i, sc.Text())
					}
				case "open-error":
					t.Fatalf("child could not open: %s", out)
				}
			}
			if firstErr == 0 {
				t.Fatalf("no fault was injected (strace %s:%s when=%s):\n%s", c.syscall, c.errno, c.when, out)
			}
			if len(acked) != firstErr-1 {
				t.Fatalf("%d acknowledged before the first failure at %d", len(acked), firstErr)
			}
			// Restart: the file opens, holds every acknowledged commit, whole, and nothing past the failed one.
			b, err = OpenBolt(path, nil)
			if err != nil {
				t.Fatalf("reopen after the fault: %v", err)
			}
			defer b.Close()
			err = b.View(context.Background(), func(c CatalogReader) error {
				for i := 1; i <= n; i++ {
					v, ok, err := c.Get("t", fmt.Sprintf("k%04d", i))
					if err != nil {
						return err
					}
					switch {
					case acked[i] && (!ok || len(v) != 3000):
						return fmt.Errorf("acknowledged commit %d lost or torn (%d bytes)", i, len(v))
					case ok && i > firstErr:
						return fmt.Errorf("commit %d, after the failure, is present", i)
					case ok && len(v) != 3000:
						return fmt.Errorf("commit %d torn", i)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			// And writes resume once the fault is gone.
			if err := b.Update(context.Background(), func(tx CatalogTx) error { return tx.Put("t", "after", []byte("ok")) }); err != nil {
				t.Fatalf("write after restart: %v", err)
			}
			t.Logf("failed at commit %d; %d acknowledged commits survived", firstErr, len(acked))
		})
	}
}

// TestFileSizeLimit: the file may not grow past a limit (prlimit --fsize, as a full disk would stop it). Commits
// that need more room fail and are never acknowledged; the file opens afterwards with every acknowledged commit.
func TestFileSizeLimit(t *testing.T) {
	testenv.Tool(t, "prlimit", "apt-get install -y util-linux")
	path := filepath.Join(t.TempDir(), "limited.strata")
	b, err := OpenBolt(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	fi, _ := os.Stat(path)
	// bbolt grows a young file in big steps (up to 16 MiB), so the limit sits a few steps past its current size and
	// each commit writes 512 KiB.
	limit := fi.Size() + 24<<20
	cmd := exec.Command("prlimit", "--fsize="+strconv.FormatInt(limit, 10), os.Args[0], "-test.run=^TestFaultChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "STRATA_FAULT_PATH="+path, "STRATA_FAULT_N=200", "STRATA_FAULT_SIZE=524288")
	out, _ := cmd.CombinedOutput()
	acked := 0
	failed := false
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "ack "):
			if failed {
				t.Fatalf("acknowledged after a failure:\n%s", out)
			}
			acked++
		case strings.HasPrefix(line, "err "):
			failed = true
		}
	}
	if acked == 200 {
		t.Fatalf("the size limit never bit:\n%.2000s", out)
	}
	b, err = OpenBolt(path, nil)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer b.Close()
	err = b.View(context.Background(), func(c CatalogReader) error {
		for i := 1; i <= acked; i++ {
			if v, ok, err := c.Get("t", fmt.Sprintf("k%04d", i)); err != nil || !ok || len(v) != 524288 {
				return fmt.Errorf("acknowledged commit %d lost (%v)", i, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Space freed (no limit in this process): writes resume.
	if err := b.Update(context.Background(), func(tx CatalogTx) error { return tx.Put("t", "after", []byte("ok")) }); err != nil {
		t.Fatalf("write once space is back: %v", err)
	}
	t.Logf("%d commits acknowledged before the file hit %d bytes (failed=%v)", acked, limit, failed)
}

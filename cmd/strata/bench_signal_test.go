package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/testenv"
)

// TestBenchStopsServersOnSIGTERM: `strata bench` killed with SIGTERM (kill, timeout, a CI runner giving up) stops the
// PostgreSQL server it started and removes its directory, as it does on Ctrl-C, instead of leaving them behind.
func TestBenchStopsServersOnSIGTERM(t *testing.T) {
	testenv.Tool(t, "initdb", "apt-get install -y postgresql, then put /usr/lib/postgresql/VERSION/bin on PATH (.ci/run does); without it there is no PostgreSQL server to leave behind")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	cmd := exec.Command(self, "bench", "--n", "1000", "--k", "400", "--runs", "1", "--systems", "postgres", "-v", "--tmp", tmp)
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Wait until the server is up: the suite has said it runs postgres, and a process holds the suite's directory.
	lines := bufio.NewScanner(stderr)
	var log []string
	for lines.Scan() {
		log = append(log, lines.Text())
		if strings.Contains(lines.Text(), "postgres") {
			break
		}
	}
	go func() {
		for lines.Scan() {
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for len(processesUnder(t, tmp)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no PostgreSQL process under %s after 60 s; strata bench said:\n%s", tmp, strings.Join(log, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("strata bench still running 60 s after SIGTERM")
	}
	for {
		left := processesUnder(t, tmp)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline.Add(30 * time.Second)) {
			t.Fatalf("after SIGTERM, processes still run under the suite's directory:\n%s", strings.Join(left, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The directory goes when the server's watchdog has seen it stop, a moment after the processes end.
	for {
		left, _ := filepath.Glob(filepath.Join(tmp, "strata-bench-*"))
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline.Add(30 * time.Second)) {
			t.Fatalf("the suite's directory is still there: %v", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// processesUnder lists the command lines of running processes that name dir (Linux /proc).
func processesUnder(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc to look for processes in")
	}
	var out []string
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		line := strings.ReplaceAll(string(bytes.TrimRight(b, "\x00")), "\x00", " ")
		if strings.Contains(line, dir) && !strings.Contains(line, " bench ") {
			out = append(out, e.Name()+": "+line)
		}
	}
	return out
}

// TestServeStopsOnSIGTERM: strata serve shuts down on SIGTERM as on Ctrl-C: it says it stopped and exits 0.
func TestServeStopsOnSIGTERM(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "serve", "--data", t.TempDir(), "--listen", freeLocalAddr(t))
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stderr)
	for lines.Scan() && !strings.Contains(lines.Text(), "serving") {
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for lines.Scan() {
		rest = append(rest, lines.Text())
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(strings.Join(rest, "\n"), "strata serve: stopped") {
			t.Fatalf("after SIGTERM: %v; stderr:\n%s", err, strings.Join(rest, "\n"))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("strata serve still running 30 s after SIGTERM")
	}
}

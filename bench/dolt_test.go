package bench

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/testenv"
)

// needDolt skips a test when dolt is not on PATH, or fails it under CI (.ci/build-dolt builds one; .ci/run puts it
// on PATH).
func needDolt(t *testing.T) {
	t.Helper()
	if _, err := lookPath("dolt"); err != nil {
		testenv.Missing(t, "dolt not found on PATH (bash .ci/build-dolt DIR builds it, and .ci/run puts it on PATH): the Dolt peers cannot run")
	}
}

// doltOptional are the metrics that need an optional interface (bench.go), with a test for it: a Dolt system must
// give every other metric, and these when it implements their interface.
var doltOptional = map[string]func(system) bool{
	"new-bytes":          func(s system) bool { _, ok := s.(newBytesReporter); return ok },
	"disk-used":          func(s system) bool { _, ok := s.(usedBytesReporter); return ok },
	"materialise-values": func(s system) bool { _, ok := s.(valueMaterialiser); return ok },
	"jq-literal":         func(s system) bool { _, ok := s.(literalQuerier); return ok },
	"jq-after-commit":    func(s system) bool { _, ok := s.(incrementalQuerier); return ok },
	"mcp":                func(s system) bool { _, ok := s.(mcpReader); return ok },
	"concurrent":         func(s system) bool { _, ok := s.(concurrentCommitter); return ok },
}

// TestDoltQuick runs the suite quick on both Dolt systems at a small N: every answer is checked by the suite, and
// every figure a Dolt system implements must be there. Then no dolt server of the run may be left.
func TestDoltQuick(t *testing.T) {
	needDolt(t)
	tmp := t.TempDir()
	rep, err := Run(t.Context(), Options{Quick: true, N: []int{300}, K: 12, Runs: 1, Systems: []string{"dolt", "dolt-rows"}, TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Notes) > 0 {
		t.Fatalf("notes: %s", strings.Join(rep.Notes, "\n"))
	}
	if len(rep.Systems) != 2 {
		t.Fatalf("systems measured %v, skipped %v", rep.Systems, rep.Skipped)
	}
	samples := map[string]system{"dolt": &doltDocSystem{}, "dolt-rows": &doltRowsSystem{}}
	for _, sys := range rep.Systems {
		for _, m := range Metrics {
			if has, optional := doltOptional[m.ID]; optional && !has(samples[sys]) {
				continue
			}
			st, ok := rep.Stat(m.ID, sys, 300)
			if !ok || !(st.Median > 0) {
				t.Errorf("%s: no %s figure (%+v)", sys, m.ID, st)
			}
		}
	}
	md := rep.Markdown()
	if !strings.Contains(md, "| metric | dolt | dolt-rows |") {
		t.Errorf("markdown lacks the Dolt columns:\n%s", md)
	}
	if pids := doltServersUnder(t, tmp); len(pids) > 0 {
		t.Errorf("dolt sql-server processes left after Run: %v", pids)
	}
	doltMu.Lock()
	left := doltShared
	doltMu.Unlock()
	if left != nil {
		t.Error("the shared dolt server is still registered after Run")
	}
}

// TestDoltServerStops checks that release stops the server: its port closes and its process exits; and that a
// second user keeps it running until it too releases it.
func TestDoltServerStops(t *testing.T) {
	needDolt(t)
	mk, stop, why := detect("dolt-rows")
	if mk == nil {
		t.Fatal(why)
	}
	_, stop2, _ := detect("dolt")
	root := t.TempDir()
	s := mk().(*doltRowsSystem)
	if err := s.open(t.Context(), filepath.Join(root, "run")); err != nil {
		stop()
		stop2()
		t.Fatal(err)
	}
	addr, done := s.srv.addr(), s.srv.done
	if err := s.close(); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(s.path); !os.IsNotExist(err) {
		t.Errorf("the run's database %s is still on disk after close (%v)", s.path, err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err != nil {
		t.Errorf("the server stopped when one of its two users released it: %v", err)
	} else {
		c.Close()
	}
	if err := stop2(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("dolt sql-server still running after the last release")
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after the server was stopped", addr)
	}
	if pids := doltServersUnder(t, root); len(pids) > 0 {
		t.Errorf("dolt sql-server processes left: %v", pids)
	}
}

// doltServersUnder lists the processes whose command line is a dolt sql-server with its databases under dir.
func doltServersUnder(t *testing.T, dir string) []string {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil || len(procs) == 0 {
		t.Logf("cannot list processes (%v): not checked", err)
		return nil
	}
	var pids []string
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0})
		if len(args) > 1 && string(args[1]) == "sql-server" && bytes.Contains(b, []byte(dir)) {
			pids = append(pids, filepath.Base(filepath.Dir(p)))
		}
	}
	return pids
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/testenv"
)

// TestConformanceSuite runs the official MCP conformance suite (@modelcontextprotocol/conformance, a dev dependency
// of e2e/) in server mode against `strata serve` over Streamable HTTP. Scenarios that need the suite's own fixtures
// (test_* tools and prompts, test:// resources) cannot pass against a real server; they are listed with a reason in
// e2e/conformance-expected-failures.txt. The test fails on any other failing scenario, and on any listed scenario that
// passes, so that the list stays honest. It needs node and npm, and `npm ci --prefix e2e` run beforehand (.ci/run
// does); without them it skips (under CI it fails).
func TestConformanceSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the MCP conformance suite")
	}
	e2e, err := filepath.Abs(filepath.Join("..", "..", "e2e"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"node", "npm"} {
		testenv.Tool(t, tool, "the MCP conformance suite needs Node 20+ and npm (README.md says how), then npm ci --prefix e2e")
	}
	if out, err := exec.Command("node", "--version").Output(); err != nil {
		testenv.Missing(t, "node --version: %v: the MCP conformance suite needs Node 20+", err)
	} else if v := strings.TrimSpace(string(out)); nodeMajor(v) < 20 {
		testenv.Missing(t, "node %s is older than 20: the MCP conformance suite needs Node 20+ (README.md says how to get it where Debian offers 18)", v)
	}
	suite := filepath.Join(e2e, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	if _, err := os.Stat(suite); err != nil {
		testenv.Missing(t, "e2e/node_modules/@modelcontextprotocol/conformance is missing: the MCP conformance suite needs it (run npm ci --prefix e2e)")
	}
	// Read the test's own files so that go test's result cache notices when they change.
	for _, f := range []string{"package.json", "package-lock.json", "conformance/node20.mjs", "conformance/fs-hooks.mjs", "conformance/fs-shim.mjs"} {
		if _, err := os.ReadFile(filepath.Join(e2e, f)); err != nil {
			t.Fatal(err)
		}
	}
	expected := readExpectedFailures(t, filepath.Join(e2e, "conformance-expected-failures.txt"))

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "strata")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data := filepath.Join(tmp, "data")
	if out, err := exec.CommandContext(ctx, bin, "--data", data, "db", "create", "demo").CombinedOutput(); err != nil {
		t.Fatalf("strata db create demo: %v\n%s", err, out)
	}
	addr := freeLocalAddr(t)
	logPath := filepath.Join(tmp, "serve.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	serve := exec.Command(bin, "--data", data, "serve", "--listen", addr, "--writes", "on")
	serve.Stdout, serve.Stderr = logFile, logFile
	if err := serve.Start(); err != nil {
		t.Fatalf("strata serve: %v", err)
	}
	defer func() {
		_ = serve.Process.Kill()
		_ = serve.Wait()
	}()
	waitListening(t, addr, logPath)

	results := filepath.Join(tmp, "results")
	url := "http://" + addr + "/mcp"
	runCtx, runCancel := context.WithTimeout(ctx, 3*time.Minute)
	defer runCancel()
	// node20.mjs lets the suite load on Node 20 (it imports fs.globSync, new in Node 22); see that file.
	run := exec.CommandContext(runCtx, "node", "--import", "./conformance/node20.mjs", suite, "server", "--url", url, "-o", results)
	run.Dir = e2e
	out, runErr := run.CombinedOutput()
	if runCtx.Err() != nil {
		t.Fatalf("conformance suite timed out: %v\n%s", runCtx.Err(), out)
	}
	// The suite exits 1 when any scenario fails, expected or not; judge by its per-scenario results instead.
	got := readConformanceResults(t, results)
	if len(got) == 0 {
		t.Fatalf("conformance suite (%v) left no results in %s\n%s", runErr, results, out)
	}

	var passed, failed, expectedFailed, unexpected, stale []string
	for _, name := range sortedKeys(got) {
		r := got[name]
		_, isExpected := expected[name]
		switch {
		case r.failures == 0 && isExpected:
			stale = append(stale, name)
			passed = append(passed, name)
		case r.failures == 0:
			passed = append(passed, name)
		case isExpected:
			expectedFailed = append(expectedFailed, name)
		default:
			failed = append(failed, name)
			unexpected = append(unexpected, name+": "+strings.Join(r.messages, "; "))
		}
		if r.warnings > 0 {
			t.Logf("conformance: %s: %d warning(s): %s", name, r.warnings, strings.Join(r.warningMessages, "; "))
		}
	}
	var missing []string
	for _, name := range sortedKeys(expected) {
		if _, ok := got[name]; !ok {
			missing = append(missing, name)
		}
	}
	t.Logf("conformance suite against %s: %d scenarios: %d passed, %d failed as expected (fixture-only), %d failed unexpectedly",
		url, len(got), len(passed), len(expectedFailed), len(failed))
	t.Logf("passed: %s", strings.Join(passed, ", "))
	t.Logf("expected failures: %s", strings.Join(expectedFailed, ", "))
	if len(unexpected) > 0 {
		serveLog, _ := os.ReadFile(logPath)
		t.Errorf("scenarios failed that are not in e2e/conformance-expected-failures.txt:\n  %s\nsuite output:\n%s\nserver log:\n%s",
			strings.Join(unexpected, "\n  "), out, serveLog)
	}
	if len(stale) > 0 {
		t.Errorf("scenarios in e2e/conformance-expected-failures.txt now pass; remove them from the list: %s", strings.Join(stale, ", "))
	}
	if len(missing) > 0 {
		t.Errorf("scenarios in e2e/conformance-expected-failures.txt were not run by the suite (renamed or removed?); remove them from the list: %s",
			strings.Join(missing, ", "))
	}
}

// readExpectedFailures reads e2e/conformance-expected-failures.txt: one scenario a line, then its reason; # comments.
func readExpectedFailures(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, _ := strings.Cut(line, " ")
		if reason = strings.TrimSpace(reason); reason == "" {
			t.Fatalf("%s:%d: scenario %q has no reason", path, n, name)
		}
		if _, dup := m[name]; dup {
			t.Fatalf("%s:%d: scenario %q is listed twice", path, n, name)
		}
		m[name] = reason
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

type conformanceResult struct {
	failures, warnings        int
	messages, warningMessages []string
}

// resultDir matches the suite's per-scenario result directories, server-<scenario>-<ISO timestamp with dashes>.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// readConformanceResults reads each scenario's checks.json under dir. A scenario fails if any check has status
// FAILURE, as in the suite's own summary.
func readConformanceResults(t *testing.T, dir string) map[string]*conformanceResult {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	got := map[string]*conformanceResult{}
	for _, e := range entries {
		m := resultDir.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			t.Fatalf("scenario %s: %v", m[1], err)
		}
		var checks []struct {
			ID, Name, Description, Status, ErrorMessage string
		}
		if err := json.Unmarshal(raw, &checks); err != nil {
			t.Fatalf("scenario %s: checks.json: %v", m[1], err)
		}
		r := got[m[1]]
		if r == nil {
			r = &conformanceResult{}
			got[m[1]] = r
		}
		for _, c := range checks {
			msg := c.ID + ": " + c.ErrorMessage
			if c.ErrorMessage == "" {
				msg = c.ID + ": " + c.Description
			}
			switch c.Status {
			case "FAILURE":
				r.failures++
				r.messages = append(r.messages, msg)
			case "WARNING":
				r.warnings++
				r.warningMessages = append(r.warningMessages, msg)
			}
		}
	}
	return got
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// freeLocalAddr is a 127.0.0.1 address with a port that was free a moment ago.
func freeLocalAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// waitListening waits up to 30s until something accepts connections at addr.
func waitListening(t *testing.T, addr, logPath string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return
		}
	}
	log, _ := os.ReadFile(logPath)
	t.Fatalf("strata serve did not listen on %s within 30s:\n%s", addr, log)
}

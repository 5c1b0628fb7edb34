package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/testenv"
)

// TestE2ETypeScriptSDK runs e2e/ (Node's test runner) against a freshly built strata binary: the official TypeScript
// SDK's client over stdio (`strata mcp`) and Streamable HTTP (`strata serve`). It proves, among other things, that the
// TypeScript SDK accepts every tool schema (it rejects the whole tools/list on a bad one). It needs node and npm, and
// `npm ci --prefix e2e` run beforehand (.ci/run does); without them it skips (under CI it fails).
func TestE2ETypeScriptSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the TypeScript end-to-end tests")
	}
	e2e, err := filepath.Abs(filepath.Join("..", "..", "e2e"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"node", "npm"} {
		testenv.Tool(t, tool, "the TypeScript SDK end-to-end tests need Node 20+ and npm (README.md says how), then npm ci --prefix e2e")
	}
	if out, err := exec.Command("node", "--version").Output(); err != nil {
		testenv.Missing(t, "node --version: %v: the TypeScript SDK end-to-end tests need Node 20+", err)
	} else if v := strings.TrimSpace(string(out)); nodeMajor(v) < 20 {
		testenv.Missing(t, "node %s is older than 20: the TypeScript SDK end-to-end tests need Node 20+ (README.md says how to get it where Debian offers 18)", v)
	}
	if _, err := os.Stat(filepath.Join(e2e, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		testenv.Missing(t, "e2e/node_modules is missing: the TypeScript SDK end-to-end tests need it (run npm ci --prefix e2e)")
	}
	// Read the test's own files so that go test's result cache notices when they change.
	for _, f := range []string{"package.json", "package-lock.json", "test/run.mjs", "test/strata.test.mjs"} {
		if _, err := os.ReadFile(filepath.Join(e2e, f)); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(t.TempDir(), "strata")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(ctx, "npm", "test", "--prefix", e2e)
	cmd.Env = append(os.Environ(), "STRATA_BIN="+bin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("npm test --prefix e2e: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// nodeMajor is the major version in `node --version` output such as "v20.20.2"; 0 if it cannot tell.
func nodeMajor(v string) int {
	v = strings.TrimPrefix(v, "v")
	if i := strings.IndexByte(v, '.'); i >= 0 {
		v = v[:i]
	}
	n, _ := strconv.Atoi(v)
	return n
}

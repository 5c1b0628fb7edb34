package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestE2EReviewPage runs e2e/test/review.test.mjs: Debian's Chromium, driven by playwright-core, uses the review
// page of a freshly built `strata serve` while an agent works over MCP with the TypeScript SDK (docs/security.md
// T25). A reviewer signs in, finds the agent's plans (a new one appears without reloading), reads a plan's diff,
// rejects one with a reason (the agent's apply_plan answers DENIED with it) and approves another (apply_plan
// commits it); an agent's token cannot approve; a cross-site POST with the reviewer's cookie is refused; a diff of
// two revisions of a 100,000-element document loads in under a second. Screenshots of each page go to
// e2e/artifacts/review (the path is logged).
//
// It needs node 20+, `npm ci --prefix e2e` and Chromium (/usr/bin/chromium, or $CHROMIUM). Without them it skips,
// unless CI is set: then it fails, naming what is missing (.ci/run installs them).
func TestE2EReviewPage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the browser tests of the review page")
	}
	missing := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") != "" {
			t.Fatalf("CI: "+format, args...)
		}
		t.Skipf(format, args...)
	}
	e2e, err := filepath.Abs(filepath.Join("..", "..", "e2e"))
	if err != nil {
		t.Fatal(err)
	}
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		missing("Chromium is not installed at %s: the review page's browser tests need it (apt-get install chromium, or set CHROMIUM)", chromium)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node is not installed: the review page's browser tests need Node 20+ and npm ci --prefix e2e")
	}
	if out, err := exec.Command("node", "--version").Output(); err != nil || nodeMajor(strings.TrimSpace(string(out))) < 20 {
		missing("node --version: %q %v: the review page's browser tests need Node 20+", out, err)
	}
	for _, pkg := range []string{"playwright-core", filepath.Join("@modelcontextprotocol", "sdk")} {
		if _, err := os.Stat(filepath.Join(e2e, "node_modules", pkg)); err != nil {
			missing("e2e/node_modules/%s is missing: run npm ci --prefix e2e", pkg)
		}
	}
	// Read the test's own files so that go test's result cache notices when they change.
	for _, f := range []string{"package.json", "package-lock.json", "test/review.test.mjs"} {
		if _, err := os.ReadFile(filepath.Join(e2e, f)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "strata")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	artifacts := filepath.Join(e2e, "artifacts", "review")
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-reporter=spec", filepath.Join(e2e, "test", "review.test.mjs"))
	cmd.Dir = e2e
	cmd.Env = append(os.Environ(), "STRATA_BIN="+bin, "CHROMIUM="+chromium, "STRATA_ARTIFACTS="+artifacts)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test e2e/test/review.test.mjs: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	t.Logf("screenshots of each page: %s", artifacts)
}

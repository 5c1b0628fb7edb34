package bench

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// strata bench --tmp btmp (a relative directory) lost every PostgreSQL figure: the server, running in its own
// directory, could not create its socket's lock file, and psql's server-side read of the document named a path
// relative to nothing it knew. Before the fix in pgserver.Start the failure was worse: a nil pointer dereference
// that killed the whole run.
func TestRelativeTempDir(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip("psql not on PATH")
	}
	base := t.TempDir()
	if os.Geteuid() == 0 {
		_ = os.Chmod(base, 0o755) // the server's user must reach it
	}
	t.Chdir(base)
	if err := os.Mkdir("btmp", 0o755); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), Options{N: []int{200}, Runs: 1, K: 3, Systems: []string{"postgres"}, TempDir: "btmp"})
	if err != nil {
		t.Fatal(err)
	}
	if why, ok := rep.Skipped["postgres"]; ok {
		if os.Getenv("CI") != "" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	for _, n := range rep.Notes {
		if strings.HasPrefix(n, "Failed:") {
			t.Errorf("with --tmp relative: %s", n)
		}
	}
}

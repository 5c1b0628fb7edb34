//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package snapshots

import (
	"fmt"
	"os"
	"testing"

	"github.com/strata-db/strata/internal/pgtest"
)

// TestKillNinePostgres is TestKillNine on PostgreSQL: a child process commits to a database in PostgreSQL with four
// writers and is killed with SIGKILL mid-commit (the server then rolls back whatever transaction the child had not
// committed); every acknowledged write is there, no key is committed twice, retries replay, and the whole-database
// check finds nothing wrong. 24 iterations by default (a few seconds); STRATA_LONG=1 runs 500, and
// STRATA_KILL_ITERATIONS=N runs N.
func TestKillNinePostgres(t *testing.T) {
	iterations := 24
	if os.Getenv("STRATA_LONG") == "1" {
		iterations = 500
	}
	url := pgtest.URL(t)
	killNine(t, iterations, func(epoch int) string { return fmt.Sprintf("%s#crash%d", url, epoch) },
		func(int) string { return "postgres" })
}

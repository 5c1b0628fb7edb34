package main

import (
	"os"
	"testing"

	"github.com/strata-db/strata/query"
)

// TestMain lets the test binary serve as its own query worker: the engine re-executes it with query.WorkerEnv set.
// With cliEnv set, it is the strata command itself (tests that signal a running command start it so).
func TestMain(m *testing.M) {
	query.WorkerMain()
	if os.Getenv(cliEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

const cliEnv = "STRATA_TEST_AS_CLI"

package query

import (
	"os"
	"testing"
)

// TestMain lets the test binary serve as its own query worker: the engine re-executes it with WorkerEnv set.
func TestMain(m *testing.M) {
	WorkerMain()
	os.Exit(m.Run())
}

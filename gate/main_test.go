package gate

import (
	"os"
	"testing"

	"github.com/strata-db/strata/query"
)

// TestMain lets the test binary serve as its own query worker: the engine re-executes it with query.WorkerEnv set.
func TestMain(m *testing.M) {
	query.WorkerMain()
	os.Exit(m.Run())
}

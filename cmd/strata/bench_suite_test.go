package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchFlagErrors: bad values of bench's flags are usage errors (exit 2) that name the flag (or file).
//   - --k 1 passed the CLI's check ("--runs and --k must be positive") and failed in the library with exit 1 and
//     "bench: K must be at least 2", naming no flag;
//   - --n 1000,1000 ran the size twice and pooled the runs into one figure;
//   - --from FILE with a file that is not the suite's JSON said "json: cannot unmarshal object into Go value of
//     type []bench.Measurement", without the file's name (several --from files are the point of the flag).
func TestBenchFlagErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "not-results.json")
	if err := os.WriteFile(bad, []byte(`{"n": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing") // --tmp: so that nothing would run if the flags passed
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"bench", "--k", "1", "--tmp", missing}, exitUsage, "--k"},
		{[]string{"bench", "--n", "1000,1000", "--tmp", missing}, exitUsage, "--n"},
		{[]string{"bench", "--from", bad}, exitUsage, bad},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}

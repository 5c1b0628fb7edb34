package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-db/strata/snapshots"
)

// TestLogPastScanLimit: strata log DB RESOURCE finds a change that lies further down than one history call
// examines (found in review: it failed with "history scan limit reached without a match").
func TestLogPastScanLimit(t *testing.T) {
	old := snapshots.SetHistoryScanLimit(10)
	t.Cleanup(func() { snapshots.SetHistoryScanLimit(old) })
	s := newSession(t, false, nil)
	s.must("", "db", "create", "shop")
	s.must(`{"a":1}`, "import", "shop", "config", "-")
	for i := range 25 {
		s.must(fmt.Sprint(i), "import", "shop", "noise", "-")
	}
	out := s.must("", "log", "shop", "config")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "2 ") {
		t.Fatalf("strata log shop config:\n%s", out)
	}
	out = s.must("", "log", "shop", "noise", "-n", "20")
	if n := strings.Count(out, "\n"); n != 20 {
		t.Fatalf("strata log shop noise -n 20: %d lines:\n%s", n, out)
	}
}

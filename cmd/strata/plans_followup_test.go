package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-db/strata/gate"
)

// TestPlanCountsAtLeast: a plan's counts come from a diff that stops at gate.PreviewOps operations. The
// review page now says so ("the counts are at least"); `strata plans DB ID` must not tell the person a plan that
// removes 12,000 values removes exactly 10,000.
func TestPlanCountsAtLeast(t *testing.T) {
	const n = gate.PreviewOps + 2000
	s, id := removalPlan(t, n)
	shown := s.must("", "plans", "shop", id)
	if strings.Contains(shown, fmt.Sprintf("removes %d value(s)", gate.PreviewOps)) && !strings.Contains(shown, "at least") {
		t.Errorf("strata plans shop ID says the plan removes exactly %d values; it removes %d:\n%s", gate.PreviewOps, n, firstLines(shown, 12))
	}
}

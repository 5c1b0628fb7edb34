package mcp

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/strata-db/strata/gate"
)

// TestHistoryCursorAfterBranchRemade: a history (and path_history) cursor continues the revisions the first page read "while the
// branch moves on" (docs/design.md §3.1). When the branch is deleted and made again from another revision between
// two pages, the second page walked the new branch below the cursor: it skipped revisions of the history being
// paged and listed ones that are not in it.
func TestHistoryCursorAfterBranchRemade(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesOn, Protected: []string{"prod"}, Principal: "tester"})
	h.ok("create_database", `{"database":"shop"}`)
	h.ok("put", `{"database":"shop","resource":"a","value":0}`) // 2
	h.ok("create_branch", `{"database":"shop","name":"feat"}`)
	for i := 1; i <= 3; i++ { // 3, 4, 5 on feat
		h.ok("put", fmt.Sprintf(`{"database":"shop","resource":"a","value":%d,"branch":"feat"}`, i))
	}
	p1 := h.ok("history", `{"database":"shop","branch":"feat","limit":2}`)
	cursor := p1.str("next_cursor")
	if cursor == "" {
		t.Fatalf("no cursor: %s", p1.text)
	}
	ph1 := h.ok("path_history", `{"database":"shop","branch":"feat","resource":"a","limit":2}`)
	pathCursor := ph1.str("next_cursor")
	if pathCursor == "" {
		t.Fatalf("no path_history cursor: %s", ph1.text)
	}
	h.ok("delete_branch", `{"database":"shop","name":"feat"}`)
	h.ok("create_branch", `{"database":"shop","name":"feat","from_revision":1}`)
	h.ok("put", `{"database":"shop","resource":"b","value":1,"branch":"feat"}`) // 6, parent 1
	p2 := h.ok("history", fmt.Sprintf(`{"database":"shop","branch":"feat","limit":2,"cursor":%q}`, cursor))
	var got struct {
		Revisions []struct{ Revision uint64 } `json:"revisions"`
	}
	if err := json.Unmarshal(p2.data, &got); err != nil {
		t.Fatal(err)
	}
	var nums []uint64
	for _, r := range got.Revisions {
		nums = append(nums, r.Revision)
	}
	if fmt.Sprint(nums) != "[3 2]" {
		t.Errorf("page 2 of feat's history (page 1: revisions 5 and 4) = %v, want [3 2]", nums)
	}
	ph2 := h.ok("path_history", fmt.Sprintf(`{"database":"shop","branch":"feat","resource":"a","limit":2,"cursor":%q}`, pathCursor))
	var changes struct {
		Changes []struct{ Revision uint64 } `json:"changes"`
	}
	if err := json.Unmarshal(ph2.data, &changes); err != nil {
		t.Fatal(err)
	}
	nums = nil
	for _, c := range changes.Changes {
		nums = append(nums, c.Revision)
	}
	if fmt.Sprint(nums) != "[3 2]" {
		t.Errorf("page 2 of a's path_history on feat = %v, want [3 2]", nums)
	}
}

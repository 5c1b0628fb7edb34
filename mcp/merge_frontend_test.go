package mcp

import (
	"strings"
	"testing"

	"github.com/strata-db/strata/gate"
)

// TestApplyPromotePlanSourceMoved: an approved plan of a promote whose source branch moved since (main did
// not) cannot be applied as previewed. apply_plan must answer PLAN_CHANGED ("plan the change anew"), as it does
// when main moved and the merge made again conflicts (gate rebase). It answered CONFLICT with a list of conflicts
// and "settle each path with resolve" (apply_plan has no resolve), or, when the branch's move settled a conflict
// the plan resolved, INVALID_ARGUMENT "resolve names ..., which is not in conflict" for a call that named no
// resolutions at all.
func TestApplyPromotePlanSourceMoved(t *testing.T) {
	for _, c := range []struct {
		name, move string
	}{
		{"new conflict", `{"database":"shop","resource":"cat","branch":"work","path":"/b","value":99}`},
		{"resolved conflict gone", `{"database":"shop","resource":"cat","branch":"work","path":"/a","value":2}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, Config{Writes: gate.WritesBranches, Protected: []string{"main"}, Principal: "agent-1"})
			h.ok("create_database", `{"database":"shop"}`)
			h.seed("shop", "cat", `{"a":1,"b":1}`)
			h.ok("create_branch", `{"database":"shop","name":"work"}`)
			h.ok("update", `{"database":"shop","resource":"cat","branch":"work","path":"/a","value":3}`)
			h.seed("shop", "cat", `{"a":2,"b":2}`) // main moves before the plan: the promote merges
			id := h.planned("promote", `{"database":"shop","branch":"work","resolve":{"/cat/a":"branch"}}`)
			h.decide(id, true, "")
			head := h.head("shop", "main")
			h.ok("update", c.move) // the source branch moves after the plan; main does not
			r := h.call("apply_plan", `{"plan_id":"`+id+`"}`)
			if !r.res.IsError || r.str("code") != codePlanChanged {
				t.Errorf("apply_plan after the promoted branch moved: %s\nwant %s", r.text, codePlanChanged)
			}
			if strings.Contains(r.text, "settle each path with resolve") || strings.Contains(r.text, "not in conflict") {
				t.Errorf("apply_plan asks for resolutions it cannot take: %s", r.text)
			}
			if h.head("shop", "main") != head {
				t.Fatal("a refused apply wrote")
			}
		})
	}
}

// TestResolveInsideWholeArray: a conflict reported at /cat/items/0/p, resolved both there and at the array's
// own path /cat/items (which takes a side's whole array). The refusal said the reported path "is not in conflict"
// and that "the conflicts are at /cat/items", a path no report had named; it must say that the two resolutions
// overlap. Either one alone promotes.
func TestResolveInsideWholeArray(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesOn, Protected: []string{}})
	promoteSetup(h, `{"items":[{"id":1,"p":1},{"id":2,"p":2}]}`, `{"items":[{"id":1,"p":10},{"id":2,"p":2}]}`,
		`{"items":[{"id":1,"p":11},{"id":2,"p":2}]}`)
	cs := conflictsOf(t, h.fail("promote", `{"database":"shop","branch":"work"}`, codeConflict))
	if len(cs) != 1 || cs[0].Path != "/cat/items/0/p" {
		t.Fatalf("conflicts %+v", cs)
	}
	r := h.fail("promote", `{"database":"shop","branch":"work","resolve":{"/cat/items/0/p":"branch","/cat/items":"into"}}`, codeInvalidArgument)
	if strings.Contains(r.text, "not in conflict") {
		t.Errorf("the reported conflict's path is called not in conflict: %s", r.text)
	}
	if !strings.Contains(r.text, "settles whole") {
		t.Errorf("the refusal does not say the resolutions overlap: %s", r.text)
	}
	// A path that is in no conflict is still named as such.
	r = h.fail("promote", `{"database":"shop","branch":"work","resolve":{"/cat/items/0/p":"branch","/cat/x":"into"}}`, codeInvalidArgument)
	if !strings.Contains(r.str("detail"), `"/cat/x", which is not in conflict`) {
		t.Errorf("not in conflict: %s", r.text)
	}
	h.ok("promote", `{"database":"shop","branch":"work","resolve":{"/cat/items":"into"}}`)
}

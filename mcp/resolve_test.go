package mcp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/strata-db/strata/gate"
)

// conflictsOf is the conflicts of an error result, as the agent reads them.
func conflictsOf(t *testing.T, r *result) []gate.ConflictReport {
	t.Helper()
	var e struct {
		Conflicts []gate.ConflictReport `json:"conflicts"`
	}
	if err := json.Unmarshal(r.data, &e); err != nil {
		t.Fatal(err)
	}
	return e.Conflicts
}

// promoteSetup: database shop with resource cat at base, a branch work, then into's document on main and the
// branch's on work, each put whole.
func promoteSetup(h *harness, base, into, branch string) {
	h.ok("create_database", `{"database":"shop"}`)
	h.ok("put", `{"database":"shop","resource":"cat","value":`+base+`}`)
	h.ok("create_branch", `{"database":"shop","name":"work"}`)
	h.ok("put", `{"database":"shop","resource":"cat","value":`+into+`}`)
	h.ok("put", `{"database":"shop","resource":"cat","branch":"work","value":`+branch+`}`)
}

// TestPromoteConflictValues: a conflict comes back with its path, its reason and the base, into and branch values
// inside the boundary (none of them in the line before it); resolve settles it, and every path must be settled
// before anything is written.
func TestPromoteConflictValues(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesOn, Protected: []string{}})
	promoteSetup(h, `{"price":10,"name":"mug","tags":["a"]}`,
		`{"price":12,"name":"mug","tags":["a"],"note":"into's"}`,
		`{"price":15,"tags":["a"],"note":"branch's <b>"}`)
	head := h.head("shop", "main")
	r := h.fail("promote", `{"database":"shop","branch":"work"}`, codeConflict)
	cs := conflictsOf(t, r)
	got, _ := json.Marshal(cs)
	want := `[{"path":"/cat/note","reason":"added on both sides with different values","into":"into's","branch":"branch's \u003cb\u003e"},` +
		`{"path":"/cat/price","reason":"changed on both sides to different values","base":10,"into":12,"branch":15}]`
	if string(got) != want {
		t.Fatalf("conflicts\n%s\nwant\n%s", got, want)
	}
	if !strings.Contains(r.summary, "conflicts at 2 path(s)") || strings.Contains(r.summary, "/cat/") || !strings.Contains(r.summary, `resolve: {"PATH": "branch"}`) {
		t.Errorf("the line before the boundary: %s", r.summary)
	}
	// Settling one is not enough: nothing is written, and the one left is reported.
	r = h.fail("promote", `{"database":"shop","branch":"work","resolve":{"/cat/price":"branch"}}`, codeConflict)
	if cs := conflictsOf(t, r); len(cs) != 1 || cs[0].Path != "/cat/note" || !strings.Contains(r.summary, "resolve settled 1 other(s)") {
		t.Fatalf("partly resolved: %s", r.text)
	}
	// A path not in conflict is refused, naming the paths that are (inside the boundary only).
	r = h.fail("promote", `{"database":"shop","branch":"work","resolve":{"/cat/price":"branch","/cat/note":"into","/cat/name":"into"}}`, codeInvalidArgument)
	if r.m["detail"] == nil || !strings.Contains(r.str("detail"), `"/cat/name"`) || strings.Contains(r.summary, "/cat/") {
		t.Errorf("not in conflict: %s", r.text)
	}
	if near, _ := json.Marshal(r.m["did_you_mean"]); string(near) != `["/cat/note","/cat/price"]` {
		t.Errorf("did_you_mean %s", near)
	}
	// Bad resolutions are refused before anything runs, every fault listed.
	r = h.fail("promote", `{"database":"shop","branch":"work","resolve":{"cat/price":"branch","/cat/note":"theirs","/cat/x":1}}`, codeInvalidArgument)
	for _, w := range []string{`"cat/price" is not a path as conflicts report them`, `"/cat/note" takes "branch"`, `not "theirs"`, `not 1`} {
		if !strings.Contains(r.str("message"), w) {
			t.Errorf("bad resolve: no %q in %s", w, r.str("message"))
		}
	}
	h.fail("promote", `{"database":"shop","branch":"work","resolve":["/cat/price"]}`, codeInvalidArgument)
	h.fail("promote", `{"database":"shop","branch":"work","resolve":{"/cat/price":"branch","/cat/price":"into"}}`, codeInvalidArgument)
	if h.head("shop", "main") != head {
		t.Fatal("a refused promote wrote")
	}
	// All settled: merged, each path as resolved, the rest merged by member.
	r = h.ok("promote", `{"database":"shop","branch":"work","resolve":{"/cat/price":"branch","/cat/note":"into"}}`)
	if r.m["fast_forward"] != false || r.num("merged") == 0 {
		t.Fatalf("promote: %s", r.text)
	}
	if v := h.ok("read", `{"database":"shop","resource":"cat"}`).raw("value"); v != `{"note":"into's","price":15,"tags":["a"]}` {
		t.Fatalf("merged %s", v)
	}
	// Now there is nothing to settle.
	h.fail("promote", `{"database":"shop","branch":"work","resolve":{"/cat/price":"branch"}}`, codeInvalidArgument)
	h.ok("promote", `{"database":"shop","branch":"work","resolve":null}`)
}

// TestPromoteConflictsElided: large conflict values are $elided markers as path_history shows them, and however many
// conflicts there are the error stays within the output cap, saying how many it lists.
func TestPromoteConflictsElided(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesOn, Protected: []string{}, MaxOutputChars: smallCap})
	big := `"` + strings.Repeat("<x>", 2000) + `"`
	obj := func(v func(i int) string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range 300 {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`"k` + jsonNumber(uint64(i)) + `":` + v(i))
		}
		return b.String() + "}"
	}
	promoteSetup(h, `{"big":1,"many":`+obj(func(int) string { return "0" })+`}`,
		`{"big":`+big+`,"many":`+obj(func(int) string { return "1" })+`}`,
		`{"big":2,"many":`+obj(func(int) string { return "2" })+`}`)
	r := h.fail("promote", `{"database":"shop","branch":"work"}`, codeConflict)
	h.within(r)
	cs := conflictsOf(t, r)
	if len(cs) == 0 || len(cs) >= 301 || cs[0].Path != "/cat/big" {
		t.Fatalf("%d conflicts listed: %s", len(cs), r.text)
	}
	var marker map[string]any
	if err := json.Unmarshal(cs[0].Into, &marker); err != nil || marker["$elided"] != "string" || marker["path"] != "/cat/big" || string(cs[0].Base) != "1" {
		t.Fatalf("a big value: %s", cs[0].Into)
	}
	if !strings.Contains(r.summary, "conflicts at 301 path(s)") || !strings.Contains(r.summary, "the first ") {
		t.Fatalf("summary %s", r.summary)
	}
}

// TestPromoteConflictScope: a scoped agent's promote that conflicts in a hidden resource is refused as one that
// would change it is; nothing of the hidden conflict shows.
func TestPromoteConflictScope(t *testing.T) {
	path := t.TempDir()
	op := newHarnessAt(t, path, Config{Writes: gate.WritesOn, Protected: []string{}, Principal: "operator"})
	op.ok("create_database", `{"database":"shop"}`)
	op.ok("put", `{"database":"shop","resource":"secrets","value":{"key":"base"}}`)
	op.ok("put", `{"database":"shop","resource":"cat","value":{"price":1}}`)
	op.ok("create_branch", `{"database":"shop","name":"work"}`)
	op.ok("put", `{"database":"shop","resource":"secrets","value":{"key":"hunter2"}}`)
	op.ok("put", `{"database":"shop","resource":"secrets","branch":"work","value":{"key":"swordfish"}}`)
	op.ok("put", `{"database":"shop","resource":"cat","value":{"price":2}}`)
	op.ok("put", `{"database":"shop","resource":"cat","branch":"work","value":{"price":3}}`)
	h := newHarnessAt(t, path, Config{Writes: gate.WritesOn, Protected: []string{}, Principal: "agent",
		Scope: gate.Scope{Resources: gate.Names{Deny: []string{"secrets"}}}})
	for _, args := range []string{`{"database":"shop","branch":"work"}`,
		`{"database":"shop","branch":"work","resolve":{"/cat/price":"branch"}}`,
		`{"database":"shop","branch":"work","resolve":{"/cat":"branch"}}`} {
		r := h.fail("promote", args, codeDenied)
		for _, leak := range []string{"secrets", "hunter2", "swordfish", "/key"} {
			if strings.Contains(r.text, leak) {
				t.Errorf("%s: the refusal shows %q: %s", args, leak, r.text)
			}
		}
	}
}

// TestPromoteConflictElements: a conflict over a run of elements carries each side's run, marked elements, and
// resolving its path takes that side's run.
func TestPromoteConflictElements(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesOn, Protected: []string{}})
	promoteSetup(h, `{"items":["a","b","c","d","e","f"]}`, `{"items":["a","X","d","e","f"]}`, `{"items":["a","b","P","Q","R","e","f"]}`)
	cs := conflictsOf(t, h.fail("promote", `{"database":"shop","branch":"work"}`, codeConflict))
	if len(cs) != 1 || !cs[0].Elements || cs[0].Path != "/cat/items/1" {
		t.Fatalf("conflicts %+v", cs)
	}
	if string(cs[0].Base) != `["b","c","d"]` || string(cs[0].Into) != `["X","d"]` || string(cs[0].Branch) != `["b","P","Q","R"]` {
		t.Fatalf("runs %s %s %s", cs[0].Base, cs[0].Into, cs[0].Branch)
	}
	h.ok("promote", `{"database":"shop","branch":"work","resolve":{"/cat/items/1":"branch"}}`)
	if v := h.ok("read", `{"database":"shop","resource":"cat"}`).raw("value"); v != `{"items":["a","b","P","Q","R","e","f"]}` {
		t.Fatalf("resolved %s", v)
	}
}

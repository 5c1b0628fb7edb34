package mcp

import (
	"context"

	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/snapshots"

	"github.com/strata-db/strata/query"
)

// queryHarness is a writable server (nothing protected) whose engine stops programs after a second, over a database
// shop whose catalog has three revisions: 2 (a 20-digit price), 3 (price 5), 4 (price 3, and a fifth item).
func queryHarness(t *testing.T) *harness {
	t.Helper()
	e, err := query.New(query.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	h := newHarness(t, Config{Writes: gate.WritesOn, Protected: []string{}, Engine: e})
	h.ok("create_database", `{"database":"shop"}`)
	h.ok("put", `{"database":"shop","resource":"catalog","value":{"items":[{"id":"a","price":12345678901234567890.10},{"id":"b","price":1.50},{"id":"c","price":2},{"id":"d","price":1e2}]}}`)
	h.ok("update", `{"database":"shop","resource":"catalog","path":"/items/0/price","value":5}`)
	h.ok("patch", `{"database":"shop","resource":"catalog","operations":[{"op":"replace","path":"/items/0/price","value":3},{"op":"add","path":"/items/-","value":{"id":"e","price":0.10}}]}`)
	return h
}

func TestQueryTool(t *testing.T) {
	h := queryHarness(t)

	// At an old revision, with parameters: numbers keep their exact text, in the data and in the parameters.
	r := h.ok("query", `{"database":"shop","resource":"catalog","revision":2,"query":".items[] | select(.price > $min) | [.id, .price, $big]","params":{"min":99.000000000000000001,"big":100000000000000000001}}`)
	if got, want := r.raw("results"), `[["a",12345678901234567890.10,100000000000000000001],["d",1e2,100000000000000000001]]`; got != want {
		t.Errorf("results %s, want %s", got, want)
	}
	if r.num("revision") != 2 || r.raw("more") != "false" {
		t.Errorf("query at revision 2: %s", r.data)
	}
	// The head of main by default; the object of all resources without resource.
	r = h.ok("query", `{"database":"shop","query":".catalog.items[0].price"}`)
	if r.raw("results") != "[3]" || r.num("revision") != 4 {
		t.Errorf("query at the head: %s", r.data)
	}

	// Pages: the cursor continues on the revision it was issued for, and cannot be forged.
	args := `{"database":"shop","resource":"catalog","branch":"main","query":".items[].id","limit":2`
	r = h.ok("query", args+`}`)
	cur := r.str("next_cursor")
	if r.raw("results") != `["a","b"]` || r.raw("more") != "true" || cur == "" {
		t.Fatalf("first page: %s", r.data)
	}
	h.ok("update", `{"database":"shop","resource":"catalog","path":"/items","value":[]}`)
	r = h.ok("query", args+`,"cursor":"`+cur+`"}`)
	if r.raw("results") != `["c","d"]` || r.num("revision") != 4 {
		t.Errorf("second page: %s", r.data)
	}
	forged := cur[:len(cur)-2] + map[bool]string{true: "AA", false: "BA"}[strings.HasSuffix(cur, "AA")]
	h.fail("query", args+`,"cursor":"`+forged+`"}`, codeInvalidArgument)
	h.fail("query", `{"database":"shop","resource":"catalog","query":".items[].price","limit":2,"cursor":"`+cur+`"}`, codeInvalidArgument)
	h.fail("query", args+`,"cursor":"not a cursor"}`, codeInvalidArgument)
	// Nor moved to another reference (found in review: a cursor of one branch, sent with a revision, read the branch
	// on), nor to a call without the reference it was given with.
	for _, other := range []string{`"revision":2`, `"branch":"main","revision":3`, `"snapshot":"nope"`} {
		moved := `{"database":"shop","resource":"catalog",` + other + `,"query":".items[].id","limit":2,"cursor":"` + cur + `"}`
		h.fail("query", moved, codeInvalidArgument)
	}
	h.fail("query", `{"database":"shop","resource":"catalog","query":".items[].id","limit":2,"cursor":"`+cur+`"}`, codeInvalidArgument)

	// A program that does not compile says where.
	r = h.fail("query", `{"database":"shop","resource":"catalog","query":".items[] | selct(.price)"}`, codeQueryError)
	if d := r.str("detail"); !strings.Contains(d, "selct") || !strings.Contains(d, "^") {
		t.Errorf("QUERY_ERROR detail without the caret: %q", d)
	}
	// The message line, shown outside the untrusted-data boundary, never carries the jq error: it may quote data.
	h.ok("put", `{"database":"shop","resource":"secret","value":{"k":"TOP-SECRET-VALUE"}}`)
	r = h.fail("query", `{"database":"shop","resource":"secret","query":".k[]"}`, codeQueryError)
	if msg := r.str("message"); strings.Contains(msg, "TOP-SECRET") {
		t.Errorf("stored text in the error message line: %q", msg)
	}
	h.fail("query", `{"database":"shop","query":"input"}`, codeQueryError)
	r = h.fail("query", `{"database":"shop","query":"$x","params":[1]}`, codeInvalidArgument)
	h.fail("query", `{"database":"shop","query":"$x","params":{"x":1,"x":2}}`, codeInvalidArgument)
	// A key twice inside a value is refused too, as a put refuses it (found in review: the last one was taken).
	if r := h.fail("query", `{"database":"shop","query":"$x","params":{"x":{"a":1,"a":2}}}`, codeInvalidArgument); !strings.Contains(r.str("message"), `duplicate key "a"`) {
		t.Errorf("a duplicate key inside a parameter: %s", r.data)
	}
	h.fail("transform", `{"database":"shop","resource":"catalog","branch":"work","query":".x = $x","params":{"x":{"a":1,"a":2}}}`, codeInvalidArgument)
	h.fail("query", `{"database":"shop","resource":"nope","query":"."}`, codeNotFound)
}

// TestQueryHostile: programs that would run for ever or take all memory are stopped, and the server goes on.
func TestQueryHostile(t *testing.T) {
	h := queryHarness(t)
	for _, prog := range []string{`[range(1e9)]`, `\"x\" * 2000000000`, `def f: f; f`} {
		start := time.Now()
		r := h.call("query", `{"database":"shop","resource":"catalog","query":"`+prog+`"}`)
		if code := r.str("code"); !r.res.IsError || (code != codeQueryTimeout && code != codeLimitExceeded) {
			t.Errorf("%s: want QUERY_TIMEOUT or LIMIT_EXCEEDED, got %s", prog, r.text)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("%s: took %v", prog, d)
		}
		h.ok("status", `{}`)
		if r := h.ok("query", `{"database":"shop","resource":"catalog","query":".items | length"}`); r.raw("results") != "[5]" {
			t.Errorf("after %s: %s", prog, r.data)
		}
	}
}

func TestBisectTool(t *testing.T) {
	h := queryHarness(t)
	r := h.ok("bisect", `{"database":"shop","resource":"catalog","predicate":".items[0].price < $max","params":{"max":10},"from_revision":2}`)
	if r.raw("found") != "true" || r.num("revision") != 3 || r.num("last_false") != 2 {
		t.Errorf("bisect: %s", r.data)
	}
	if ev := r.raw("evaluations"); !strings.Contains(ev, `{"revision":4,"value":true}`) || !strings.Contains(ev, `{"revision":2,"value":false}`) {
		t.Errorf("evaluations %s", ev)
	}
	r = h.ok("bisect", `{"database":"shop","resource":"catalog","predicate":".items[0].price < 4","from_revision":2,"to_revision":3}`)
	if r.raw("found") != "false" || r.raw("revision") != "" {
		t.Errorf("bisect to 3: %s", r.data)
	}
	h.fail("bisect", `{"database":"shop","resource":"catalog","predicate":".items[0].price <"}`, codeQueryError)
	h.fail("bisect", `{"database":"shop","predicate":".","from_revision":3,"to_revision":2}`, codeInvalidArgument)
	// Before the catalog existed it was null, and null < 10 holds in jq: from revision 1 it is true from the start.
	r = h.ok("bisect", `{"database":"shop","resource":"catalog","predicate":".items[0].price < 10"}`)
	if r.raw("found") != "true" || r.num("revision") != 1 || r.raw("last_false") != "" {
		t.Errorf("bisect from the start: %s", r.data)
	}
}

func TestTransformTool(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesBranches, Principal: "agent-1"})
	h.ok("create_database", `{"database":"shop"}`)
	h.ok("create_branch", `{"database":"shop","name":"work"}`)
	h.ok("put", `{"database":"shop","resource":"catalog","branch":"work","value":{"users":[{"id":1,"dup":false,"n":10000000000000000000001},{"id":2,"dup":true}]}}`)
	r := h.ok("transform", `{"database":"shop","resource":"catalog","branch":"work","query":".users |= map(select(.dup | not)) | .tag = $t","params":{"t":"clean"},"message":"dedupe"}`)
	if r.str("branch") != "work" || r.raw("resources") != `["catalog"]` {
		t.Errorf("transform: %s", r.data)
	}
	r = h.ok("query", `{"database":"shop","resource":"catalog","branch":"work","query":"."}`)
	if got, want := r.raw("results"), `[{"tag":"clean","users":[{"dup":false,"id":1,"n":10000000000000000000001}]}]`; got != want {
		t.Errorf("after transform: %s, want %s", got, want)
	}
	// Two outputs write nothing.
	head := h.head("shop", "work")
	h.fail("transform", `{"database":"shop","resource":"catalog","branch":"work","query":".users[], .users[]"}`, codeQueryError)
	if h.head("shop", "work") != head {
		t.Error("a failed transform moved the branch")
	}
	// main is protected: a transform there needs a confirmed plan, like any overwrite.
	if d, err := h.dir.Open(context.Background(), "shop"); err != nil {
		t.Fatal(err)
	} else if _, err := d.Put(context.Background(), "catalog", []byte(`{"users":[]}`), snapshots.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.planned("transform", `{"database":"shop","resource":"catalog","query":".tag = \"x\""}`)
	h.planned("transform", `{"database":"shop","resource":"catalog","query":".tag = \"y\"","branch":"main","idempotency_key":"k"}`)
}

// TestQueryOutputCap: a page that the answer's escaping makes longer than the output cap is cut, and the cursor
// continues after what was shown; a single result over the cap is LIMIT_EXCEEDED.
func TestQueryOutputCap(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesOn, Protected: []string{}, MaxOutputChars: 4000})
	h.ok("create_database", `{"database":"shop"}`)
	h.ok("put", `{"database":"shop","resource":"r","value":{"s":"<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<"}}`)
	seen := 0
	args := `{"database":"shop","resource":"r","query":".s as $s | range(40) | [., $s]","limit":40`
	r := h.ok("query", args+`}`)
	for {
		n := strings.Count(r.raw("results"), `\u003c\u003c`) / 50
		if n == 0 || len(r.data) > 4000 {
			t.Fatalf("page of %d results, %d characters: %s", n, len(r.data), r.summary)
		}
		seen += n
		if r.raw("more") != "true" {
			break
		}
		r = h.ok("query", args+`,"cursor":"`+r.str("next_cursor")+`"}`)
	}
	if seen != 40 {
		t.Errorf("saw %d results over the pages, want 40", seen)
	}
	h.fail("query", `{"database":"shop","resource":"r","query":".s as $s | [range(40) | $s] | add"}`, codeLimitExceeded)
}

package mcp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/internal/heapwatch"
)

// TestLongMissingKeyAnswersFast: a read or update of a member that is not there, next to a stored member
// with a long name that shares its prefix, answers NOT_FOUND at once. (Found in review: the did-you-mean search
// compared the two names in time quadratic in their length: 16,000 characters took 1.5 s, a 1 MiB key, which a
// 4 MiB request can store, an hour of CPU inside the write.)
func TestLongMissingKeyAnswersFast(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesOn, Protected: []string{}})
	h.ok("create_database", `{"database":"s"}`)
	long := strings.Repeat("k", 24<<10)
	h.ok("put", `{"database":"s","resource":"lk","value":{"`+long+`":1}}`)
	for _, c := range []struct{ tool, args string }{
		{"read", `{"database":"s","resource":"lk","path":"/` + long + `x"}`},
		{"update", `{"database":"s","resource":"lk","path":"/` + long + `x","value":2}`},
		{"delete", `{"database":"s","resource":"lk","path":"/` + long + `x"}`},
	} {
		h.fail(c.tool, c.args, codeNotFound)
	}
	if r := h.ok("read", `{"database":"s","resource":"lk","path":"/`+long+`"}`); r.raw("value") != "1" {
		t.Fatalf("the stored member: %s", r.data)
	}
}

// TestWriteErrorsUseResourcePaths: a write's errors name paths inside the resource, as its arguments do and as
// read's errors do, never the database root's path with the resource's name in front ("/doc/a"), which an agent
// sending it back as path would find not found. (The code strips the resource from Path and At, but not from the
// message, and not at all from the depth check of copy and move.)
func TestWriteErrorsUseResourcePaths(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesOn, Protected: []string{}})
	h.ok("create_database", `{"database":"s"}`)
	h.ok("put", fmt.Sprintf(`{"database":"s","resource":"doc","value":{"a":[1,2,3],"n":5,"o":{},"deep":%s}}`, nested(510)))
	for _, c := range []struct{ tool, args, code string }{
		{"update", `{"database":"s","resource":"doc","path":"/a/9","value":1}`, codeNotFound},
		{"update", `{"database":"s","resource":"doc","path":"/a/-","value":1}`, codeInvalidPath},
		{"delete", `{"database":"s","resource":"doc","path":"/a/x"}`, codeInvalidPath},
		{"insert", `{"database":"s","resource":"doc","path":"/n/x","value":1}`, codeInvalidPath},
		{"update", `{"database":"s","resource":"doc","path":"/o/x","value":1}`, codeNotFound},
		{"patch", `{"database":"s","resource":"doc","operations":[{"op":"move","from":"/a/7","path":"/b"}]}`, codeNotFound},
		{"patch", `{"database":"s","resource":"doc","operations":[{"op":"copy","from":"/deep","path":"/o/x/y/z/w/v/u/t/s"}]}`, codeInvalidArgument},
		{"patch", `{"database":"s","resource":"doc","operations":[{"op":"add","path":"/o/x","value":{}},{"op":"copy","from":"/deep","path":"/o/x/y"}]}`, codeInvalidArgument},
	} {
		r := h.fail(c.tool, c.args, c.code)
		if strings.Contains(r.text, `"/doc`) {
			t.Errorf("%s %s: the error names a path with the resource in front:\n%s", c.tool, c.args, r.text)
		}
	}
	h.ok("read", `{"database":"s","resource":"doc","path":"/a/2"}`)
}

// TestCopyAmplificationQuery: copy doubles a resource in O(1) (its nodes are shared), so a 1 MiB put and a
// patch of 8 copies make a resource of 268 MB of JSON, and 30 copies one of a petabyte. A bounded jq program ("type")
// on it must not materialise it inside the server: the server's heap stays bounded whatever the resource's size,
// the call answers or fails with LIMIT_EXCEEDED or QUERY_TIMEOUT, and the server goes on answering. (Found in
// review: the engine materialised any input in-process for a bounded program, so the heap grew by the resource's
// size: 134 MB for 7 copies; past a few more doublings the process runs out of memory.)
func TestCopyAmplificationQuery(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesOn, Protected: []string{}})
	h.ok("create_database", `{"database":"s"}`)
	h.ok("put", `{"database":"s","resource":"amp","value":{"a":"`+strings.Repeat("x", 1<<20)+`"}}`)
	var ops []string
	for i := 0; i < 8; i++ {
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"","path":"/c%d"}`, i))
	}
	h.ok("patch", `{"database":"s","resource":"amp","operations":[`+strings.Join(ops, ",")+`]}`)
	if r := h.ok("resource_info", `{"database":"s","resource":"amp"}`); r.num("size") < 256<<20 {
		t.Fatalf("size: %s", r.data)
	}
	h.ok("put", `{"database":"s","resource":"small","value":{"n":1}}`)

	stop := heapwatch.Start()
	r := h.call("query", `{"database":"s","resource":"amp","query":"type"}`)
	grew, peak := stop()
	if r.res.IsError && r.str("code") != codeLimitExceeded && r.str("code") != codeQueryTimeout {
		t.Fatalf("query: %s", r.text)
	}
	if grew > 100<<20 {
		t.Errorf("a query of the amplified resource grew the server's heap by %d MB (peak %d MB)", grew>>20, peak>>20)
	}
	if r := h.ok("query", `{"database":"s","resource":"small","query":".n"}`); r.raw("results") != "[1]" {
		t.Fatalf("an ordinary query after it: %s", r.data)
	}
	// Four copies more make 4 GiB of JSON, over what a query may read whole: refused at once, not streamed.
	ops = ops[:0]
	for i := 8; i < 12; i++ {
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"","path":"/c%d"}`, i))
	}
	h.ok("patch", `{"database":"s","resource":"amp","operations":[`+strings.Join(ops, ",")+`]}`)
	if r := h.fail("query", `{"database":"s","resource":"amp","query":"type"}`, codeLimitExceeded); !strings.Contains(r.text, "reads its input whole") {
		t.Fatalf("a query of 4 GiB: %s", r.text)
	}
	if r := h.ok("query", `{"database":"s","resource":"small","query":".n"}`); r.raw("results") != "[1]" {
		t.Fatalf("an ordinary query after it: %s", r.data)
	}
}

// TestResultTextWithinCap: a result's text (summary, or error headline, plus data) stays within
// max_output_chars whatever path the caller sent. (Found in review: the summary of update and the headline of its
// errors quote the path whole, so a 60,000-character key made answers of 60,000 and 150,000 characters against the
// cap of 50,000.)
func TestResultTextWithinCap(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesOn, Protected: []string{}})
	h.ok("create_database", `{"database":"s"}`)
	long := strings.Repeat("k", 60000)
	h.ok("put", `{"database":"s","resource":"lk","value":{"`+long+`":1}}`)
	for _, c := range []struct{ tool, args string }{
		{"update", `{"database":"s","resource":"lk","path":"/` + long + `","value":2}`},
		{"update", `{"database":"s","resource":"lk","path":"/` + long + `y","value":2}`},
	} {
		if r := h.call(c.tool, c.args); len(r.text) > 50000 {
			t.Errorf("%s: a result of %d characters (error %v), over the cap of 50,000", c.tool, len(r.text), r.res.IsError)
		}
	}
}

package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	sjs "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/strata-db/strata/gate"
)

// rv validates results as a TypeScript-SDK-like client would: every success's structuredContent against the
// tool's declared outputSchema (santhosh-tekuri, 2020-12), integers safe (0..2^53-1), no null where the schema
// says array or object; every error without structured content and with text beginning with its code.
type rv struct {
	h       *harness
	schemas map[string]*sjs.Schema
	raw     map[string]map[string]any // the output schemas as decoded
	seen    map[string]int            // calls validated, by tool
}

func newRV(h *harness) *rv {
	v := &rv{h: h, schemas: map[string]*sjs.Schema{}, raw: map[string]map[string]any{}, seen: map[string]int{}}
	for _, tool := range h.listTools() {
		b, _ := json.Marshal(tool.OutputSchema)
		doc, err := sjs.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			h.t.Fatal(err)
		}
		c := sjs.NewCompiler()
		c.DefaultDraft(sjs.Draft2020)
		url := "mem://" + tool.Name + ".json"
		if err := c.AddResource(url, doc); err != nil {
			h.t.Fatal(err)
		}
		s, err := c.Compile(url)
		if err != nil {
			h.t.Fatalf("%s: output schema does not compile: %v", tool.Name, err)
		}
		v.schemas[tool.Name] = s
		var m map[string]any
		json.Unmarshal(b, &m)
		v.raw[tool.Name] = m
	}
	return v
}

// call calls a tool and validates its result; it never stops the test, so that one run lists every fault.
func (v *rv) call(name, args string) (*mcpsdk.CallToolResult, map[string]any, string) {
	t := v.h.t
	t.Helper()
	res, err := v.h.cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Errorf("%s %s: protocol error: %v", name, args, err)
		return nil, nil, ""
	}
	v.seen[name]++
	text := ""
	if len(res.Content) == 1 {
		if tc, ok := res.Content[0].(*mcpsdk.TextContent); ok {
			text = tc.Text
		}
	}
	if res.IsError {
		if res.StructuredContent != nil {
			t.Errorf("%s %s: error result carries structured content", name, args)
		}
		te := metaError(res)
		if te == nil || te.Code == "" || !strings.HasPrefix(text, te.Code+": ") {
			t.Errorf("%s %s: error text does not begin with its code: %.200s", name, args, text)
		}
		return res, nil, text
	}
	sb, _ := json.Marshal(res.StructuredContent)
	inst, err := sjs.UnmarshalJSON(bytes.NewReader(sb))
	if err != nil {
		t.Errorf("%s %s: structured content is not JSON: %v", name, args, err)
		return res, nil, text
	}
	s := v.schemas[name]
	if s == nil {
		t.Errorf("%s: no output schema", name)
	} else if err := s.Validate(inst); err != nil {
		t.Errorf("%s %s: structuredContent does not match outputSchema: %v\n%s", name, args, err, sb)
	}
	v.walk(name+" "+args, v.raw[name], inst, "")
	m, _ := inst.(map[string]any)
	return res, m, text
}

var maxSafe = new(big.Int).SetUint64(1<<53 - 1)

// walk checks integers and nulls against the schema, path by path.
func (v *rv) walk(where string, s map[string]any, inst any, at string) {
	t := v.h.t
	t.Helper()
	if s == nil {
		return
	}
	typ, _ := s["type"].(string)
	switch typ {
	case "array", "object":
		if inst == nil {
			t.Errorf("%s: %s is null, schema says %s", where, at, typ)
			return
		}
	case "integer":
		if n, ok := inst.(json.Number); ok {
			bi, ok := new(big.Int).SetString(n.String(), 10)
			if !ok {
				t.Errorf("%s: %s = %s is not an integer literal", where, at, n)
			} else if bi.Sign() < 0 || bi.Cmp(maxSafe) > 0 {
				t.Errorf("%s: %s = %s is negative or past 2^53", where, at, n)
			}
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		if m, ok := inst.(map[string]any); ok {
			for k, sv := range props {
				if x, ok := m[k]; ok {
					ss, _ := sv.(map[string]any)
					v.walk(where, ss, x, at+"/"+k)
				}
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		if a, ok := inst.([]any); ok {
			for i, x := range a {
				v.walk(where, items, x, fmt.Sprintf("%s/%d", at, i))
			}
		}
	}
}

// ok calls a tool that must succeed; it returns the structured content and the text.
func (v *rv) ok(name, args string) (map[string]any, string) {
	v.h.t.Helper()
	res, m, text := v.call(name, args)
	if res != nil && res.IsError {
		v.h.t.Errorf("%s %s: unexpected error: %.300s", name, args, text)
	}
	return m, text
}

// fail calls a tool that must fail with code; it returns the error's fields.
func (v *rv) fail(name, args, code string) *toolError {
	v.h.t.Helper()
	res, _, text := v.call(name, args)
	if res == nil {
		return nil
	}
	if !res.IsError {
		v.h.t.Errorf("%s %s: succeeded, want %s: %.300s", name, args, code, text)
		return nil
	}
	te := metaError(res)
	if te == nil || te.Code != code {
		v.h.t.Errorf("%s %s: code %s, want %s: %.300s", name, args, te.Code, code, text)
	}
	return te
}

// metaError is an error result's fields as a client finds them in _meta.
func metaError(res *mcpsdk.CallToolResult) *toolError {
	b, _ := json.Marshal(res.Meta[errorMetaKey])
	var te toolError
	if json.Unmarshal(b, &te) != nil {
		return nil
	}
	return &te
}

func jnum(m map[string]any, k string) int64 {
	n, _ := m[k].(json.Number)
	i, _ := n.Int64()
	return i
}

func jarr(m map[string]any, k string) []any { a, _ := m[k].([]any); return a }

// TestReviewOutputsAllTools calls every tool in many situations and validates each answer.
func TestOutputsAllTools(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesOn, Principal: "agent-1", MaxOutputChars: 4000})
	v := newRV(h)
	v.ok("status", `{}`)
	v.ok("list_databases", `{}`)
	v.ok("create_database", `{"database":"shop"}`)
	v.ok("create_database", `{"database":"empty"}`)
	v.ok("list_databases", `{}`)
	v.ok("list_databases", `{"limit":1}`)
	v.ok("list_resources", `{"database":"empty"}`)
	v.ok("history", `{"database":"empty"}`)
	v.ok("list_branches", `{"database":"empty"}`)
	v.ok("list_snapshots", `{"database":"empty"}`)
	v.ok("list_plans", `{"database":"empty"}`)
	v.ok("show_revision", `{"database":"empty","revision":1}`)
	v.ok("query", `{"database":"empty","query":"."}`)
	v.ok("query", `{"database":"empty","query":"empty"}`)
	v.ok("bisect", `{"database":"empty","predicate":"true"}`)
	v.ok("bisect", `{"database":"empty","predicate":"false"}`)
	v.ok("diff", `{"database":"empty","from_revision":1}`)

	// writes: success, unchanged, replay
	v.ok("put", `{"database":"shop","resource":"catalog","value":{"items":[1,2,3],"price":10,"deep":{"a":{"b":{"c":1}}}}}`)
	v.ok("put", `{"database":"shop","resource":"catalog","value":{"items":[1,2,3],"price":10,"deep":{"a":{"b":{"c":1}}}}}`)
	v.ok("put", `{"database":"shop","resource":"big","value":12345678901234567890123}`)
	v.ok("put", `{"database":"shop","resource":"neg","value":-5}`)
	v.ok("insert", `{"database":"shop","resource":"catalog","path":"/items/-","value":4,"idempotency_key":"k1"}`)
	v.ok("insert", `{"database":"shop","resource":"catalog","path":"/items/-","value":4,"idempotency_key":"k1"}`)
	v.ok("update", `{"database":"shop","resource":"catalog","path":"/items/0","value":0}`)
	v.ok("update", `{"database":"shop","resource":"catalog","path":"/items/0","value":0}`)
	v.ok("patch", `{"database":"shop","resource":"catalog","operations":[{"op":"add","path":"/x","value":1}]}`)
	v.ok("patch", `{"database":"shop","resource":"catalog","operations":[]}`)
	v.ok("patch", `{"database":"shop","resource":"catalog","operations":[{"op":"test","path":"/x","value":1}]}`)
	v.ok("transform", `{"database":"shop","resource":"catalog","query":".y = 2"}`)
	v.ok("transform", `{"database":"shop","resource":"catalog","query":"."}`)
	v.ok("create_branch", `{"database":"shop","name":"work"}`)
	v.ok("create_branch", `{"database":"shop","name":"work2","from_revision":2}`)
	v.ok("put", `{"database":"shop","resource":"catalog","value":{"items":[9]},"branch":"work"}`)
	v.ok("create_snapshot", `{"database":"shop","name":"s1","note":"n"}`)
	v.ok("create_snapshot", `{"database":"shop","name":"s2","revision":2}`)
	v.ok("delete", `{"database":"shop","resource":"catalog","path":"/price","branch":"work2"}`)
	// plans (mode on: overwriting main needs one)
	v.ok("delete", `{"database":"shop","resource":"catalog","path":"/y"}`)
	v.ok("delete", `{"database":"shop","resource":"catalog","path":""}`)
	v.ok("restore", `{"database":"shop","resource":"catalog","path":"/x","from_revision":2}`)
	v.ok("restore", `{"database":"shop","resource":"gone","path":"","from_revision":1}`)
	v.ok("revert", `{"database":"shop","revision":2}`)
	v.ok("revert", `{"database":"shop","branch":"work","snapshot":"s2"}`)
	v.ok("promote", `{"database":"shop","branch":"work"}`)
	v.ok("promote", `{"database":"shop","branch":"work2","into":"work"}`)
	v.ok("delete_snapshot", `{"database":"shop","name":"s1"}`)
	v.ok("delete_branch", `{"database":"shop","name":"work2"}`)
	pl, _ := v.ok("list_plans", `{"database":"shop"}`)
	for _, p := range jarr(pl, "plans") {
		id := p.(map[string]any)["plan_id"].(string)
		v.fail("apply_plan", `{"plan_id":"`+id+`"}`, codeConfirmationRequired)
		h.decide(id, true, "")
		v.call("apply_plan", `{"plan_id":"`+id+`"}`)
	}
	v.ok("list_plans", `{"database":"shop","limit":1}`)

	// reads
	for _, ref := range []string{``, `,"revision":2`, `,"snapshot":"s2"`, `,"branch":"work"`, `,"branch":"main","at":"2026-03-14T09:00:20Z"`, `,"at":"2030-01-01T00:00:00Z"`} {
		v.call("list_resources", `{"database":"shop"`+ref+`}`)
		v.call("resource_info", `{"database":"shop","resource":"catalog"`+ref+`}`)
		v.call("read", `{"database":"shop","resource":"catalog"`+ref+`}`)
		v.call("read", `{"database":"shop","resource":"catalog","max_depth":1,"limit":1`+ref+`}`)
		v.call("query", `{"database":"shop","query":".[]"`+ref+`}`)
		v.call("query", `{"database":"shop","resource":"catalog","query":".items[]","limit":1`+ref+`}`)
	}
	v.ok("read", `{"database":"shop","resource":"big"}`)
	v.ok("read", `{"database":"shop","resource":"neg"}`)
	v.ok("query", `{"database":"shop","resource":"big","query":"."}`)
	v.ok("history", `{"database":"shop"}`)
	v.ok("history", `{"database":"shop","limit":2}`)
	v.ok("history", `{"database":"shop","resource":"catalog","path":"/items"}`)
	v.ok("history", `{"database":"shop","resource":"nothing"}`)
	for r := 1; r <= 25; r++ {
		v.call("show_revision", fmt.Sprintf(`{"database":"shop","revision":%d}`, r))
	}
	v.ok("diff", `{"database":"shop","from_revision":1}`)
	v.ok("diff", `{"database":"shop","from_revision":1,"limit":1}`)
	v.ok("diff", `{"database":"shop","from_snapshot":"s2","to_branch":"work"}`)
	v.ok("diff", `{"database":"shop","from_revision":2,"to_revision":2}`)
	v.ok("diff", `{"database":"shop","resource":"catalog","path":"/items","from_revision":2}`)
	v.ok("path_history", `{"database":"shop","resource":"catalog","path":"/items"}`)
	v.ok("path_history", `{"database":"shop","resource":"catalog","path":"/nothing"}`)
	v.ok("path_history", `{"database":"shop","resource":"catalog","path":"","limit":1}`)
	v.ok("bisect", `{"database":"shop","resource":"catalog","predicate":".x == 1"}`)
	v.ok("bisect", `{"database":"shop","resource":"catalog","predicate":"true"}`)
	v.ok("bisect", `{"database":"shop","predicate":"has(\"big\")","from_revision":2,"to_revision":5}`)
	v.ok("list_branches", `{"database":"shop"}`)
	v.ok("list_branches", `{"database":"shop","limit":1}`)
	v.ok("list_snapshots", `{"database":"shop"}`)
	v.ok("list_snapshots", `{"database":"shop","limit":1}`)

	// errors
	v.fail("read", `{"database":"shop","resource":"nope"}`, codeNotFound)
	v.fail("read", `{"database":"nope","resource":"nope"}`, codeNotFound)
	v.fail("read", `{"database":"shop","resource":"catalog","path":"bad"}`, codeInvalidPath)
	v.fail("read", `{"database":"shop","resource":"catalog","revision":1,"snapshot":"s2"}`, codeInvalidArgument)
	v.fail("query", `{"database":"shop","query":".["}`, codeQueryError)
	v.fail("put", `{"database":"shop","resource":"catalog","value":1,"branch":"work","expected_head":1}`, codeConflict)
	v.fail("status", `{"x":1}`, codeInvalidArgument)
	v.fail("apply_plan", `{"plan_id":"plan-x"}`, codeNotFound)

	for _, tool := range h.listTools() {
		if v.seen[tool.Name] == 0 {
			t.Errorf("tool %s never called", tool.Name)
		}
	}
}

// TestReviewScopedSweep validates every read and a few writes of a scoped principal (hidden revisions 4 and 7).
func TestScopedSweep(t *testing.T) {
	h := scopeHarness(t)
	v := newRV(h)
	for _, a := range []string{`{"database":"shop"}`, `{"database":"shop","limit":1}`} {
		v.ok("history", a)
		v.ok("list_branches", a)
		v.ok("list_snapshots", a)
		v.ok("list_resources", a)
	}
	for r := 1; r <= 7; r++ {
		v.call("show_revision", fmt.Sprintf(`{"database":"shop","revision":%d}`, r))
		v.call("diff", fmt.Sprintf(`{"database":"shop","from_revision":%d}`, r))
	}
	v.ok("list_databases", `{}`)
	v.ok("query", `{"database":"shop","query":"keys"}`)
	v.ok("bisect", `{"database":"shop","predicate":"has(\"orders\")"}`)
	v.ok("read", `{"database":"shop","resource":"orders","snapshot":"snap4"}`)
	v.ok("resource_info", `{"database":"shop","resource":"orders"}`)
	v.ok("path_history", `{"database":"shop","resource":"orders","path":""}`)
	v.ok("create_branch", `{"database":"shop","name":"w"}`)
	v.ok("delete", `{"database":"shop","resource":"orders","path":"","branch":"w"}`)
}

// ---- confirmed bugs: minimal failing tests

// Bug 1: a write whose revision touches many resources commits, then answers LIMIT_EXCEEDED ("ask for less"), and
// history / show_revision / path_history can never show that revision, even with limit 1.
func TestManyResourcesRevision(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesOn, Principal: "agent-1", MaxOutputChars: 2000})
	h.ok("create_database", `{"database":"shop"}`)
	h.ok("create_branch", `{"database":"shop","name":"w"}`)
	for i := 0; i < 30; i++ {
		h.ok("put", fmt.Sprintf(`{"database":"shop","resource":"r%02d%s","value":1,"branch":"w"}`, i, strings.Repeat("n", 90)))
	}
	before := h.head("shop", "w")
	r := h.call("revert", `{"database":"shop","branch":"w","revision":1}`)
	after := h.head("shop", "w")
	if r.res.IsError && after != before {
		t.Errorf("revert committed revision %d but answered an error: %s", after, r.summary)
	}
	for _, c := range []string{
		`{"database":"shop","branch":"w","limit":1}`,
	} {
		if r := h.call("history", c); r.res.IsError {
			t.Errorf("history %s: %s", c, r.summary)
		}
	}
	if r := h.call("show_revision", fmt.Sprintf(`{"database":"shop","revision":%d}`, after)); r.res.IsError {
		t.Errorf("show_revision %d: %s", after, r.summary)
	}
}

// Bug 2: a scoped principal reads main's head as 6 (hidden revision 7 is folded away), but expected_head 6 is
// refused with CONFLICT naming hidden revision 7, which no read of this principal shows.
func TestScopedExpectedHead(t *testing.T) {
	h := scopeHarness(t)
	b := h.ok("list_branches", `{"database":"shop"}`)
	head := b.m["branches"].([]any)[0].(map[string]any)["head"].(json.Number).String()
	r := h.call("put", `{"database":"shop","resource":"orders","value":[],"branch":"main","expected_head":`+head+`}`)
	if r.res.IsError {
		t.Errorf("expected_head %s (main's head as list_branches shows it) refused: %s", head, r.summary)
	}
	if r.res.IsError && r.num("head") != 0 {
		if s := h.call("show_revision", fmt.Sprintf(`{"database":"shop","revision":%d}`, r.num("head"))); s.res.IsError {
			t.Errorf("the CONFLICT names head %d, which this principal cannot read: %s", r.num("head"), s.summary)
		}
	}
}

// Bug 3: a write that changed nothing answers parent == revision (the head as its own parent) on a protected branch
// (the policy's dry run answers it), but the head's real parent on an unprotected one; an unchanged promote answers
// merged = the second parent of the head (some earlier merge), and says "(merged)".
func TestUnchangedParent(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesOn, Principal: "agent-1"}) // main protected (the default)
	h.ok("create_database", `{"database":"shop"}`)
	h.ok("put", `{"database":"shop","resource":"c","value":{"a":1,"b":1}}`)
	r := h.ok("put", `{"database":"shop","resource":"c","value":{"a":1,"b":1}}`)
	if r.m["unchanged"] == true && r.num("parent") == r.num("revision") {
		t.Errorf("unchanged put: parent %d == revision %d: %s", r.num("parent"), r.num("revision"), r.data)
	}

	h2 := newHarness(t, Config{Writes: gate.WritesOn, Principal: "agent-1", Protected: []string{}})
	h2.ok("create_database", `{"database":"shop"}`)
	h2.ok("put", `{"database":"shop","resource":"c","value":{"a":1,"b":1}}`)
	h2.ok("create_branch", `{"database":"shop","name":"w"}`)
	h2.ok("update", `{"database":"shop","resource":"c","path":"/a","value":2,"branch":"w"}`)
	h2.ok("update", `{"database":"shop","resource":"c","path":"/b","value":2}`)
	h2.ok("promote", `{"database":"shop","branch":"w"}`) // a real merge: head has parents [main, w]
	h2.ok("create_branch", `{"database":"shop","name":"w2"}`)
	p := h2.ok("promote", `{"database":"shop","branch":"w2"}`) // nothing to bring in
	if p.m["unchanged"] == true && (p.raw("merged") != "" || strings.Contains(p.summary, "(merged)")) {
		t.Errorf("unchanged promote claims a merge: %s %s", p.summary, p.data)
	}
}

// Bug 4: query names the revision but not the branch it read through (every other read with a ref does; the
// contract: "every read names the state it answered: revision (and branch where one was used)").
func TestQueryNamesBranch(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesOn, Principal: "agent-1"})
	h.ok("create_database", `{"database":"shop"}`)
	h.ok("create_branch", `{"database":"shop","name":"w"}`)
	h.ok("put", `{"database":"shop","resource":"c","value":1,"branch":"w"}`)
	if r := h.ok("read", `{"database":"shop","resource":"c","branch":"w"}`); r.str("branch") != "w" {
		t.Fatalf("read: %s", r.data)
	}
	if r := h.ok("query", `{"database":"shop","resource":"c","query":".","branch":"w"}`); r.str("branch") != "w" {
		t.Errorf("query through branch w does not name it: %s", r.data)
	}
	h.ok("create_snapshot", `{"database":"shop","name":"s1","branch":"w"}`)
	if r := h.ok("query", `{"database":"shop","resource":"c","query":".","snapshot":"s1"}`); r.str("branch") != "" {
		t.Errorf("query of a snapshot names a branch: %s", r.data)
	}
	if r := h.ok("query", `{"database":"shop","query":"keys"}`); r.str("branch") != "main" {
		t.Errorf("query of main's head does not name main: %s", r.data)
	}
}

// TestBisectRangeErrorsNameArguments: a bad range names the argument at fault (found in review: "from (3) is after
// to (2)" named neither from_revision nor to_revision).
func TestBisectRangeErrorsNameArguments(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesOn, Principal: "agent-1", Protected: []string{}})
	h.ok("create_database", `{"database":"shop"}`)
	for i := range 3 {
		h.ok("put", fmt.Sprintf(`{"database":"shop","resource":"c","value":%d}`, i))
	}
	if r := h.call("bisect", `{"database":"shop","resource":"c","predicate":". > 0","from_revision":3,"to_revision":2}`); !r.res.IsError || !strings.Contains(r.summary, "from_revision") || !strings.Contains(r.summary, "to_revision") {
		t.Errorf("from after to: %s", r.summary)
	}
	if r := h.call("bisect", `{"database":"shop","resource":"c","predicate":". > 0","to_revision":99}`); !r.res.IsError || !strings.Contains(r.summary, "to_revision") {
		t.Errorf("to off the branch: %s", r.summary)
	}
}

// TestScopedPlanBaseVisible: a scoped agent's plan names its base as the agent sees it: the newest revision it may
// see, not a hidden head (found in review: the answer named hidden revision 7).
func TestScopedPlanBaseVisible(t *testing.T) {
	h := scopeHarness(t)
	b := h.ok("list_branches", `{"database":"shop"}`)
	head := b.m["branches"].([]any)[0].(map[string]any)["head"].(json.Number).String()
	r := h.call("put", `{"database":"shop","resource":"orders","value":[]}`)
	if r.res.IsError || r.m["plan_id"] == nil {
		t.Fatalf("setup: a put on main is not a plan here: %s", r.summary)
	}
	if got := r.raw("base"); got != head {
		t.Errorf("the plan's base is %s; main's head as this agent sees it is %s", got, head)
	}
	if l := h.ok("list_plans", `{"database":"shop"}`); !strings.Contains(string(l.data), `"base":`+head) {
		t.Errorf("list_plans: %s, want base %s", l.data, head)
	}
}

package mcp

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/strata-db/strata/gate"
)

const shopSchema = `{"type":"object","required":["items"],"properties":{
	"items":{"type":"array","maxItems":3,"items":{"type":"object","required":["sku","price"],
		"properties":{"sku":{"type":"string"},"price":{"type":"number","minimum":0}}}},
	"note":{"type":"string"}}}`

// setSchema sets a resource's schema through the library, as the operator's strata schema set does.
func (h *harness) setSchema(db, res, schema string) {
	h.t.Helper()
	d, err := h.dir.Open(context.Background(), db)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := d.SetSchema(context.Background(), res, []byte(schema), "operator"); err != nil {
		h.t.Fatal(err)
	}
}

// refused calls a write that must be refused with SCHEMA_VIOLATION, its first violation at path (keyword), and
// checks that the branch did not move.
func (h *harness) refused(branch, name, args, path, keyword string) *result {
	h.t.Helper()
	before := h.head("shop", branch)
	r := h.fail(name, args, codeSchemaViolation)
	vs, _ := r.m["violations"].([]any)
	if len(vs) == 0 || r.num("violation_count") == 0 {
		h.t.Fatalf("%s: no violations listed:\n%s", name, r.text)
	}
	first := vs[0].(map[string]any)
	if first["path"] != path || first["keyword"] != keyword {
		h.t.Fatalf("%s: first violation %v, want %s (%s):\n%s", name, first, path, keyword, r.text)
	}
	if !strings.Contains(r.summary, "resource_info") || !strings.Contains(r.summary, "nothing was written") {
		h.t.Errorf("%s: the headline does not say what happened and where the schema is: %s", name, r.summary)
	}
	// What the violations quote from the data stays inside the boundary.
	if m, _ := first["message"].(string); m != "" && strings.Contains(r.summary, m) {
		h.t.Errorf("%s: a violation's message is in the headline: %s", name, r.summary)
	}
	if after := h.head("shop", branch); after != before {
		h.t.Fatalf("%s: refused, yet %s moved from %d to %d", name, branch, before, after)
	}
	return r
}

// TestSchemaViolationEveryWriteTool: with a schema set on a resource, every write tool refuses a change that would
// break it (SCHEMA_VIOLATION, at the right path, nothing written) and accepts a valid one.
func TestSchemaViolationEveryWriteTool(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesBranches, Principal: "agent-1"})
	h.ok("create_database", `{"database":"shop"}`)
	old := h.seed("shop", "cat", `{"items":[{"sku":"a","price":"old"}]}`) // before the schema: invalid
	h.seed("shop", "cat", `{"items":[{"sku":"a","price":1}],"note":"n"}`)
	h.setSchema("shop", "cat", shopSchema)
	h.ok("create_branch", `{"database":"shop","name":"work"}`)

	info := h.ok("resource_info", `{"database":"shop","resource":"cat"}`)
	if !strings.Contains(info.raw("schema"), `"maxItems":3`) || !strings.Contains(info.summary, "with a schema") {
		t.Fatalf("resource_info does not show the schema:\n%s", info.text)
	}
	if r := h.ok("resource_info", fmt.Sprintf(`{"database":"shop","resource":"cat","revision":%d}`, old)); r.raw("schema") == "" {
		t.Fatal("the schema is configuration: it applies whatever state is read")
	}

	w := func(_, rest string) string {
		return fmt.Sprintf(`{"database":"shop","resource":"cat","branch":"work",%s}`, rest)
	}
	h.refused("work", "put", w("put", `"value":{"items":[{"sku":"a"}]}`), "/items/0", "required")
	h.ok("put", w("put", `"value":{"items":[{"sku":"a","price":2}],"note":"n"}`))
	h.refused("work", "patch", w("patch", `"operations":[{"op":"replace","path":"/items/0/price","value":"x"}]`), "/items/0/price", "type")
	h.ok("patch", w("patch", `"operations":[{"op":"replace","path":"/items/0/price","value":3}]`))
	h.refused("work", "insert", w("insert", `"path":"/items/-","value":{"sku":1,"price":1}`), "/items/1/sku", "type")
	h.ok("insert", w("insert", `"path":"/items/-","value":{"sku":"b","price":1}`))
	h.refused("work", "update", w("update", `"path":"/note","value":5`), "/note", "type")
	h.ok("update", w("update", `"path":"/items/1/price","value":4`))
	h.refused("work", "delete", w("delete", `"path":"/items/0/sku"`), "/items/0", "required")
	h.ok("delete", w("delete", `"path":"/items/1"`))
	h.refused("work", "transform", w("transform", `"query":".items[0].price = -1"`), "/items/0/price", "minimum")
	h.ok("transform", w("transform", `"query":".note = \"t\""`))
	h.refused("work", "restore", w("restore", fmt.Sprintf(`"path":"/items/0/price","from_revision":%d`, old)), "/items/0/price", "type")
	h.ok("restore", w("restore", `"path":"/note","from_branch":"main"`))
	h.refused("work", "revert", fmt.Sprintf(`{"database":"shop","branch":"work","revision":%d}`, old), "/items/0/price", "type")
	h.ok("revert", fmt.Sprintf(`{"database":"shop","branch":"work","revision":%d}`, old+1))

	// Two branches, each valid, whose merge would hold four items (maxItems 3): the promote is refused.
	h.ok("create_branch", `{"database":"shop","name":"more","from_branch":"work"}`)
	h.ok("insert", `{"database":"shop","resource":"cat","branch":"more","path":"/items/-","value":{"sku":"m1","price":1}}`)
	h.ok("insert", `{"database":"shop","resource":"cat","branch":"more","path":"/items/-","value":{"sku":"m2","price":1}}`)
	h.ok("insert", `{"database":"shop","resource":"cat","branch":"work","path":"/items/0","value":{"sku":"w1","price":1}}`)
	h.ok("insert", `{"database":"shop","resource":"cat","branch":"work","path":"/items/0","value":{"sku":"w2","price":1}}`)
	h.refused("work", "promote", `{"database":"shop","branch":"more","into":"work"}`, "/items", "maxItems")
	h.ok("delete", `{"database":"shop","resource":"cat","branch":"work","path":"/items/0"}`)
	h.ok("delete", `{"database":"shop","resource":"cat","branch":"work","path":"/items/0"}`)
	h.ok("promote", `{"database":"shop","branch":"more","into":"work"}`)

	// main is protected: an invalid change is refused when the plan would be made, not when it is applied.
	h.refused("main", "update", `{"database":"shop","resource":"cat","path":"/note","value":7}`, "/note", "type")
	if ps, _ := h.ok("list_plans", `{"database":"shop"}`).m["plans"].([]any); len(ps) != 0 {
		t.Fatalf("a refused change left a plan: %v", ps)
	}
	// A plan made while valid, whose result a stricter schema then refuses, is refused when applied.
	id := h.planned("update", `{"database":"shop","resource":"cat","path":"/note","value":"long note"}`)
	h.decide(id, true, "")
	h.setSchema("shop", "cat", strings.Replace(shopSchema, `"note":{"type":"string"}`, `"note":{"type":"string","maxLength":4}`, 1))
	h.refused("main", "apply_plan", `{"plan_id":"`+id+`"}`, "/note", "maxLength")
	id = h.planned("update", `{"database":"shop","resource":"cat","path":"/note","value":"ok"}`)
	h.decide(id, true, "")
	h.ok("apply_plan", `{"plan_id":"`+id+`"}`)
	if got := h.ok("read", `{"database":"shop","resource":"cat","path":"/note"}`).raw("value"); got != `"ok"` {
		t.Fatalf("after the valid plan: %s", got)
	}

	// The schema is the operator's: reverting main to a state from before it was set leaves it in force.
	h.ok("create_branch", `{"database":"shop","name":"again","from_revision":1}`)
	h.ok("revert", `{"database":"shop","branch":"again","revision":1}`)
	d, _ := h.dir.Open(context.Background(), "shop")
	if rec, ok, err := d.Schema(context.Background(), "cat"); err != nil || !ok || !strings.Contains(string(rec.Schema), "maxLength") {
		t.Fatalf("schema after reverts: %+v %v %v", rec, ok, err)
	}
}

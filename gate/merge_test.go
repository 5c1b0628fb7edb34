package gate

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/strata-db/strata/snapshots"
)

// mergeFixture: on shop, branch work from the fixture's head; the operator then commits into's changes on main and
// the branch's on work.
func mergeFixture(t *testing.T, g *Gate, into, branch []Change) *View {
	t.Helper()
	ctx := context.Background()
	ov, err := actor(t, g, Operator("op")).Open(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ov.CreateBranch(ctx, "work", snapshots.Ref{}); err != nil {
		t.Fatal(err)
	}
	for _, ch := range into {
		if _, err := ov.Write(ctx, ch); err != nil {
			t.Fatal(err)
		}
	}
	for _, ch := range branch {
		ch.Branch = "work"
		if _, err := ov.Write(ctx, ch); err != nil {
			t.Fatal(err)
		}
	}
	return ov
}

func put(res, value string) Change {
	return Change{Op: OpPut, Resource: res, Value: json.RawMessage(value)}
}

func readAt(t *testing.T, v *View, res string) string {
	t.Helper()
	ctx := context.Background()
	head, err := v.Resolve(ctx, snapshots.Ref{})
	if err != nil {
		t.Fatal(err)
	}
	val, err := v.Lookup(ctx, head, res, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := v.Forest().JSON(ctx, val)
	return string(b)
}

// TestPromoteResolveThroughGate: a promote's conflicts come back with the outcome (ConflictReports shows each with
// its three values); a resolution that names a path not in conflict is refused, and one that settles only some
// writes nothing; resolutions become part of a plan of the promote, and applying the plan merges as resolved.
func TestPromoteResolveThroughGate(t *testing.T) {
	ctx := context.Background()
	g := fixture(t, "")
	ov := mergeFixture(t, g,
		[]Change{put("customers", `{"alice":{"city":"Bergen","tier":"gold"}}`)},
		[]Change{put("customers", `{"alice":{"city":"Paris","tier":"silver"}}`)})
	agent := actor(t, g, Principal{Name: "agent", Mode: WritesBranches})
	v, _ := agent.Open(ctx, "shop")
	head, _ := ov.Resolve(ctx, snapshots.Ref{})
	before := readAt(t, ov, "customers")

	out, err := v.Write(ctx, Change{Op: OpPromote, Source: "work", Branch: "main"})
	if Code(err) != CodeConflict || out == nil || out.Promote == nil || len(out.Promote.Conflicts) != 2 {
		t.Fatalf("promote: %+v %v, want two conflicts", out, err)
	}
	reports, total, err := v.ConflictReports(ctx, out.Promote, 100, 0)
	if err != nil || total != 2 {
		t.Fatal(total, err)
	}
	got, _ := json.Marshal(reports)
	want := `[{"path":"/customers/alice/city","reason":"changed on both sides to different values","base":"Oslo","into":"Bergen","branch":"Paris"},` +
		`{"path":"/customers/alice/tier","reason":"added on both sides with different values","into":"gold","branch":"silver"}]`
	if string(got) != want {
		t.Fatalf("reports\n%s\nwant\n%s", got, want)
	}
	// A value over the bound is an $elided marker; a budget keeps the first reports only.
	reports, total, _ = v.ConflictReports(ctx, out.Promote, 6, 400)
	if total != 2 || len(reports) != 1 || !strings.Contains(string(reports[0].Into), `"$elided":"string"`) || string(reports[0].Base) != `"Oslo"` {
		t.Fatalf("bounded reports %d of %d: %+v", len(reports), total, reports)
	}

	for _, tc := range []struct {
		resolve map[string]string
		code    string
		says    string
	}{
		{map[string]string{"/customers/alice/city": "branch", "/customers/alice/tier": "into", "/customers/alice": "into"}, CodeInvalidArgument, `"/customers/alice", which is not in conflict`},
		{map[string]string{"/customers/alice/city": "theirs"}, CodeInvalidArgument, `use "into"`},
		{map[string]string{"customers/alice/city": "branch"}, CodeInvalidPath, "JSON Pointer"},
		{map[string]string{"/customers/alice/city": "branch"}, CodeConflict, "conflicts at 1 path"},
	} {
		out, err := v.Write(ctx, Change{Op: OpPromote, Source: "work", Branch: "main", Resolve: tc.resolve})
		if Code(err) != tc.code || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("resolve %v: %+v %v, want %s saying %q", tc.resolve, out, err, tc.code, tc.says)
		}
	}
	if now, _ := ov.Resolve(ctx, snapshots.Ref{}); now.Rev.Number != head.Rev.Number || readAt(t, ov, "customers") != before {
		t.Fatal("a refused promote wrote")
	}

	// Settled: main is protected, so the promote is a plan that records its resolutions.
	resolve := map[string]string{"/customers/alice/city": "branch", "/customers/alice/tier": "into"}
	out, err = v.Write(ctx, Change{Op: OpPromote, Source: "work", Branch: "main", Resolve: resolve})
	if err != nil || out.Plan == nil {
		t.Fatalf("%+v %v, want a plan", out, err)
	}
	p := out.Plan.Plan
	ch, err := PlanChange(p)
	if err != nil || ch.Resolve["/customers/alice/city"] != "branch" || p.Summary != "promote work into main, settling 2 conflict(s)" {
		t.Fatalf("plan %+v: change %+v %v", p, ch, err)
	}
	if _, err := ov.DecidePlan(ctx, p.ID, true, ""); err != nil {
		t.Fatal(err)
	}
	_, p, _ = agent.FindPlan(ctx, p.ID)
	if out, err := v.ApplyPlan(ctx, p, ""); err != nil || out.Result == nil || len(out.Promote.Resolved) != 2 {
		t.Fatalf("apply: %+v %v", out, err)
	}
	if got := readAt(t, ov, "customers"); got != `{"alice":{"city":"Paris","tier":"gold"}}` {
		t.Fatalf("after the resolved promote: %s", got)
	}
}

// TestPromotePlanRebasedResolution: a plan of a resolved promote survives an unrelated commit, but not one that
// takes a path it resolved out of conflict: PLAN_CHANGED, nothing written.
func TestPromotePlanRebasedResolution(t *testing.T) {
	ctx := context.Background()
	g := fixture(t, "")
	ov := mergeFixture(t, g,
		[]Change{put("customers", `{"alice":{"city":"Bergen"},"bob":{"city":"Rome"}}`)},
		[]Change{put("customers", `{"alice":{"city":"Paris"},"bob":{"city":"Lima"}}`)})
	agent := actor(t, g, Principal{Name: "agent", Mode: WritesBranches})
	v, _ := agent.Open(ctx, "shop")
	plan := func() snapshots.Plan {
		t.Helper()
		out, err := v.Write(ctx, Change{Op: OpPromote, Source: "work", Resolve: map[string]string{"/customers/alice/city": "into", "/customers/bob": "branch"}})
		if err != nil || out.Plan == nil {
			t.Fatalf("%+v %v, want a plan", out, err)
		}
		if _, err := ov.DecidePlan(ctx, out.Plan.Plan.ID, true, ""); err != nil {
			t.Fatal(err)
		}
		_, p, _ := agent.FindPlan(ctx, out.Plan.Plan.ID)
		return p
	}
	p := plan()
	if _, err := ov.Write(ctx, put("orders", `[]`)); err != nil {
		t.Fatal(err)
	}
	if _, err := v.ApplyPlan(ctx, p, ""); err != nil {
		t.Fatalf("after an unrelated commit: %v", err)
	}
	if got := readAt(t, ov, "customers"); got != `{"alice":{"city":"Bergen"},"bob":{"city":"Lima"}}` {
		t.Fatalf("after the promote: %s", got)
	}

	// Again, and main takes alice back to the base's city: /customers/alice/city is no longer in conflict.
	ov = mergeFixture(t, fixture(t, ""),
		[]Change{put("customers", `{"alice":{"city":"Bergen"},"bob":{"city":"Rome"}}`)},
		[]Change{put("customers", `{"alice":{"city":"Paris"},"bob":{"city":"Lima"}}`)})
	g = ov.a.g
	agent = actor(t, g, Principal{Name: "agent", Mode: WritesBranches})
	v, _ = agent.Open(ctx, "shop")
	p = plan()
	if _, err := ov.Write(ctx, Change{Op: OpUpdate, Resource: "customers", Path: "/alice/city", Value: json.RawMessage(`"Oslo"`)}); err != nil {
		t.Fatal(err)
	}
	head, _ := ov.Resolve(ctx, snapshots.Ref{})
	if _, err := v.ApplyPlan(ctx, p, ""); Code(err) != CodePlanChanged || !strings.Contains(err.Error(), "would not settle") {
		t.Fatalf("apply after the resolved path left conflict: %v, want PLAN_CHANGED", err)
	}
	if now, _ := ov.Resolve(ctx, snapshots.Ref{}); now.Rev.Number != head.Rev.Number {
		t.Fatal("a changed plan wrote")
	}
}

// TestMergeKeysThroughGate: the operator's merge keys align arrays by the member they name, in every principal's
// promote (where "id" would not align them, the merge conflicts); a change's own keys take precedence; a plan of
// the promote records the keys it merged with. A bad configuration is refused.
func TestMergeKeysThroughGate(t *testing.T) {
	ctx := context.Background()
	lines := func(edit func([]map[string]any) []map[string]any) string {
		es := []map[string]any{}
		for i, sku := range []string{"a", "b", "c", "d", "e", "f"} {
			es = append(es, map[string]any{"sku": sku, "qty": i, "note": ""})
		}
		if edit != nil {
			es = edit(es)
		}
		b, _ := json.Marshal(map[string]any{"lines": es})
		return string(b)
	}
	// into changes line e's qty; the branch inserts a line before e and changes e's note.
	into := lines(func(es []map[string]any) []map[string]any { es[4]["qty"] = 40; return es })
	branch := lines(func(es []map[string]any) []map[string]any {
		es[4]["note"] = "rush"
		return slices.Insert(es, 4, map[string]any{"sku": "new", "qty": 1, "note": ""})
	})
	want := lines(func(es []map[string]any) []map[string]any {
		es[4]["qty"], es[4]["note"] = 40, "rush"
		return slices.Insert(es, 4, map[string]any{"sku": "new", "qty": 1, "note": ""})
	})
	setup := func() (*Gate, *View) {
		g := fixture(t, "")
		ov, _ := actor(t, g, Operator("op")).Open(ctx, "shop")
		if _, err := ov.Write(ctx, put("orders", lines(nil))); err != nil {
			t.Fatal(err)
		}
		return g, mergeFixture(t, g, []Change{put("orders", into)}, []Change{put("orders", branch)})
	}

	g, _ := setup()
	plain, _ := actor(t, g, Principal{Name: "agent", Mode: WritesOn, Protected: []string{}}).Open(ctx, "shop")
	if _, err := plain.Write(ctx, Change{Op: OpPromote, Source: "work"}); Code(err) != CodeConflict {
		t.Fatalf("without keys: %v, want a conflict (the lines have no id)", err)
	}

	s, err := ParseSettings(strings.NewReader(`{"writes":"branches","merge_keys":{"/orders/lines":"sku"}}`))
	if err != nil {
		t.Fatal(err)
	}
	g, ov := setup()
	keyed, _ := actor(t, g, s.For("agent")).Open(ctx, "shop")
	out, err := keyed.Write(ctx, Change{Op: OpPromote, Source: "work"})
	if err != nil || out.Plan == nil {
		t.Fatalf("with merge keys: %+v %v, want a plan", out, err)
	}
	if ch, _ := PlanChange(out.Plan.Plan); ch.Keys["/orders/lines"] != "sku" {
		t.Fatalf("the plan's change does not record the keys: %+v", ch)
	}
	if _, err := ov.DecidePlan(ctx, out.Plan.Plan.ID, true, ""); err != nil {
		t.Fatal(err)
	}
	_, p, _ := keyed.a.FindPlan(ctx, out.Plan.Plan.ID)
	if _, err := keyed.ApplyPlan(ctx, p, ""); err != nil {
		t.Fatal(err)
	}
	if got := readAt(t, ov, "orders"); got != want {
		t.Fatalf("merged by sku:\n%s\nwant\n%s", got, want)
	}

	// A change's own keys take precedence: "" aligns by position again.
	g, _ = setup()
	p2 := s.For("agent")
	p2.Protected = []string{}
	own, _ := actor(t, g, p2).Open(ctx, "shop")
	if _, err := own.Write(ctx, Change{Op: OpPromote, Source: "work", Keys: map[string]string{"/orders/lines": ""}}); Code(err) != CodeConflict {
		t.Fatalf("keys overridden to position: %v, want a conflict", err)
	}
	// The operator's own promote takes them too (the command line passes them as the change's keys).
	g, ov = setup()
	if _, err := ov.Write(ctx, Change{Op: OpPromote, Source: "work", Keys: map[string]string{"/orders/lines": "sku"}}); err != nil {
		t.Fatal(err)
	}
	if got := readAt(t, ov, "orders"); got != want {
		t.Fatalf("operator merged by sku: %s", got)
	}

	for _, tc := range []struct{ config, want string }{
		{`{"merge_keys":{"orders/lines":"sku"}}`, "JSON Pointer"},
		{`{"merge_keys":{"":"sku"}}`, "whole database"},
		{`{"merge_keys":{"/bad name/x":"sku"}}`, "resource name"},
		{`{"merge_keys":{"/orders/lines":1}}`, "cannot unmarshal"},
	} {
		if _, err := ParseSettings(strings.NewReader(tc.config)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.config, err, tc.want)
		}
	}
}

// TestScopedConflicts: a scoped principal's promote that conflicts in a resource its scope hides is refused as a
// promote that would change it is, and neither the paths nor the values of the hidden conflict show; a conflict it
// may see comes back with its values.
func TestScopedConflicts(t *testing.T) {
	ctx := context.Background()
	g := fixture(t, "")
	mergeFixture(t, g,
		[]Change{put("secrets", `{"token":"TOPSECRET-into"}`), put("customers", `{"alice":{"city":"Bergen"}}`)},
		[]Change{put("secrets", `{"token":"TOPSECRET-branch"}`), put("customers", `{"alice":{"city":"Paris"}}`)})
	v, _ := actor(t, g, Principal{Name: "scoped", Mode: WritesOn, Scope: scope, Protected: []string{}}).Open(ctx, "shop")
	for _, resolve := range []map[string]string{nil, {"/customers/alice/city": "branch"}, {"/customers/alice": "branch"}, {"/secrets/token": "branch", "/customers/alice/city": "branch"}} {
		out, err := v.Write(ctx, Change{Op: OpPromote, Source: "work", Resolve: resolve})
		if Code(err) != CodeDenied || out != nil {
			t.Errorf("resolve %v: %+v %v, want DENIED", resolve, out, err)
		}
		for _, leak := range append(slices.Clone(leaks), "/secrets", "token") {
			if err != nil && strings.Contains(err.Error(), leak) {
				t.Errorf("resolve %v: the refusal shows %q: %v", resolve, leak, err)
			}
		}
	}
	// Without the hidden conflict, the visible one is reported with its values.
	ov, _ := actor(t, g, Operator("op")).Open(ctx, "shop")
	if _, err := ov.Write(ctx, Change{Op: OpPut, Resource: "secrets", Value: json.RawMessage(`{"token":"TOPSECRET-into"}`), Branch: "work"}); err != nil {
		t.Fatal(err)
	}
	out, err := v.Write(ctx, Change{Op: OpPromote, Source: "work"})
	if Code(err) != CodeConflict || out == nil || out.Promote == nil {
		t.Fatalf("%+v %v", out, err)
	}
	reports, total, err := v.ConflictReports(ctx, out.Promote, 100, 0)
	if err != nil || total != 1 || reports[0].Path != "/customers/alice/city" || string(reports[0].Branch) != `"Paris"` {
		t.Fatalf("%+v %d %v", reports, total, err)
	}
	if _, err := v.Write(ctx, Change{Op: OpPromote, Source: "work", Resolve: map[string]string{"/customers/alice/city": "branch"}}); err != nil {
		t.Fatal(err)
	}
	if got := readAt(t, ov, "customers"); got != `{"alice":{"city":"Paris"}}` {
		t.Fatalf("customers %s", got)
	}
}

// TestREADMEMergeKeys: the README's configuration example names a merge key, and every principal gets it.
func TestREADMEMergeKeys(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), "<!-- begin config example -->")
	block, _, _ := strings.Cut(rest, "<!-- end config example -->")
	block = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(block), "```json"), "```")
	s, err := ParseSettings(strings.NewReader(block))
	if err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{"release-agent", "someone"} {
		if p := s.For(who); p.MergeKeys["/catalog/items"] != "sku" {
			t.Errorf("%s: merge keys %v", who, p.MergeKeys)
		}
	}
}

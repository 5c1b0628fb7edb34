package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
)

// The scope tests (docs/design.md §4 "Scopes", docs/security.md T10). The data directory holds databases shop and secret-db;
// shop holds orders, customers and secrets. The principal's scope hides databases secret-* and the resource secrets,
// so for it secret-db and secrets must answer exactly as absent-db and deleted (names of the same lengths) do, and
// nothing stored under them may appear anywhere.

// Markers of hidden data: none may appear in any answer.
var scopeLeaks = []string{"TOPSECRET", "LAUNCHCODES", "SECRETDBVALUE", "VAULTMSG"}

const (
	hiddenDB, missingDB   = "secret-db", "absent-db"
	hiddenRes, missingRes = "secrets", "deleted"
)

var testScope = gate.Scope{Databases: gate.Names{Deny: []string{"secret-*"}}, Resources: gate.Names{Deny: []string{"secrets"}}}

// scopeHarness seeds the data directory through the library and connects a scoped principal with writes on.
//
// shop: 1 create; 2 put orders; 3 put customers; 4 put secrets (hidden); 5 patch orders; 6 change orders and
// secrets (visible, showing orders only); 7 put secrets (hidden, the head of main). Snapshot snap4 names revision 4.
func scopeHarness(t *testing.T) *harness {
	t.Helper()
	path := t.TempDir()
	dir, err := snapshots.OpenDir(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	w := func(msg string) snapshots.WriteOptions {
		return snapshots.WriteOptions{Message: msg, Author: "admin", Tool: "test"}
	}
	shop, err := dir.Create(ctx, "shop", "admin")
	if err != nil {
		t.Fatal(err)
	}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(shop.Put(ctx, "orders", []byte(`[{"id":1}]`), w("first order")))
	must(shop.Put(ctx, "customers", []byte(`{"alice":{"city":"Oslo"}}`), w("first customer")))
	must(shop.Put(ctx, "secrets", []byte(`{"token":"TOPSECRET-42"}`), w("stash the LAUNCHCODES")))
	must(shop.Patch(ctx, "orders", mustOps(t, `[{"op":"add","path":"/-","value":{"id":2}}]`), w("second order")))
	both := mustOps(t, `[{"op":"add","path":"/orders/-","value":{"id":3}},{"op":"replace","path":"/secrets/token","value":"TOPSECRET-43"}]`)
	must(shop.Commit(ctx, w("third order"), func(ctx context.Context, f *revision.Forest, head snapshots.State) (*revision.Change, error) {
		return f.Patch(ctx, head.Root, both)
	}))
	must(shop.Put(ctx, "secrets", []byte(`{"token":"TOPSECRET-44"}`), w("rotate the LAUNCHCODES")))
	must(shop.CreateSnapshot(ctx, "snap4", snapshots.Ref{Revision: 4}, "", "admin"))
	vault, err := dir.Create(ctx, hiddenDB, "admin")
	if err != nil {
		t.Fatal(err)
	}
	must(vault.Put(ctx, "vault", []byte(`{"x":"SECRETDBVALUE"}`), w("VAULTMSG")))
	if err := dir.Close(); err != nil {
		t.Fatal(err)
	}
	return newHarnessAt(t, path, Config{Writes: gate.WritesOn, Principal: "scoped", Scope: testScope})
}

func mustOps(t *testing.T, s string) []revision.Operation {
	t.Helper()
	ops, err := revision.ParsePatch([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return ops
}

var boundaryTag = regexp.MustCompile(`data-[a-z2-7]{13}`)

// same normalises the random boundary of a text.
func same(s string) string { return boundaryTag.ReplaceAllString(s, "data-X") }

// noLeak fails when a text shows hidden data.
func noLeak(t *testing.T, what, text string) {
	t.Helper()
	for _, m := range scopeLeaks {
		if strings.Contains(text, m) {
			t.Fatalf("%s shows hidden data %q:\n%s", what, m, text)
		}
	}
}

// noHiddenNames fails when a text names a hidden database or resource (or the hidden revisions' messages).
func noHiddenNames(t *testing.T, what, text string) {
	t.Helper()
	noLeak(t, what, text)
	if strings.Contains(strings.ToLower(text), "secret") {
		t.Fatalf("%s names something hidden:\n%s", what, text)
	}
}

// checkSuggestions fails when did_you_mean names a hidden name.
func checkSuggestions(t *testing.T, what string, r *result) {
	t.Helper()
	if d, ok := r.m["did_you_mean"].([]any); ok {
		for _, n := range d {
			if s, _ := n.(string); strings.HasPrefix(s, "secret") {
				t.Fatalf("%s suggests hidden name %q:\n%s", what, s, r.text)
			}
		}
	}
}

// toolArgs are arguments for every tool, with DB and RES standing for the database and resource. A tool missing
// here fails TestScopeEveryToolCovered: a new tool cannot be forgotten.
var toolArgs = map[string]string{
	"status":          `{}`,
	"list_databases":  `{}`,
	"list_resources":  `{"database":DB}`,
	"resource_info":   `{"database":DB,"resource":RES}`,
	"read":            `{"database":DB,"resource":RES}`,
	"history":         `{"database":DB,"resource":RES}`,
	"show_revision":   `{"database":DB,"revision":2}`,
	"diff":            `{"database":DB,"resource":RES,"from_revision":1,"to_branch":"main"}`,
	"path_history":    `{"database":DB,"resource":RES,"path":""}`,
	"query":           `{"database":DB,"resource":RES,"query":"."}`,
	"bisect":          `{"database":DB,"resource":RES,"predicate":". != null"}`,
	"list_branches":   `{"database":DB}`,
	"list_snapshots":  `{"database":DB}`,
	"list_plans":      `{"database":DB}`,
	"create_database": `{"database":DB}`,
	"put":             `{"database":DB,"resource":RES,"value":{"token":"overwritten"}}`,
	"insert":          `{"database":DB,"resource":RES,"path":"/y","value":1}`,
	"update":          `{"database":DB,"resource":RES,"path":"/token","value":"overwritten"}`,
	"delete":          `{"database":DB,"resource":RES}`,
	"patch":           `{"database":DB,"resource":RES,"operations":[{"op":"add","path":"/y","value":1}]}`,
	"transform":       `{"database":DB,"resource":RES,"query":".token = \"overwritten\""}`,
	"restore":         `{"database":DB,"resource":RES,"from_revision":2}`,
	"create_branch":   `{"database":DB,"name":"b1"}`,
	"delete_branch":   `{"database":DB,"name":"main"}`,
	"create_snapshot": `{"database":DB,"name":"s1"}`,
	"delete_snapshot": `{"database":DB,"name":"snap4"}`,
	"revert":          `{"database":DB,"revision":2}`,
	"promote":         `{"database":DB,"branch":"main","into":"other"}`,
	"apply_plan":      ``, // no database or resource argument
}

func argsFor(tool, db, res string) string {
	a := toolArgs[tool]
	a = strings.ReplaceAll(a, "DB", quoteJSON(db))
	return strings.ReplaceAll(a, "RES", quoteJSON(res))
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// tricks turn a name into variants that must match no other name: case, a Cyrillic look-alike, an escaped slash,
// dot segments, NUL, a trailing pattern character and 10 KiB.
var tricks = []struct {
	name string
	f    func(string) string
}{
	{"exact", func(s string) string { return s }},
	{"upper", strings.ToUpper},
	{"lookalike", func(s string) string { return strings.Replace(s, "e", "\u0435", 1) }},
	{"escaped-slash", func(s string) string { return s[:3] + "%2F" + s[3:] }},
	{"dotdot", func(s string) string { return "../" + s }},
	{"dotdot-after", func(s string) string { return s + "/.." }},
	{"nul", func(s string) string { return s + "\x00" }},
	{"star", func(s string) string { return s + "*" }},
	{"10KiB", func(s string) string { return s + strings.Repeat("x", 10<<10) }},
}

// TestScopeEveryToolCovered fails when a registered tool has no arguments in toolArgs, so that every tool is tried
// with hidden names.
func TestScopeEveryToolCovered(t *testing.T) {
	h := scopeHarness(t)
	for _, tool := range h.listTools() {
		if _, ok := toolArgs[tool.Name]; !ok {
			t.Errorf("tool %s has no entry in toolArgs: add one so that the scope tests try it", tool.Name)
		}
	}
}

// TestScopeHiddenLikeMissing calls every read tool with the hidden database and resource (and tricks on them) and
// with missing names of the same length: the answers must be the same, but for the name.
func TestScopeHiddenLikeMissing(t *testing.T) {
	h := scopeHarness(t)
	tried := 0
	for _, tool := range h.listTools() {
		if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			continue
		}
		a := toolArgs[tool.Name]
		if !strings.Contains(a, "DB") {
			r := h.call(tool.Name, a)
			noHiddenNames(t, tool.Name, r.text)
			continue
		}
		for _, tr := range tricks {
			// The database.
			hid, mis := tr.f(hiddenDB), tr.f(missingDB)
			got := h.call(tool.Name, argsFor(tool.Name, hid, "orders"))
			want := h.call(tool.Name, argsFor(tool.Name, mis, "orders"))
			compareLike(t, tool.Name+" database "+tr.name, got, want, hid, mis, hiddenDB, missingDB)
			tried++
			if !strings.Contains(a, "RES") {
				continue
			}
			// The resource.
			hid, mis = tr.f(hiddenRes), tr.f(missingRes)
			got = h.call(tool.Name, argsFor(tool.Name, "shop", hid))
			want = h.call(tool.Name, argsFor(tool.Name, "shop", mis))
			compareLike(t, tool.Name+" resource "+tr.name, got, want, hid, mis, hiddenRes, missingRes)
			tried++
		}
	}
	if tried < 50 {
		t.Fatalf("only %d comparisons: the read tools were not found", tried)
	}
}

// compareLike fails unless got (an answer about hidden) equals want (about missing) once the names are swapped, and
// shows no hidden data.
func compareLike(t *testing.T, what string, got, want *result, swaps ...string) {
	t.Helper()
	noLeak(t, what, got.text)
	checkSuggestions(t, what, got)
	if got.res.IsError && got.str("code") != codeNotFound && got.str("code") != codeInvalidArgument {
		t.Fatalf("%s: code %s, want NOT_FOUND or INVALID_ARGUMENT:\n%s", what, got.str("code"), got.text)
	}
	g := same(strings.NewReplacer(swaps...).Replace(got.text))
	w := same(want.text)
	if g != w {
		t.Fatalf("%s: the hidden name answers differently from a missing one:\nhidden:  %s\nmissing: %s", what, clipLong(g), clipLong(w))
	}
}

func clipLong(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "…"
	}
	return s
}

// TestScopeWritesRefuseHidden calls every write tool with the hidden database and resource: each must answer
// NOT_FOUND and change nothing.
func TestScopeWritesRefuseHidden(t *testing.T) {
	h := scopeHarness(t)
	before := h.ok("query", `{"database":"shop","query":"keys"}`).text
	writes := 0
	for _, tool := range h.listTools() {
		if tool.Annotations == nil || tool.Annotations.ReadOnlyHint {
			continue
		}
		a := toolArgs[tool.Name]
		if strings.Contains(a, "DB") {
			for _, tr := range tricks {
				r := h.call(tool.Name, argsFor(tool.Name, tr.f(hiddenDB), "orders"))
				if !r.res.IsError {
					t.Fatalf("%s on hidden database (%s) succeeded:\n%s", tool.Name, tr.name, r.text)
				}
				if tr.name == "exact" && r.str("code") != codeNotFound {
					t.Fatalf("%s on hidden database: want NOT_FOUND:\n%s", tool.Name, r.text)
				}
				noLeak(t, tool.Name, r.text)
				checkSuggestions(t, tool.Name, r)
			}
			writes++
		}
		if strings.Contains(a, "RES") {
			r := h.fail(tool.Name, argsFor(tool.Name, "shop", hiddenRes), codeNotFound)
			noLeak(t, tool.Name, r.text)
			checkSuggestions(t, tool.Name, r)
		}
	}
	if writes < 10 {
		t.Fatalf("only %d write tools tried: are writes on?", writes)
	}
	// Nothing was written where the scope hides it.
	dir := h.dir
	ctx := context.Background()
	shop, err := dir.Open(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	v, _, err := shop.Get(ctx, snapshots.Ref{}, hiddenRes, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := shop.Forest().JSON(ctx, v); string(b) != `{"token":"TOPSECRET-44"}` {
		t.Fatalf("the hidden resource was changed: %s", b)
	}
	info, err := dir.Info(ctx, hiddenDB)
	if err != nil || info.Revisions != 2 {
		t.Fatalf("the hidden database was changed: %+v %v", info, err)
	}
	if after := h.ok("query", `{"database":"shop","query":"keys"}`).text; same(after) != same(before) {
		t.Fatalf("resources changed:\n%s\n%s", before, after)
	}
}

// TestScopeListings: list_databases, list_resources, history, branches and snapshots show nothing hidden, and the
// hidden revisions (4 and 6) never appear, not even through paging or as a parent.
func TestScopeListings(t *testing.T) {
	h := scopeHarness(t)
	r := h.ok("list_databases", `{}`)
	noHiddenNames(t, "list_databases", r.text)
	if !strings.Contains(r.text, `"shop"`) {
		t.Fatalf("list_databases: %s", r.text)
	}
	noHiddenNames(t, "list_resources", h.ok("list_resources", `{"database":"shop"}`).text)
	noHiddenNames(t, "list_resources at 4 via snapshot", h.ok("list_resources", `{"database":"shop","snapshot":"snap4"}`).text)

	// history, a page of one at a time.
	var revs []uint64
	args := `{"database":"shop","limit":1}`
	for range 10 {
		r := h.ok("history", args)
		noHiddenNames(t, "history", r.text)
		list := r.m["revisions"].([]any)
		if len(list) != 1 {
			t.Fatalf("history page of %d revisions, want 1 (hidden ones left out of paging too):\n%s", len(list), r.text)
		}
		rev := list[0].(map[string]any)
		n, _ := rev["revision"].(json.Number).Int64()
		revs = append(revs, uint64(n))
		if n == 5 {
			if p, _ := rev["parent"].(json.Number).Int64(); p != 3 {
				t.Fatalf("revision 5 shows parent %d, want 3 (its newest visible ancestor):\n%s", p, r.text)
			}
		}
		if r.m["more"] != true {
			break
		}
		args = fmt.Sprintf(`{"database":"shop","limit":1,"cursor":%q}`, r.str("next_cursor"))
	}
	if !slices.Equal(revs, []uint64{6, 5, 3, 2, 1}) {
		t.Fatalf("history = %v, want [6 5 3 2 1]", revs)
	}
	// Whole pages too.
	r = h.ok("history", `{"database":"shop"}`)
	noHiddenNames(t, "history", r.text)
	if n := len(r.m["revisions"].([]any)); n != 5 {
		t.Fatalf("history shows %d revisions, want 5:\n%s", n, r.text)
	}
	// Revision 6 changed orders and secrets: it shows orders only.
	if rs := r.m["revisions"].([]any)[0].(map[string]any)["resources"].([]any); len(rs) != 1 || rs[0] != "orders" {
		t.Fatalf("revision 6 shows resources %v, want [orders]:\n%s", rs, r.text)
	}

	// Heads and labels never name a hidden revision.
	r = h.ok("list_branches", `{"database":"shop"}`)
	if b := r.m["branches"].([]any)[0].(map[string]any); b["head"].(json.Number).String() != "6" {
		t.Fatalf("list_branches shows head %v, want 6:\n%s", b["head"], r.text)
	}
	r = h.ok("list_snapshots", `{"database":"shop"}`)
	if s := r.m["snapshots"].([]any)[0].(map[string]any); s["revision"].(json.Number).String() != "3" {
		t.Fatalf("list_snapshots shows revision %v, want 3:\n%s", s["revision"], r.text)
	}
	r = h.ok("list_databases", `{}`)
	if strings.Contains(string(r.data), `"revision":7`) {
		t.Fatalf("list_databases shows hidden head 7:\n%s", r.text)
	}
	// Reading at the head of main (a hidden revision) answers its newest visible ancestor.
	if r := h.ok("read", `{"database":"shop","resource":"orders"}`); r.num("revision") != 6 {
		t.Fatalf("read at main: revision %d, want 6:\n%s", r.num("revision"), r.text)
	}
	if r := h.ok("read", `{"database":"shop","resource":"orders","snapshot":"snap4"}`); r.num("revision") != 3 {
		t.Fatalf("read at snap4: revision %d, want 3:\n%s", r.num("revision"), r.text)
	}
}

// revisionLike compares an answer about a hidden revision number with one about a revision that does not exist.
func revisionLike(t *testing.T, h *harness, tool, hiddenArgs, missingArgs, n string) {
	t.Helper()
	got := h.call(tool, hiddenArgs)
	want := h.call(tool, missingArgs)
	if !got.res.IsError {
		t.Fatalf("%s %s: succeeded, want the answer for a revision that does not exist:\n%s", tool, hiddenArgs, got.text)
	}
	noLeak(t, tool, got.text)
	g := same(strings.NewReplacer(`"`+n+`"`, `"99"`, `\"`+n+`\"`, `\"99\"`, "revision "+n+" ", "revision 99 ").Replace(got.text))
	if w := same(want.text); g != w {
		t.Fatalf("%s: a hidden revision answers differently from a missing one:\nhidden:  %s\nmissing: %s", tool, g, w)
	}
}

// TestScopeRevisions: show_revision, diff, read, query and bisect treat the hidden revisions as revisions that do
// not exist, and their change summaries and diffs cover permitted resources only.
func TestScopeRevisions(t *testing.T) {
	h := scopeHarness(t)
	for _, n := range []string{"4", "7"} {
		revisionLike(t, h, "show_revision", `{"database":"shop","revision":`+n+`}`, `{"database":"shop","revision":99}`, n)
		revisionLike(t, h, "read", `{"database":"shop","resource":"orders","revision":`+n+`}`, `{"database":"shop","resource":"orders","revision":99}`, n)
		revisionLike(t, h, "query", `{"database":"shop","query":".","revision":`+n+`}`, `{"database":"shop","query":".","revision":99}`, n)
		revisionLike(t, h, "list_resources", `{"database":"shop","revision":`+n+`}`, `{"database":"shop","revision":99}`, n)
		revisionLike(t, h, "diff", `{"database":"shop","from_revision":1,"to_revision":`+n+`}`, `{"database":"shop","from_revision":1,"to_revision":99}`, n)
		revisionLike(t, h, "bisect", `{"database":"shop","predicate":"true","from_revision":`+n+`}`, `{"database":"shop","predicate":"true","from_revision":99}`, n)
	}

	r := h.ok("show_revision", `{"database":"shop","revision":5}`)
	noHiddenNames(t, "show_revision 5", r.text)
	if r.num("parent") != 3 {
		t.Fatalf("show_revision 5: parent %d, want 3:\n%s", r.num("parent"), r.text)
	}
	// Revision 6 changed orders and secrets: its summary covers orders only.
	r = h.ok("show_revision", `{"database":"shop","revision":6}`)
	noHiddenNames(t, "show_revision 6", r.text)
	if ops := r.m["changes"].(map[string]any)["operations"].([]any); len(ops) != 1 || r.raw("resources") != `["orders"]` {
		t.Fatalf("show_revision 6: want one operation, on orders:\n%s", r.text)
	}
	// A revision that changed no resource (the creation) stays visible.
	h.ok("show_revision", `{"database":"shop","revision":1}`)

	// The whole-database diff across the hidden revisions: only permitted resources.
	r = h.ok("diff", `{"database":"shop","from_revision":1,"to_branch":"main"}`)
	noHiddenNames(t, "diff", r.text)
	ops := r.m["operations"].([]any)
	counts := r.m["counts"].(map[string]any)
	total := 0
	for _, k := range []string{"added", "removed", "replaced", "moved"} {
		n, _ := counts[k].(json.Number).Int64()
		total += int(n)
	}
	if len(ops) != 2 || total != 2 {
		t.Fatalf("diff: %d operations, counts %v; want the two resources added:\n%s", len(ops), counts, r.text)
	}
	r = h.ok("diff", `{"database":"shop","from_revision":3,"to_branch":"main"}`)
	noHiddenNames(t, "diff 3→main", r.text)
	if r.num("to_revision") != 6 {
		t.Fatalf("diff to main: to_revision %d, want 6:\n%s", r.num("to_revision"), r.text)
	}
	// Paging through a diff.
	r = h.ok("diff", `{"database":"shop","from_revision":1,"to_revision":5,"limit":1}`)
	noHiddenNames(t, "diff page", r.text)
	r = h.ok("diff", fmt.Sprintf(`{"database":"shop","from_revision":1,"to_revision":5,"limit":1,"cursor":%q}`, r.str("next_cursor")))
	noHiddenNames(t, "diff page 2", r.text)

	// path_history and resource_info of a permitted resource.
	noHiddenNames(t, "path_history", h.ok("path_history", `{"database":"shop","resource":"orders","path":""}`).text)
	noHiddenNames(t, "resource_info", h.ok("resource_info", `{"database":"shop","resource":"orders"}`).text)
}

// TestScopeQueryNeverSeesHidden: jq programs cannot reach hidden data, through the resource argument, the object of
// all resources, or bisect.
func TestScopeQueryNeverSeesHidden(t *testing.T) {
	h := scopeHarness(t)
	got := h.fail("query", `{"database":"shop","resource":"secrets","query":".token"}`, codeNotFound)
	want := h.fail("query", `{"database":"shop","resource":"deleted","query":".token"}`, codeNotFound)
	compareLike(t, "query resource", got, want, hiddenRes, missingRes)

	for _, prog := range []string{".", "keys", ".secrets", "[.. | strings]", `tostring`, `[paths]`, `to_entries`} {
		r := h.ok("query", fmt.Sprintf(`{"database":"shop","query":%q}`, prog))
		noHiddenNames(t, "query "+prog, r.text)
	}
	if r := h.ok("query", `{"database":"shop","query":".secrets"}`); r.raw("results") != "[null]" {
		t.Fatalf("query .secrets: %s", r.text)
	}
	// As of a snapshot and revision that held secrets.
	noHiddenNames(t, "query at snap4", h.ok("query", `{"database":"shop","query":"tostring","snapshot":"snap4"}`).text)

	// bisect over the whole database: the predicate never sees secrets, and no hidden revision is evaluated.
	for _, pred := range []string{`.secrets != null`, `tostring | test("TOPSECRET")`, `has("secrets")`} {
		r := h.ok("bisect", fmt.Sprintf(`{"database":"shop","predicate":%q}`, pred))
		noLeak(t, "bisect", r.text)
		if r.m["found"] != false {
			t.Fatalf("bisect %s found something: the predicate saw hidden data:\n%s", pred, r.text)
		}
	}
	r := h.ok("bisect", `{"database":"shop","predicate":"true"}`)
	for _, e := range r.m["evaluations"].([]any) {
		if n := e.(map[string]any)["revision"].(json.Number).String(); n == "4" || n == "7" {
			t.Fatalf("bisect evaluated hidden revision %s:\n%s", n, r.text)
		}
	}
	// bisect on the hidden resource answers as on a missing one (its input is null).
	got = h.ok("bisect", `{"database":"shop","resource":"secrets","predicate":". != null"}`)
	want = h.ok("bisect", `{"database":"shop","resource":"deleted","predicate":". != null"}`)
	compareLike(t, "bisect resource", got, want, hiddenRes, missingRes)
	// transform (a write) cannot read it either.
	h.fail("transform", `{"database":"shop","resource":"secrets","query":"error(.token)"}`, codeNotFound)
}

// TestScopeResourcesPromptsCompletions: resource URIs, subscriptions, prompts and completions treat hidden names as
// missing ones.
func TestScopeResourcesPromptsCompletions(t *testing.T) {
	h := scopeHarness(t)
	ctx := context.Background()
	read := func(uri string) (string, error) {
		res, err := h.cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: uri})
		if err != nil {
			return "", err
		}
		return res.Contents[0].Text, nil
	}
	errText := func(err error) string {
		if err == nil {
			return "<nil>"
		}
		return err.Error()
	}
	pairs := [][2]string{
		{"strata://secret-db/resources", "strata://absent-db/resources"},
		{"strata://secret-db/log", "strata://absent-db/log"},
		{"strata://secret-db/branches", "strata://absent-db/branches"},
		{"strata://secret-db/snapshots", "strata://absent-db/snapshots"},
		{"strata://secret-db/vault", "strata://absent-db/vault"},
		{"strata://shop/secrets", "strata://shop/deleted"},
		{"strata://shop/secrets/rev/4", "strata://shop/deleted/rev/4"},
		{"strata://shop/secrets/rev/5", "strata://shop/deleted/rev/5"},
		{"strata://shop/orders/rev/4", "strata://shop/orders/rev/99"},
		{"strata://shop/SECRETS", "strata://shop/DELETED"},
		{"strata://shop/secrets%00", "strata://shop/deleted%00"},
		{"strata://shop/..%2Fsecrets", "strata://shop/..%2Fdeleted"},
	}
	for _, p := range pairs {
		gt, gerr := read(p[0])
		wt, werr := read(p[1])
		if gerr == nil {
			t.Fatalf("read %s succeeded:\n%s", p[0], gt)
		}
		_ = wt
		g := strings.NewReplacer(hiddenDB, missingDB, hiddenRes, missingRes, "SECRETS", "DELETED", "/rev/4", "/rev/99").Replace(errText(gerr))
		w := strings.NewReplacer("/rev/4", "/rev/99").Replace(errText(werr))
		if g != w {
			t.Fatalf("read %s answers differently from %s:\n%s\n%s", p[0], p[1], errText(gerr), errText(werr))
		}
		noLeak(t, p[0], errText(gerr))
	}
	for _, uri := range []string{"strata://databases", "strata://shop/resources", "strata://shop/log"} {
		text, err := read(uri)
		if err != nil {
			t.Fatal(err)
		}
		noHiddenNames(t, uri, text)
	}

	// Prompts echo only what was given, so a hidden name answers exactly as a missing one.
	for _, p := range []struct{ name, arg, hid, mis string }{
		{"explore", "database", hiddenDB, missingDB},
		{"time_travel", "resource", hiddenRes, missingRes},
		{"find_regression", "resource", hiddenRes, missingRes},
	} {
		get := func(v string) string {
			args := map[string]string{"database": "shop", "resource": "orders"}
			args[p.arg] = v
			res, err := h.cs.GetPrompt(ctx, &mcpsdk.GetPromptParams{Name: p.name, Arguments: args})
			if err != nil {
				return "error: " + err.Error()
			}
			b, _ := json.Marshal(res)
			return same(string(b))
		}
		if g, w := strings.ReplaceAll(get(p.hid), p.hid, p.mis), get(p.mis); g != w {
			t.Fatalf("prompt %s: %s\n%s", p.name, g, w)
		}
	}

	// Completions offer permitted names only, and nothing for a hidden database.
	complete := func(ref *mcpsdk.CompleteReference, arg, value string, ctxArgs map[string]string) []string {
		params := &mcpsdk.CompleteParams{Ref: ref, Argument: mcpsdk.CompleteParamsArgument{Name: arg, Value: value}}
		if ctxArgs != nil {
			params.Context = &mcpsdk.CompleteContext{Arguments: ctxArgs}
		}
		res, err := h.cs.Complete(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		return res.Completion.Values
	}
	prompt := &mcpsdk.CompleteReference{Type: "ref/prompt", Name: "time_travel"}
	uri := &mcpsdk.CompleteReference{Type: "ref/resource", URI: "strata://{database}/{resource}"}
	for _, tc := range []struct {
		got  []string
		want []string
	}{
		{complete(prompt, "database", "", nil), []string{"shop"}},
		{complete(prompt, "database", "sec", nil), []string{}},
		{complete(uri, "database", "", nil), []string{"shop"}},
		{complete(prompt, "resource", "", map[string]string{"database": "shop"}), []string{"customers", "orders"}},
		{complete(uri, "resource", "s", map[string]string{"database": "shop"}), []string{}},
		{complete(prompt, "resource", "", map[string]string{"database": hiddenDB}), []string{}},
		{complete(&mcpsdk.CompleteReference{Type: "ref/prompt", Name: "analyze_changes"}, "from", "", map[string]string{"database": hiddenDB}), []string{}},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Fatalf("completion = %q, want %q", tc.got, tc.want)
		}
	}
}

// TestScopeSubscriptions: subscribing to a hidden database fails as for a missing one (checked on the server's
// handler: the client's subscription stream reports no error), a hidden resource is watched as a missing one (never
// changes), and the log does not change for a commit that touched hidden resources only.
func TestScopeSubscriptions(t *testing.T) {
	h := scopeHarness(t)
	ctx := context.Background()
	g, err := gate.New(h.dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	actor, err := g.As(gate.Principal{Scope: testScope})
	if err != nil {
		t.Fatal(err)
	}
	s := &server{actor: actor, cfg: Config{Scope: testScope}.withDefaults()}
	w := newWatcher(s)
	w.srv = mcpsdk.NewServer(&mcpsdk.Implementation{Name: "scope-test"}, nil)
	sub := func(uri string) string {
		err := w.subscribe(ctx, &mcpsdk.SubscribeRequest{Params: &mcpsdk.SubscribeParams{URI: uri}})
		if err == nil {
			return "<nil>"
		}
		return err.Error()
	}
	for _, p := range [][2]string{
		{"strata://secret-db/log", "strata://absent-db/log"},
		{"strata://secret-db/vault", "strata://absent-db/vault"},
		{"strata://secret-db/resources", "strata://absent-db/resources"},
	} {
		g, want := sub(p[0]), sub(p[1])
		if strings.ReplaceAll(g, hiddenDB, missingDB) != want || g == "<nil>" {
			t.Fatalf("subscribe %s: %s; %s: %s", p[0], g, p[1], want)
		}
	}
	fp := func(ref resourceRef) string {
		t.Helper()
		f, err := s.fingerprint(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	hidden := resourceRef{kind: "resource", database: "shop", resource: hiddenRes}
	missing := resourceRef{kind: "resource", database: "shop", resource: missingRes}
	log := resourceRef{kind: "log", database: "shop"}
	dbs := resourceRef{kind: "databases"}
	list := resourceRef{kind: "resources", database: "shop"}
	if fp(hidden) != fp(missing) {
		t.Fatalf("a hidden resource is watched unlike a missing one: %s, %s", fp(hidden), fp(missing))
	}
	if strings.Contains(fp(dbs), "secret") || strings.Contains(fp(list), "secret") {
		t.Fatalf("fingerprints hold hidden names: %s %s", fp(dbs), fp(list))
	}
	before, beforeHidden, beforeDBs := fp(log), fp(hidden), fp(dbs)
	shop, err := h.dir.Open(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := shop.Put(ctx, hiddenRes, []byte(`{"token":"TOPSECRET-45"}`), snapshots.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if fp(log) != before || fp(hidden) != beforeHidden || fp(dbs) != beforeDBs {
		t.Fatal("a commit to a hidden resource changes what a subscriber sees (strata://databases included)")
	}
	if _, err := shop.Put(ctx, "orders", []byte(`[]`), snapshots.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if fp(log) == before {
		t.Fatal("a commit to a permitted resource does not change the log")
	}
}

// TestScopeUnlimited: the zero scope changes nothing: the hidden names are there.
func TestScopeUnlimited(t *testing.T) {
	path := t.TempDir()
	dir, err := snapshots.OpenDir(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := dir.Create(ctx, "shop", "admin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Put(ctx, "secrets", []byte(`{"token":"TOPSECRET-1"}`), snapshots.WriteOptions{Message: "m"}); err != nil {
		t.Fatal(err)
	}
	dir.Close()
	h := newHarnessAt(t, path, Config{})
	if r := h.ok("read", `{"database":"shop","resource":"secrets"}`); !strings.Contains(r.text, "TOPSECRET-1") {
		t.Fatalf("read: %s", r.text)
	}
	if r := h.ok("history", `{"database":"shop"}`); len(r.m["revisions"].([]any)) != 2 {
		t.Fatalf("history: %s", r.text)
	}
}

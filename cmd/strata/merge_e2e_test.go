package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Issue 17, end to end: the table of concurrent edits that meet in an array, and the six-agent round, through the
// command line and through an MCP client talking to `strata mcp`, asserting what a person or an agent sees: the
// merged document, or each conflicting path with its base, into and branch values, then settled with a resolution.

// catalog is the document {"items":[...]} of n elements {"name","price","stock"} (with "id" when keyed), as edit
// leaves them.
func catalog(n int, keyed bool, edit func(es []map[string]any) []map[string]any) string {
	es := make([]map[string]any, n)
	for i := range es {
		es[i] = map[string]any{"name": fmt.Sprint("item-", i), "price": i, "stock": 10}
		if keyed {
			es[i]["id"] = i
		}
	}
	if edit != nil {
		es = edit(es)
	}
	b, _ := json.Marshal(map[string]any{"items": es})
	return string(b)
}

func newItem(keyed bool, id int, name string) map[string]any {
	e := map[string]any{"name": name, "price": 1, "stock": 1}
	if keyed {
		e["id"] = id
	}
	return e
}

// mergeRow is one row of the table: into's and the branch's edits of the base, and what the promotion
// gives: the merged document, or one conflict (its path and values) that resolve settles to the document resolved.
type mergeRow struct {
	name         string
	keyed        bool
	into, branch func(es []map[string]any) []map[string]any
	merged       func(es []map[string]any) []map[string]any // nil: a conflict
	path, reason string                                     // the conflict
	values       [3]string                                  // base, into, branch as shown ("" absent)
	side         string                                     // the resolution
	resolved     func(es []map[string]any) []map[string]any
}

const tableLen = 8

func mergeTable() []mergeRow {
	edit := func(i int, k string, v any) func(es []map[string]any) []map[string]any {
		return func(es []map[string]any) []map[string]any { es[i][k] = v; return es }
	}
	both := func(fs ...func([]map[string]any) []map[string]any) func([]map[string]any) []map[string]any {
		return func(es []map[string]any) []map[string]any {
			for _, f := range fs {
				es = f(es)
			}
			return es
		}
	}
	appendOne := func(keyed bool, id int, name string) func([]map[string]any) []map[string]any {
		return func(es []map[string]any) []map[string]any { return append(es, newItem(keyed, id, name)) }
	}
	front := func(keyed bool) func([]map[string]any) []map[string]any {
		return func(es []map[string]any) []map[string]any {
			return append([]map[string]any{newItem(keyed, 100, "first")}, es...)
		}
	}
	drop := func(i int) func([]map[string]any) []map[string]any {
		return func(es []map[string]any) []map[string]any { return slices.Delete(es, i, i+1) }
	}
	element2 := func(keyed bool, price int) string {
		if keyed {
			return fmt.Sprintf(`{"id":2,"name":"item-2","price":%d,"stock":10}`, price)
		}
		return fmt.Sprintf(`{"name":"item-2","price":%d,"stock":10}`, price)
	}
	return []mergeRow{
		{name: "price of element 3 vs one appended", into: edit(3, "price", 99), branch: appendOne(false, 0, "new"),
			merged: both(edit(3, "price", 99), appendOne(false, 0, "new"))},
		{name: "last element vs one inserted at the front", into: edit(tableLen-1, "stock", 0), branch: front(false),
			merged: both(edit(tableLen-1, "stock", 0), front(false))},
		{name: "one appended vs another appended", into: appendOne(false, 0, "into's"), branch: appendOne(false, 0, "branch's"),
			merged: both(appendOne(false, 0, "into's"), appendOne(false, 0, "branch's"))},
		{name: "element 1 deleted vs element 5 edited", into: drop(1), branch: edit(5, "name", "renamed"),
			merged: both(edit(5, "name", "renamed"), drop(1))},
		{name: "keyed id=4 price vs stock", keyed: true, into: edit(4, "price", 40), branch: edit(4, "stock", 0),
			merged: both(edit(4, "price", 40), edit(4, "stock", 0))},
		{name: "keyed into edits id=7 vs branch inserts at the front", keyed: true, into: edit(7, "price", 70), branch: front(true),
			merged: both(edit(7, "price", 70), front(true))},
		{name: "same member changed differently", keyed: true, into: edit(3, "price", 1), branch: edit(3, "price", 2),
			path: "/cat/items/3/price", reason: "changed on both sides to different values", values: [3]string{"3", "1", "2"},
			side: "branch", resolved: edit(3, "price", 2)},
		{name: "element deleted vs the same element edited", into: drop(2), branch: edit(2, "price", 0),
			path: "/cat/items/2", reason: "removed on one side and changed on the other", values: [3]string{element2(false, 2), "", element2(false, 0)},
			side: "into", resolved: drop(2)},
	}
}

// TestMergeTableCLI is the table through the command line: import each side's whole document, strata promote,
// strata get; a conflict is listed with its values (exit 4, nothing written) and --resolve settles it.
func TestMergeTableCLI(t *testing.T) {
	for _, row := range mergeTable() {
		t.Run(row.name, func(t *testing.T) {
			s := newSession(t, false, nil)
			s.must("", "db", "create", "shop")
			s.must(catalog(tableLen, row.keyed, nil), "import", "shop", "cat", "-")
			s.must("", "branch", "shop", "agent")
			s.must(catalog(tableLen, row.keyed, row.into), "import", "shop", "cat", "-")
			s.must(catalog(tableLen, row.keyed, row.branch), "import", "shop", "cat", "-", "--branch", "agent")
			if row.merged != nil {
				if out := s.must("", "promote", "shop", "agent"); !strings.Contains(out, "promoted agent into main (three-way merge)") {
					t.Fatalf("promote: %s", out)
				}
				if got, want := s.must("", "get", "shop", "cat"), catalog(tableLen, row.keyed, row.merged)+"\n"; got != want {
					t.Fatalf("merged\n%s\nwant\n%s", got, want)
				}
				return
			}
			before := s.must("", "get", "shop", "cat")
			out, errOut, code := s.run("", "promote", "shop", "agent")
			show := func(v string) string {
				if v == "" {
					return "(absent)"
				}
				return v
			}
			want := fmt.Sprintf("conflict: %s: %s\n  base    %s\n  into    %s\n  branch  %s\n", row.path, row.reason, show(row.values[0]), show(row.values[1]), show(row.values[2]))
			if code != exitConflict || out != "" || !strings.HasPrefix(errOut, want) ||
				!strings.Contains(errOut, "conflicts at 1 path(s); nothing was written. Settle each with --resolve PATH=branch") {
				t.Fatalf("promote: exit %d, stdout %q, stderr\n%s\nwant it to begin\n%s", code, out, errOut, want)
			}
			// --json prints the same conflicts, values as JSON.
			out, _, code = s.run("", "promote", "shop", "agent", "--json")
			var j struct {
				Conflicts []struct {
					Path, Reason       string
					Base, Into, Branch json.RawMessage
				}
			}
			if err := json.Unmarshal([]byte(out), &j); err != nil || code != exitConflict || len(j.Conflicts) != 1 || j.Conflicts[0].Path != row.path {
				t.Fatalf("promote --json: exit %d, %v\n%s", code, err, out)
			}
			if got := s.must("", "get", "shop", "cat"); got != before {
				t.Fatal("a promote with a conflict wrote")
			}
			// A resolution that names a path not in conflict is refused; then the right one settles it.
			if _, errOut, code := s.run("", "promote", "shop", "agent", "--resolve", row.path+"/nope="+row.side); code != exitUsage || !strings.Contains(errOut, "not in conflict") || !strings.Contains(errOut, `"`+row.path+`"`) {
				t.Fatalf("a wrong path: exit %d: %s", code, errOut)
			}
			s.must("", "promote", "shop", "agent", "--resolve", row.path+"="+row.side)
			if got, want := s.must("", "get", "shop", "cat"), catalog(tableLen, row.keyed, row.resolved)+"\n"; got != want {
				t.Fatalf("resolved\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// mcpConfig writes an operator configuration (writes on, nothing protected, and more fields) and returns its path.
func mcpConfig(t *testing.T, extra string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "strata.json")
	cfg := `{"writes":"on","protected_branches":[]` + extra + `}`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMergeTableMCP is the table through an MCP client of `strata mcp`: each side's document put whole by an
// agent, promote; a conflict answers CONFLICT with its path and values, and resolve settles it.
func TestMergeTableMCP(t *testing.T) {
	s := newSession(t, false, nil)
	a := startAgent(t, s, "--config", mcpConfig(t, ""))
	defer a.stop()
	for i, row := range mergeTable() {
		t.Run(row.name, func(t *testing.T) {
			db := fmt.Sprint("table-", i)
			put := func(branch, doc string) {
				t.Helper()
				a.ok("put", fmt.Sprintf(`{"database":%q,"resource":"cat","branch":%q,"value":%s}`, db, branch, doc))
			}
			read := func() string {
				t.Helper()
				b, _ := json.Marshal(a.ok("read", fmt.Sprintf(`{"database":%q,"resource":"cat"}`, db))["value"])
				return string(b)
			}
			canonical := func(doc string) string {
				var v any
				json.Unmarshal([]byte(doc), &v)
				b, _ := json.Marshal(v)
				return string(b)
			}
			a.ok("create_database", fmt.Sprintf(`{"database":%q}`, db))
			put("main", catalog(tableLen, row.keyed, nil))
			a.ok("create_branch", fmt.Sprintf(`{"database":%q,"name":"agent"}`, db))
			put("main", catalog(tableLen, row.keyed, row.into))
			put("agent", catalog(tableLen, row.keyed, row.branch))
			promote := fmt.Sprintf(`{"database":%q,"branch":"agent"`, db)
			if row.merged != nil {
				if r := a.ok("promote", promote+`}`); r["fast_forward"] != false || r["merged"] == nil {
					t.Fatalf("promote: %v", r)
				}
				if got, want := read(), canonical(catalog(tableLen, row.keyed, row.merged)); got != want {
					t.Fatalf("merged\n%s\nwant\n%s", got, want)
				}
				return
			}
			before := read()
			text, e, isErr := a.call("promote", promote+`}`)
			if !isErr || !strings.HasPrefix(text, "CONFLICT: promoting agent into main conflicts at 1 path(s)") {
				t.Fatalf("promote: %s", text)
			}
			cs, _ := e["conflicts"].([]any)
			if len(cs) != 1 {
				t.Fatalf("conflicts: %v", e)
			}
			c := cs[0].(map[string]any)
			value := func(k string) string {
				v, ok := c[k]
				if !ok {
					return ""
				}
				b, _ := json.Marshal(v)
				return string(b)
			}
			if c["path"] != row.path || c["reason"] != row.reason || value("base") != canonical(row.values[0]) ||
				value("into") != row.values[1] || value("branch") != canonical(row.values[2]) {
				t.Fatalf("conflict %v, want %s %s %v", c, row.path, row.reason, row.values)
			}
			if read() != before {
				t.Fatal("a promote with a conflict wrote")
			}
			if text, _, isErr := a.call("promote", promote+`,"resolve":{"`+row.path+`/nope":"`+row.side+`"}}`); !isErr || !strings.HasPrefix(text, "INVALID_ARGUMENT: resolve names 1 path(s) that are not in conflict") {
				t.Fatalf("a wrong path: %s", text)
			}
			a.ok("promote", promote+`,"resolve":{"`+row.path+`":"`+row.side+`"}}`)
			if got, want := read(), canonical(catalog(tableLen, row.keyed, row.resolved)); got != want {
				t.Fatalf("resolved\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// sixAgents: six branches from one state of a 200-element array; each edits one distinct element and appends one
// of its own (its whole document put); promoted in turn, every one merges, and main holds all six edits and all
// six appended elements, in the order promoted.
var sixEdited = []int{0, 37, 38, 120, 198, 199} // neighbours, and both ends

func sixDoc(keyed bool, agent int) string {
	return catalog(200, keyed, func(es []map[string]any) []map[string]any {
		es[sixEdited[agent]]["price"] = 1000 + agent
		return append(es, newItem(keyed, 1000+agent, fmt.Sprint("agent-", agent)))
	})
}

func sixWant(keyed bool) string {
	return catalog(200, keyed, func(es []map[string]any) []map[string]any {
		for a, i := range sixEdited {
			es[i]["price"] = 1000 + a
		}
		for a := range sixEdited {
			es = append(es, newItem(keyed, 1000+a, fmt.Sprint("agent-", a)))
		}
		return es
	})
}

func TestSixAgentsCLI(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprint("keyed=", keyed), func(t *testing.T) {
			s := newSession(t, false, nil)
			s.must("", "db", "create", "shop")
			s.must(catalog(200, keyed, nil), "import", "shop", "cat", "-")
			for a := range sixEdited {
				s.must("", "branch", "shop", fmt.Sprint("agent-", a))
			}
			for a := range sixEdited {
				s.must(sixDoc(keyed, a), "import", "shop", "cat", "-", "--branch", fmt.Sprint("agent-", a))
			}
			for a := range sixEdited {
				out := s.must("", "promote", "shop", fmt.Sprint("agent-", a))
				if how := map[bool]string{true: "fast-forward", false: "three-way merge"}[a == 0]; !strings.Contains(out, how) {
					t.Fatalf("promotion %d: %s", a, out)
				}
			}
			if got, want := s.must("", "get", "shop", "cat"), sixWant(keyed)+"\n"; got != want {
				t.Fatalf("after six promotions:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func TestSixAgentsMCP(t *testing.T) {
	s := newSession(t, false, nil)
	// Six agents, each its own client of its own server, on one data directory, as six sessions would be.
	agents := make([]*agent, len(sixEdited))
	for i := range agents {
		agents[i] = startAgent(t, s, "--config", mcpConfig(t, ""))
		defer agents[i].stop()
	}
	for _, keyed := range []bool{false, true} {
		db := fmt.Sprint("six-", keyed)
		agents[0].ok("create_database", `{"database":"`+db+`"}`)
		agents[0].ok("put", `{"database":"`+db+`","resource":"cat","value":`+catalog(200, keyed, nil)+`}`)
		for a, ag := range agents {
			ag.ok("create_branch", fmt.Sprintf(`{"database":%q,"name":"agent-%d"}`, db, a))
		}
		for a, ag := range agents {
			ag.ok("put", fmt.Sprintf(`{"database":%q,"resource":"cat","branch":"agent-%d","value":%s}`, db, a, sixDoc(keyed, a)))
		}
		for a, ag := range agents {
			r := ag.ok("promote", fmt.Sprintf(`{"database":%q,"branch":"agent-%d"}`, db, a))
			if r["fast_forward"] != (a == 0) {
				t.Fatalf("keyed=%v: promotion %d: %v", keyed, a, r)
			}
		}
		b, _ := json.Marshal(agents[5].ok("read", `{"database":"`+db+`","resource":"cat","limit":1000}`)["value"])
		var want any
		json.Unmarshal([]byte(sixWant(keyed)), &want)
		w, _ := json.Marshal(want)
		if string(b) != string(w) {
			t.Fatalf("keyed=%v: after six promotions:\n%s\nwant\n%s", keyed, b, w)
		}
	}
}

// TestMergeKeysE2E: arrays keyed by another member — "sku" — merge by it when the operator names it: merge_keys in
// the configuration (strata mcp --config, strata promote --config) or strata promote --key; without it, the same
// promotion conflicts.
func TestMergeKeysE2E(t *testing.T) {
	lines := func(edit func(es []map[string]any) []map[string]any) string {
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
	setup := func(s *session, db string) {
		s.must("", "db", "create", db)
		s.must(lines(nil), "import", db, "orders", "-")
		s.must("", "branch", db, "agent")
		s.must(into, "import", db, "orders", "-")
		s.must(branch, "import", db, "orders", "-", "--branch", "agent")
	}
	s := newSession(t, false, nil)
	cfg := mcpConfig(t, `,"merge_keys":{"/orders/lines":"sku"}`)
	for i, tc := range []struct {
		flags []string
		ok    bool
	}{
		{nil, false},
		{[]string{"--key", "/orders/lines=sku"}, true},
		{[]string{"--config", cfg}, true},
		{[]string{"--config", cfg, "--key", "/orders/lines="}, false}, // --key over the configuration: by position
	} {
		db := fmt.Sprintf("keys%d", i)
		setup(s, db)
		out, errOut, code := s.run("", append([]string{"promote", db, "agent"}, tc.flags...)...)
		if tc.ok != (code == 0) || (!tc.ok && !strings.Contains(errOut, "conflict: /orders/lines/4")) {
			t.Fatalf("promote %v: exit %d: %s%s", tc.flags, code, out, errOut)
		}
		if tc.ok {
			if got := s.must("", "get", db, "orders"); got != want+"\n" {
				t.Fatalf("promote %v:\n%s\nwant\n%s", tc.flags, got, want)
			}
		}
	}
	if _, errOut, code := s.run("", "promote", "keys0", "agent", "--key", "orders/lines=sku"); code != exitUsage || !strings.Contains(errOut, "--key") {
		t.Fatalf("a bad --key: exit %d: %s", code, errOut)
	}
	if _, errOut, code := s.run("", "promote", "keys0", "agent", "--resolve", "/orders/lines/4=mine"); code != exitUsage || !strings.Contains(errOut, "POINTER=branch or POINTER=into") {
		t.Fatalf("a bad --resolve: exit %d: %s", code, errOut)
	}

	// An agent's promote through strata mcp --config takes the configuration's merge keys.
	setup(s, "agentkeys")
	a := startAgent(t, s, "--config", cfg)
	defer a.stop()
	a.ok("promote", `{"database":"agentkeys","branch":"agent"}`)
	if got := s.must("", "get", "agentkeys", "orders"); got != want+"\n" {
		t.Fatalf("the agent's promote:\n%s\nwant\n%s", got, want)
	}
}

// TestMergeRevisionHistoryMCP: on a merge revision, history, path_history, bisect and diff behave as before: they
// follow first parents (the branch's own revisions are not on main's history), and the merge revision carries
// what the branch brought.
func TestMergeRevisionHistoryMCP(t *testing.T) {
	s := newSession(t, false, nil)
	s.must("", "db", "create", "shop")
	s.must(catalog(10, true, nil), "import", "shop", "cat", "-", "-m", "base")
	s.must("", "branch", "shop", "agent")
	s.must(catalog(10, true, func(es []map[string]any) []map[string]any { es[3]["price"] = 30; return es }), "import", "shop", "cat", "-", "--branch", "agent", "-m", "b1")
	s.must(catalog(10, true, func(es []map[string]any) []map[string]any {
		es[3]["price"] = 31
		return append(es, newItem(true, 100, "new"))
	}), "import", "shop", "cat", "-", "--branch", "agent", "-m", "b2")
	s.must(catalog(10, true, func(es []map[string]any) []map[string]any { es[0]["stock"] = 0; return es }), "import", "shop", "cat", "-", "-m", "m1")
	a := startAgent(t, s, "--config", mcpConfig(t, ""))
	defer a.stop()
	p := a.ok("promote", `{"database":"shop","branch":"agent","message":"promote agent"}`)
	merge := p["revision"].(float64)
	if p["fast_forward"] != false || p["merged"] != 4.0 {
		t.Fatalf("promote: %v", p)
	}
	revs := func(r map[string]any, key string) []float64 {
		var out []float64
		for _, x := range r[key].([]any) {
			out = append(out, x.(map[string]any)["revision"].(float64))
		}
		return out
	}
	// base is revision 2, b1 3, b2 4, m1 5, the merge 6.
	if got := revs(a.ok("history", `{"database":"shop","resource":"cat"}`), "revisions"); !slices.Equal(got, []float64{merge, 5, 2}) {
		t.Errorf("history %v, want the merge, m1 and base: first parents only", got)
	}
	ph := a.ok("path_history", `{"database":"shop","resource":"cat","path":"/items/3/price"}`)
	if got := revs(ph, "changes"); !slices.Equal(got, []float64{merge, 2}) {
		t.Errorf("path_history %v", got)
	}
	if ch := ph["changes"].([]any)[0].(map[string]any); ch["before"] != 3.0 || ch["after"] != 31.0 {
		t.Errorf("the merge changed /items/3/price: %v", ch)
	}
	if got := revs(a.ok("path_history", `{"database":"shop","resource":"cat","path":"/items/0/stock"}`), "changes"); !slices.Equal(got, []float64{5, 2}) {
		t.Errorf("path_history of what only main changed: %v", got)
	}
	// bisect: the price became 31 at the merge (b2, where it was made, is not on main's history).
	if b := a.ok("bisect", `{"database":"shop","resource":"cat","predicate":".items[3].price == 31"}`); b["found"] != true || b["revision"] != merge {
		t.Errorf("bisect: %v", b)
	}
	d := a.ok("diff", fmt.Sprintf(`{"database":"shop","from_revision":5,"to_revision":%v}`, merge))
	var ops []string
	for _, o := range d["operations"].([]any) {
		m := o.(map[string]any)
		ops = append(ops, fmt.Sprint(m["op"], " ", m["path"]))
	}
	if !slices.Equal(ops, []string{"replace /cat/items/3/price", "add /cat/items/10"}) {
		t.Errorf("diff of the merge against its first parent: %v", ops)
	}
	if sr := a.ok("show_revision", fmt.Sprintf(`{"database":"shop","revision":%v}`, merge)); sr["merged"] != 4.0 || sr["parent"] != 5.0 {
		t.Errorf("show_revision: %v", sr)
	}
	// The command line's log says the same.
	if out := s.must("", "log", "shop", "cat"); strings.Contains(out, "b1") || strings.Contains(out, "b2") || !strings.Contains(out, "promote agent") {
		t.Errorf("log:\n%s", out)
	}
}

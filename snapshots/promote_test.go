package snapshots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// items is the document {"items":[...]} with n elements; keyed ones carry an id. edit changes it.
func items(n int, keyed bool, edit func(es []map[string]any) []map[string]any) []byte {
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
	b, err := json.Marshal(map[string]any{"items": es})
	if err != nil {
		panic(err)
	}
	return b
}

func elem(keyed bool, id int, name string) map[string]any {
	e := map[string]any{"name": name, "price": 1, "stock": 1}
	if keyed {
		e["id"] = id
	}
	return e
}

// promoteCase: base, into's and the branch's documents, each put whole as an agent's put does.
type promoteCase struct {
	name               string
	base, into, branch []byte
	want               string   // merged document, or "" for conflicts
	conflicts          []string // their paths
}

func runPromote(t *testing.T, c promoteCase) (*DB, *PromoteResult, error) {
	t.Helper()
	ctx := context.Background()
	db, _ := openTest(t, store.NewMemBackend())
	must(db.Put(ctx, "cat", c.base, WriteOptions{}))
	must(db.CreateBranch(ctx, "agent", Ref{}, ""))
	must(db.Put(ctx, "cat", c.into, WriteOptions{}))
	must(db.Put(ctx, "cat", c.branch, WriteOptions{Branch: "agent"}))
	p, err := db.Promote(ctx, "agent", "", WriteOptions{})
	return db, p, err
}

// TestPromoteArrays is the table, each side's whole document put (as an agent's put does), by position
// and by id.
func TestPromoteArrays(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		n := 8
		doc := func(edit func(es []map[string]any) []map[string]any) []byte { return items(n, keyed, edit) }
		cases := []promoteCase{
			{name: "price of element 3 changed vs one element appended",
				base: doc(nil), into: doc(func(es []map[string]any) []map[string]any { es[3]["price"] = 99; return es }),
				branch: doc(func(es []map[string]any) []map[string]any { return append(es, elem(keyed, 100, "new")) }),
				want: string(doc(func(es []map[string]any) []map[string]any {
					es[3]["price"] = 99
					return append(es, elem(keyed, 100, "new"))
				}))},
			{name: "last element changed vs one inserted at the front",
				base: doc(nil), into: doc(func(es []map[string]any) []map[string]any { es[n-1]["stock"] = 0; return es }),
				branch: doc(func(es []map[string]any) []map[string]any {
					return append([]map[string]any{elem(keyed, 100, "first")}, es...)
				}),
				want: string(doc(func(es []map[string]any) []map[string]any {
					es[n-1]["stock"] = 0
					return append([]map[string]any{elem(keyed, 100, "first")}, es...)
				}))},
			{name: "one appended vs another appended: both, into's first",
				base: doc(nil), into: doc(func(es []map[string]any) []map[string]any { return append(es, elem(keyed, 100, "into")) }),
				branch: doc(func(es []map[string]any) []map[string]any { return append(es, elem(keyed, 200, "branch")) }),
				want: string(doc(func(es []map[string]any) []map[string]any {
					return append(es, elem(keyed, 100, "into"), elem(keyed, 200, "branch"))
				}))},
			{name: "element 1 deleted vs element 5 edited",
				base: doc(nil), into: doc(func(es []map[string]any) []map[string]any { return append(es[:1], es[2:]...) }),
				branch: doc(func(es []map[string]any) []map[string]any { es[5]["name"] = "renamed"; return es }),
				want: string(doc(func(es []map[string]any) []map[string]any {
					es[5]["name"] = "renamed"
					return append(es[:1], es[2:]...)
				}))},
			{name: "element 4: price vs stock",
				base: doc(nil), into: doc(func(es []map[string]any) []map[string]any { es[4]["price"] = 40; return es }),
				branch: doc(func(es []map[string]any) []map[string]any { es[4]["stock"] = 0; return es }),
				want:   string(doc(func(es []map[string]any) []map[string]any { es[4]["price"], es[4]["stock"] = 40, 0; return es }))},
			{name: "into edits element 7 vs branch inserts at the front",
				base: doc(nil), into: doc(func(es []map[string]any) []map[string]any { es[7]["price"] = 70; return es }),
				branch: doc(func(es []map[string]any) []map[string]any {
					return append([]map[string]any{elem(keyed, 100, "first")}, es...)
				}),
				want: string(doc(func(es []map[string]any) []map[string]any {
					es[7]["price"] = 70
					return append([]map[string]any{elem(keyed, 100, "first")}, es...)
				}))},
			{name: "same member changed differently",
				base: doc(nil), into: doc(func(es []map[string]any) []map[string]any { es[3]["price"] = 1; return es }),
				branch:    doc(func(es []map[string]any) []map[string]any { es[3]["price"] = 2; return es }),
				conflicts: []string{"/cat/items/3/price"}},
			{name: "element deleted vs the same element edited",
				base: doc(nil), into: doc(func(es []map[string]any) []map[string]any { return append(es[:2], es[3:]...) }),
				branch:    doc(func(es []map[string]any) []map[string]any { es[2]["price"] = 0; return es }),
				conflicts: []string{"/cat/items/2"}},
		}
		if keyed {
			cases = append(cases, promoteCase{name: "branch inserts before element 5 and edits it, into edits another member of it",
				base: doc(nil), into: doc(func(es []map[string]any) []map[string]any { es[5]["price"] = 50; return es }),
				branch: doc(func(es []map[string]any) []map[string]any {
					es[5]["stock"] = 0
					return append(es[:5], append([]map[string]any{elem(true, 100, "new")}, es[5:]...)...)
				}),
				want: string(doc(func(es []map[string]any) []map[string]any {
					es[5]["price"], es[5]["stock"] = 50, 0
					return append(es[:5], append([]map[string]any{elem(true, 100, "new")}, es[5:]...)...)
				}))})
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("keyed=%v/%s", keyed, c.name), func(t *testing.T) {
				db, p, err := runPromote(t, c)
				if c.want == "" {
					var paths []string
					if p != nil {
						for _, cf := range p.Conflicts {
							paths = append(paths, cf.Path)
						}
					}
					if !errors.Is(err, ErrConflict) || fmt.Sprint(paths) != fmt.Sprint(c.conflicts) {
						t.Fatalf("want conflicts at %v, got %v (%v)", c.conflicts, paths, err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if p.FastForward {
					t.Fatal("fast-forward: the case does not merge")
				}
				var want any
				if err := json.Unmarshal([]byte(c.want), &want); err != nil {
					t.Fatal(err)
				}
				w, _ := json.Marshal(want)
				if got := get(t, db, Ref{}, "cat", ""); got != string(w) {
					t.Fatalf("got  %s\nwant %s", got, w)
				}
			})
		}
	}
}

// TestPromoteResolve: a conflict lists base, into and branch values; a resolution per path settles it (the CLI's
// --resolve and the tool's resolve argument come here), and nothing is written until every one is settled.
func TestPromoteResolve(t *testing.T) {
	ctx := context.Background()
	base := items(6, true, nil)
	into := items(6, true, func(es []map[string]any) []map[string]any { es[3]["price"], es[1]["stock"] = 31, 11; return es })
	branch := items(6, true, func(es []map[string]any) []map[string]any {
		es[3]["price"], es[1]["stock"] = 32, 12
		return append(es[:4], es[5:]...) // and element 4 deleted, which merges
	})
	db, p, err := runPromote(t, promoteCase{base: base, into: into, branch: branch})
	if !errors.Is(err, ErrConflict) || len(p.Conflicts) != 2 {
		t.Fatalf("%v %+v", err, p)
	}
	head := must(db.Resolve(ctx, Ref{})).Rev.Number
	c := p.Conflicts[1]
	read := func(v revision.Value) string { return string(must(p.ConflictForest().JSON(ctx, v))) }
	if c.Path != "/cat/items/3/price" || read(c.Base) != "3" || read(c.Ours) != "31" || read(c.Theirs) != "32" {
		t.Fatalf("conflict %+v: %s %s %s", c, read(c.Base), read(c.Ours), read(c.Theirs))
	}
	if !strings.Contains(err.Error(), "nothing was written") {
		t.Fatal(err)
	}

	// Unknown sides and paths not in conflict are refused, and so is a partial resolution; nothing is written.
	if _, err := db.PromoteWith(ctx, "agent", "", WriteOptions{}, PromoteOptions{Resolve: map[string]string{"/cat/items/3/price": "theirs"}}); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), `"into"`) {
		t.Fatalf("got %v", err)
	}
	_, err = db.PromoteWith(ctx, "agent", "", WriteOptions{}, PromoteOptions{Resolve: map[string]string{"/cat/items/3/price": ResolveBranch, "/cat/items/3": ResolveInto}})
	if !errors.Is(err, ErrInvalidArgument) || !errors.Is(err, revision.ErrResolution) || !strings.Contains(err.Error(), `"/cat/items/3",`) || !strings.Contains(err.Error(), `"/cat/items/1/stock"`) {
		t.Fatalf("got %v", err)
	}
	p, err = db.PromoteWith(ctx, "agent", "", WriteOptions{}, PromoteOptions{Resolve: map[string]string{"/cat/items/3/price": ResolveBranch}})
	if !errors.Is(err, ErrConflict) || len(p.Conflicts) != 1 || p.Conflicts[0].Path != "/cat/items/1/stock" || len(p.Resolved) != 1 {
		t.Fatalf("partial: %v %+v", err, p)
	}
	if must(db.Resolve(ctx, Ref{})).Rev.Number != head {
		t.Fatal("a promote with conflicts left wrote")
	}

	// All settled: one merge revision with both parents.
	p, err = db.PromoteWith(ctx, "agent", "", WriteOptions{Message: "resolved"}, PromoteOptions{Resolve: map[string]string{"/cat/items/3/price": ResolveBranch, "/cat/items/1/stock": ResolveInto}})
	if err != nil || len(p.Resolved) != 2 {
		t.Fatalf("%v %+v", err, p)
	}
	want := items(6, true, func(es []map[string]any) []map[string]any {
		es[3]["price"], es[1]["stock"] = 32, 11
		return append(es[:4], es[5:]...)
	})
	if got := get(t, db, Ref{}, "cat", ""); got != string(want) {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if rec := must(db.Resolve(ctx, Ref{})).Rev; len(rec.Parents) != 2 || rec.Parents[0] != head {
		t.Fatalf("parents %v", rec.Parents)
	}
	// Now main has it all: nothing to bring, and a resolution has nothing to settle.
	if _, err := db.PromoteWith(ctx, "agent", "", WriteOptions{}, PromoteOptions{Resolve: map[string]string{"/cat/items/3/price": ResolveBranch}}); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "no conflicts") {
		t.Fatalf("got %v", err)
	}
}

// TestPromoteRunConflictValues: a conflict over a run of elements carries each side's run, readable through
// ConflictForest although the merge built them.
func TestPromoteRunConflictValues(t *testing.T) {
	ctx := context.Background()
	long := strings.Repeat("x", 600) // runs over 1 KiB: they live in nodes of their own
	base := items(6, false, nil)
	into := items(6, false, func(es []map[string]any) []map[string]any {
		return append(es[:1], append([]map[string]any{{"name": long + "a"}}, es[3:]...)...)
	})
	branch := items(6, false, func(es []map[string]any) []map[string]any {
		return append(es[:2], append([]map[string]any{{"name": long + "b"}, {"name": long + "c"}, {"name": long + "d"}}, es[4:]...)...)
	})
	db, p, err := runPromote(t, promoteCase{base: base, into: into, branch: branch})
	if !errors.Is(err, ErrConflict) || len(p.Conflicts) != 1 || !p.Conflicts[0].Elements || p.Conflicts[0].Path != "/cat/items/1" {
		t.Fatalf("%v %+v", err, p)
	}
	c := p.Conflicts[0]
	var o, th []map[string]any
	if err := json.Unmarshal(must(p.ConflictForest().JSON(ctx, c.Ours)), &o); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(must(p.ConflictForest().JSON(ctx, c.Theirs)), &th); err != nil {
		t.Fatal(err)
	}
	// into replaced 1 and 2 by a; the branch replaced 2 and 3 by b, c, d: the run from 1 to 3 is in conflict.
	if len(o) != 2 || o[0]["name"] != long+"a" || o[1]["name"] != "item-3" || len(th) != 4 || th[0]["name"] != "item-1" || th[3]["name"] != long+"d" {
		t.Fatalf("runs %v / %v", o, th)
	}
	if !c.Theirs.IsTree() {
		t.Fatal("the test means a run held in nodes of its own")
	}
	p, err = db.PromoteWith(ctx, "agent", "", WriteOptions{}, PromoteOptions{Resolve: map[string]string{"/cat/items/1": ResolveBranch}})
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, db, Ref{}, "cat", ""); got != string(branch) {
		t.Fatalf("got %s", got)
	}
}

// TestPromoteSixAgents: six agents branch from one state; each edits one distinct element of a 200-element array
// and appends one element of its own (putting its whole document). All six promotions succeed in turn, and main
// holds every change, the appends in the order promoted.
func TestPromoteSixAgents(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			ctx := context.Background()
			db, _ := openTest(t, store.NewMemBackend())
			must(db.Put(ctx, "cat", items(200, keyed, nil), WriteOptions{}))
			edited := []int{0, 37, 38, 120, 198, 199} // neighbours, and both ends
			for a, i := range edited {
				name := fmt.Sprint("agent-", a)
				must(db.CreateBranch(ctx, name, Ref{}, ""))
				doc := items(200, keyed, func(es []map[string]any) []map[string]any {
					es[i]["price"] = 1000 + a
					return append(es, elem(keyed, 1000+a, name))
				})
				must(db.Put(ctx, "cat", doc, WriteOptions{Branch: name}))
			}
			for a := range edited {
				p, err := db.Promote(ctx, fmt.Sprint("agent-", a), "", WriteOptions{})
				if err != nil {
					t.Fatalf("promotion %d: %v %+v", a, err, p.Conflicts)
				}
				if a > 0 && p.FastForward {
					t.Fatalf("promotion %d fast-forwarded", a)
				}
			}
			want := items(200, keyed, func(es []map[string]any) []map[string]any {
				for a, i := range edited {
					es[i]["price"] = 1000 + a
				}
				for a := range edited {
					es = append(es, elem(keyed, 1000+a, fmt.Sprint("agent-", a)))
				}
				return es
			})
			if got := get(t, db, Ref{}, "cat", ""); got != string(want) {
				t.Fatalf("got %s\nwant %s", got, want)
			}
		})
	}
}

// TestPromoteFirstParentHistory: on merge revisions, history, path history and a revision's diff follow the first
// parent (the branch promoted into), as before: the branch's own revisions are not on main's history, and the
// merge revision carries what it brought.
func TestPromoteFirstParentHistory(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t, store.NewMemBackend())
	base := must(db.Put(ctx, "cat", items(10, true, nil), WriteOptions{Message: "base"}))
	must(db.CreateBranch(ctx, "agent", Ref{}, ""))
	b1 := must(db.Put(ctx, "cat", items(10, true, func(es []map[string]any) []map[string]any { es[3]["price"] = 30; return es }), WriteOptions{Branch: "agent", Message: "b1"}))
	b2 := must(db.Put(ctx, "cat", items(10, true, func(es []map[string]any) []map[string]any {
		es[3]["price"] = 31
		return append(es, elem(true, 100, "new"))
	}), WriteOptions{Branch: "agent", Message: "b2"}))
	m1 := must(db.Put(ctx, "cat", items(10, true, func(es []map[string]any) []map[string]any { es[0]["stock"] = 0; return es }), WriteOptions{Message: "m1"}))
	p := must(db.Promote(ctx, "agent", "", WriteOptions{Message: "promote agent"}))
	if p.FastForward {
		t.Fatal("want a merge")
	}
	page := must(db.History(ctx, HistoryQuery{Resource: "cat"}))
	var got []uint64
	for _, r := range page.Revisions {
		got = append(got, r.Number)
	}
	if fmt.Sprint(got) != fmt.Sprint([]uint64{p.Revision, m1.Revision, base.Revision}) {
		t.Fatalf("history %v (branch revisions %d, %d must not be on it)", got, b1.Revision, b2.Revision)
	}
	changes, _ := must2(t)(db.PathHistory(ctx, HistoryQuery{Resource: "cat", Path: revision.MustPointer("/items/3/price")}))
	if len(changes) != 2 || changes[0].Rev.Number != p.Revision || changes[1].Rev.Number != base.Revision {
		t.Fatalf("path history %+v", changes)
	}
	if b, a := string(must(db.Forest().JSON(ctx, changes[0].Before))), string(must(db.Forest().JSON(ctx, changes[0].After))); b != "3" || a != "31" {
		t.Fatalf("the merge changed /items/3/price from %s to %s", b, a)
	}
	// The element m1 edited did not change in the merge: not on its path history at the merge.
	changes, _ = must2(t)(db.PathHistory(ctx, HistoryQuery{Resource: "cat", Path: revision.MustPointer("/items/0/stock")}))
	if len(changes) != 2 || changes[0].Rev.Number != m1.Revision {
		t.Fatalf("path history of /items/0/stock %+v", changes)
	}
	// The merge revision's diff is against its first parent: exactly what the branch brought.
	d := must(db.ShowRevision(ctx, p.Revision, 0))
	var paths []string
	for _, op := range d.Diff.Operations {
		paths = append(paths, op.Op+" "+op.Path)
	}
	if fmt.Sprint(paths) != "[replace /cat/items/3/price add /cat/items/10]" {
		t.Fatalf("merge diff %v", paths)
	}
	dd, _, _, err := db.Diff(ctx, Ref{Revision: m1.Revision}, Ref{Revision: p.Revision}, "cat", nil, nil)
	if err != nil || dd.Counts.Replaced != 1 || dd.Counts.Added != 1 {
		t.Fatalf("diff %+v %v", dd, err)
	}
}

// TestMergeBase: the newest common ancestor, found by walking back from both heads, is the one a walk of their
// whole histories finds, through promotions both ways.
func TestMergeBase(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t, store.NewMemBackend())
	must(db.Put(ctx, "a", []byte(`0`), WriteOptions{}))
	must(db.Put(ctx, "b", []byte(`0`), WriteOptions{}))
	must(db.CreateBranch(ctx, "x", Ref{}, ""))
	must(db.CreateBranch(ctx, "y", Ref{}, ""))
	brute := func(a, b uint64) uint64 {
		anc := func(n uint64) map[uint64]bool {
			seen := map[uint64]bool{}
			stack := []uint64{n}
			for len(stack) > 0 {
				x := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if seen[x] {
					continue
				}
				seen[x] = true
				stack = append(stack, must(db.Resolve(ctx, Ref{Revision: x})).Rev.Parents...)
			}
			return seen
		}
		sa, sb := anc(a), anc(b)
		var best uint64
		for x := range sa {
			if sb[x] && x > best {
				best = x
			}
		}
		return best
	}
	branches := []string{Main, "x", "y"}
	for step := 0; step < 60; step++ {
		from, to := branches[step%3], branches[(step*7+1)%3]
		res := []string{"a", "b"}[step%2]
		must(db.Put(ctx, res, []byte(fmt.Sprint(step)), WriteOptions{Branch: from}))
		if step%4 == 3 && from != to {
			// Both sides changed different resources only: promotions merge without conflicts.
			if _, err := db.Promote(ctx, from, to, WriteOptions{}); err != nil && !errors.Is(err, ErrConflict) {
				t.Fatal(err)
			}
		}
		for _, p := range [][2]string{{Main, "x"}, {"x", "y"}, {Main, "y"}} {
			ha, hb := must(db.Resolve(ctx, Ref{Branch: p[0]})).Rev.Number, must(db.Resolve(ctx, Ref{Branch: p[1]})).Rev.Number
			if got, want := must(db.mergeBase(ctx, ha, hb)), brute(ha, hb); got != want {
				t.Fatalf("step %d: merge base of %d and %d is %d, want %d", step, ha, hb, got, want)
			}
		}
	}
}

package revision

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// mergeCase is one three-way merge: want is the merged JSON, or "" when conflicts (their paths) are expected.
type mergeCase struct {
	name, base, ours, theirs string
	want                     string
	conflicts                []string
	opts                     *MergeOptions
}

func runMergeCases(t *testing.T, cases []mergeCase) {
	t.Helper()
	ctx := context.Background()
	f, _ := newForest(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base, ours, theirs := mustImport(t, f, c.base), mustImport(t, f, c.ours), mustImport(t, f, c.theirs)
			res, err := f.Merge(ctx, base, ours, theirs, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "" {
				if res.Change != nil || len(res.Conflicts) != len(c.conflicts) {
					t.Fatalf("want conflicts at %v, got %v (change %v)", c.conflicts, res.Conflicts, res.Change)
				}
				for i, p := range c.conflicts {
					if res.Conflicts[i].Path != p || res.Conflicts[i].Reason == "" {
						t.Fatalf("conflict %d: %+v, want path %q", i, res.Conflicts[i], p)
					}
				}
				return
			}
			if len(res.Conflicts) > 0 {
				t.Fatalf("unexpected conflicts %v", res.Conflicts)
			}
			if _, err := f.Save(ctx, res.Change); err != nil {
				t.Fatal(err)
			}
			if got := mustJSON(t, f, res.Change.Root); got != canonical(t, []byte(c.want)) {
				t.Fatalf("got  %s\nwant %s", got, canonical(t, []byte(c.want)))
			}
			if fresh := mustImport(t, f, c.want); fresh != res.Change.Root {
				t.Fatal("the merged tree is not the canonical tree of its content")
			}
		})
	}
}

func TestMerge(t *testing.T) {
	runMergeCases(t, []mergeCase{
		{name: "disjoint members", base: `{"a":1,"b":2}`, ours: `{"a":10,"b":2}`, theirs: `{"a":1,"b":20}`, want: `{"a":10,"b":20}`},
		{name: "same change both sides", base: `{"a":1}`, ours: `{"a":2}`, theirs: `{"a":2}`, want: `{"a":2}`},
		{name: "nested disjoint", base: `{"cfg":{"x":1,"y":1}}`, ours: `{"cfg":{"x":2,"y":1}}`, theirs: `{"cfg":{"x":1,"y":3}}`, want: `{"cfg":{"x":2,"y":3}}`},
		{name: "add and remove", base: `{"a":1,"b":2}`, ours: `{"a":1,"b":2,"c":3}`, theirs: `{"a":1}`, want: `{"a":1,"c":3}`},
		{name: "conflict", base: `{"a":1}`, ours: `{"a":2}`, theirs: `{"a":3}`, conflicts: []string{"/a"}},
		{name: "remove vs change", base: `{"a":{"x":1}}`, ours: `{}`, theirs: `{"a":{"x":2}}`, conflicts: []string{"/a"}},
		{name: "both add differently", base: `{}`, ours: `{"n":1}`, theirs: `{"n":2}`, conflicts: []string{"/n"}},
		{name: "type change", base: `{"a":[1]}`, ours: `{"a":"x"}`, theirs: `{"a":[2]}`, conflicts: []string{"/a"}},
		{name: "array elementwise", base: `[1,2,3]`, ours: `[9,2,3]`, theirs: `[1,2,8]`, want: `[9,2,8]`},
		{name: "array length changed on one side", base: `[1,2,3]`, ours: `[1,2,3,4]`, theirs: `[0,2,3]`, want: `[0,2,3,4]`},
	})
}

// TestMergeArrays: the table (by position and by key), and the rules of the array merge around it.
func TestMergeArrays(t *testing.T) {
	objs := func(ids ...int) string { // positional objects (no id): {"n":i,"v":"a"}
		var b strings.Builder
		b.WriteByte('[')
		for i, n := range ids {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"n":%d,"v":"a","w":0}`, n)
		}
		b.WriteByte(']')
		return b.String()
	}
	runMergeCases(t, []mergeCase{
		// The table, by position.
		{name: "element 3 changed vs one appended", base: `[0,1,2,3,4]`, ours: `[0,1,2,30,4]`, theirs: `[0,1,2,3,4,5]`, want: `[0,1,2,30,4,5]`},
		{name: "last changed vs insert at front", base: `[0,1,2,3,4]`, ours: `[0,1,2,3,40]`, theirs: `[-1,0,1,2,3,4]`, want: `[-1,0,1,2,3,40]`},
		{name: "both append, ours first", base: `[0,1]`, ours: `[0,1,"o"]`, theirs: `[0,1,"t"]`, want: `[0,1,"o","t"]`},
		{name: "both append several", base: `[0,1]`, ours: `[0,1,"o1","o2"]`, theirs: `[0,1,"t1"]`, want: `[0,1,"o1","o2","t1"]`},
		{name: "delete 1 vs edit 5", base: `[0,1,2,3,4,5,6]`, ours: `[0,2,3,4,5,6]`, theirs: `[0,1,2,3,4,50,6]`, want: `[0,2,3,4,50,6]`},
		{name: "delete 1 vs member edit inside 5", base: objs(0, 1, 2, 3, 4, 5, 6), ours: objs(0, 2, 3, 4, 5, 6),
			theirs: strings.Replace(objs(0, 1, 2, 3, 4, 5, 6), `{"n":5,"v":"a"`, `{"n":5,"v":"b"`, 1),
			want:   strings.Replace(objs(0, 2, 3, 4, 5, 6), `{"n":5,"v":"a"`, `{"n":5,"v":"b"`, 1)},
		{name: "same member changed differently", base: objs(0, 1, 2, 3), ours: strings.Replace(objs(0, 1, 2, 3), `"n":3,"v":"a"`, `"n":3,"v":"o"`, 1),
			theirs: strings.Replace(objs(0, 1, 2, 3), `"n":3,"v":"a"`, `"n":3,"v":"t"`, 1), conflicts: []string{"/3/v"}},
		{name: "different members of one element", base: objs(0, 1, 2), ours: strings.Replace(objs(0, 1, 2), `"n":1,"v":"a"`, `"n":1,"v":"o"`, 1),
			theirs: strings.Replace(objs(0, 1, 2), `"n":1,"v":"a","w":0`, `"n":1,"v":"a","w":7`, 1),
			want:   strings.Replace(objs(0, 1, 2), `"n":1,"v":"a","w":0`, `"n":1,"v":"o","w":7`, 1)},
		{name: "delete vs edit same element", base: `[0,1,2,3]`, ours: `[0,1,3]`, theirs: `[0,1,20,3]`, conflicts: []string{"/2"}},
		{name: "both delete the same element", base: `[0,1,2,3]`, ours: `[0,1,3]`, theirs: `[0,1,3]`, want: `[0,1,3]`},
		{name: "both delete it, one edits another", base: `[0,1,2,3]`, ours: `[0,1,3]`, theirs: `[9,1,3]`, want: `[9,1,3]`},
		{name: "same insert on both sides", base: `[0,1,2]`, ours: `[0,"x",1,2]`, theirs: `[0,"x",1,2]`, want: `[0,"x",1,2]`},
		{name: "same append on both sides", base: `[0]`, ours: `[0,1]`, theirs: `[0,1]`, want: `[0,1]`},
		{name: "inserts at the same middle place", base: `[0,1,2]`, ours: `[0,"o",1,2]`, theirs: `[0,"t",1,2]`, conflicts: []string{"/1"}},
		{name: "inserts at different places", base: `[0,1,2]`, ours: `[0,"o",1,2]`, theirs: `[0,1,"t",2]`, want: `[0,"o",1,"t",2]`},
		{name: "insert next to a removed element", base: `[0,1,2]`, ours: `[0,"o",1,2]`, theirs: `[0,2]`, want: `[0,"o",2]`},
		{name: "overlapping runs", base: `[0,1,2,3,4]`, ours: `[0,"x",3,4]`, theirs: `[0,1,"y","z",4]`, conflicts: []string{"/1"}},
		{name: "into an empty array", base: `[]`, ours: `[1]`, theirs: `[2]`, want: `[1,2]`},
		{name: "array emptied vs edited", base: `[1,2]`, ours: `[]`, theirs: `[1,3]`, conflicts: []string{"/0"}},
		{name: "nested arrays", base: `{"a":[[1,2],[3]]}`, ours: `{"a":[[1,2,"o"],[3]]}`, theirs: `{"a":[[1,2],[3],["t"]]}`, want: `{"a":[[1,2,"o"],[3],["t"]]}`},

		// The table, keyed by id.
		{name: "keyed id=4 price vs stock",
			base: `[{"id":3,"price":1,"stock":1},{"id":4,"price":1,"stock":1}]`, ours: `[{"id":3,"price":1,"stock":1},{"id":4,"price":2,"stock":1}]`,
			theirs: `[{"id":3,"price":1,"stock":1},{"id":4,"price":1,"stock":0}]`, want: `[{"id":3,"price":1,"stock":1},{"id":4,"price":2,"stock":0}]`},
		{name: "keyed edit id=7 vs insert at front",
			base: `[{"id":6,"p":1},{"id":7,"p":1}]`, ours: `[{"id":6,"p":1},{"id":7,"p":2}]`,
			theirs: `[{"id":1,"p":0},{"id":6,"p":1},{"id":7,"p":1}]`, want: `[{"id":1,"p":0},{"id":6,"p":1},{"id":7,"p":2}]`},
		{name: "keyed same member changed differently",
			base: `[{"id":1,"p":1}]`, ours: `[{"id":1,"p":2}]`, theirs: `[{"id":1,"p":3}]`, conflicts: []string{"/0/p"}},
		{name: "keyed delete vs edit", base: `[{"id":1,"p":1},{"id":2,"p":1}]`, ours: `[{"id":2,"p":1}]`, theirs: `[{"id":1,"p":5},{"id":2,"p":1}]`, conflicts: []string{"/0"}},
		// By key, an insert right before an element and an edit of it on one side still merges with the other
		// side's edit of the same element (by position this is one run, which would conflict).
		{name: "keyed insert before and edit vs edit",
			base:   `[{"id":"a","p":1,"q":1},{"id":"b","p":1,"q":1},{"id":"c","p":1,"q":1}]`,
			ours:   `[{"id":"a","p":1,"q":1},{"id":"n","p":0,"q":0},{"id":"b","p":2,"q":1},{"id":"c","p":1,"q":1}]`,
			theirs: `[{"id":"a","p":1,"q":1},{"id":"b","p":1,"q":3},{"id":"c","p":1,"q":1}]`,
			want:   `[{"id":"a","p":1,"q":1},{"id":"n","p":0,"q":0},{"id":"b","p":2,"q":3},{"id":"c","p":1,"q":1}]`},
		{name: "keyed move vs edit: the edit follows the element",
			base: `[{"id":1,"p":1},{"id":2,"p":1},{"id":3,"p":1},{"id":4,"p":1}]`,
			ours: `[{"id":1,"p":1},{"id":3,"p":1},{"id":4,"p":1},{"id":2,"p":1}]`, theirs: `[{"id":1,"p":1},{"id":2,"p":9},{"id":3,"p":1},{"id":4,"p":1}]`,
			want: `[{"id":1,"p":1},{"id":3,"p":1},{"id":4,"p":1},{"id":2,"p":9}]`},
		{name: "keyed move and edit vs edit of another member",
			base: `[{"id":1,"p":1,"q":1},{"id":2,"p":1,"q":1},{"id":3,"p":1,"q":1},{"id":4,"p":1,"q":1}]`,
			ours: `[{"id":2,"p":5,"q":1},{"id":1,"p":1,"q":1},{"id":3,"p":1,"q":1},{"id":4,"p":1,"q":1}]`, theirs: `[{"id":1,"p":1,"q":1},{"id":2,"p":1,"q":6},{"id":3,"p":1,"q":1},{"id":4,"p":1,"q":1}]`,
			want: `[{"id":2,"p":5,"q":6},{"id":1,"p":1,"q":1},{"id":3,"p":1,"q":1},{"id":4,"p":1,"q":1}]`},
		{name: "keyed moved to different places",
			base: `[{"id":1},{"id":2},{"id":3},{"id":4},{"id":5}]`,
			ours: `[{"id":2},{"id":3},{"id":1},{"id":4},{"id":5}]`, theirs: `[{"id":2},{"id":3},{"id":4},{"id":5},{"id":1}]`, conflicts: []string{"/0"}},
		{name: "keyed moved to the same place", base: `[{"id":1},{"id":2},{"id":3},{"id":4}]`,
			ours: `[{"id":2},{"id":3},{"id":4},{"id":1}]`, theirs: `[{"id":2},{"id":3},{"id":4},{"id":1}]`, want: `[{"id":2},{"id":3},{"id":4},{"id":1}]`},
		{name: "keyed removed vs moved", base: `[{"id":1},{"id":2},{"id":3},{"id":4}]`,
			ours: `[{"id":2},{"id":3},{"id":4}]`, theirs: `[{"id":2},{"id":3},{"id":4},{"id":1}]`, conflicts: []string{"/0"}},
		{name: "keyed added at different places", base: `[{"id":1},{"id":2},{"id":3}]`,
			ours: `[{"id":9},{"id":1},{"id":2},{"id":3}]`, theirs: `[{"id":1},{"id":2},{"id":9},{"id":3}]`, conflicts: []string{"/0"}},
		{name: "keyed both append, ours first", base: `[{"id":1}]`, ours: `[{"id":1},{"id":2}]`, theirs: `[{"id":1},{"id":3}]`, want: `[{"id":1},{"id":2},{"id":3}]`},
		{name: "keyed both append the same key", base: `[{"id":1}]`, ours: `[{"id":1},{"id":2,"v":"o"}]`, theirs: `[{"id":1},{"id":2,"v":"t"}]`, conflicts: []string{"/1"}},
		{name: "keys repeat: by position", base: `[{"id":1,"p":1},{"id":1,"p":2}]`, ours: `[{"id":1,"p":1},{"id":1,"p":3}]`,
			theirs: `[{"id":1,"p":1},{"id":1,"p":2},{"id":2}]`, want: `[{"id":1,"p":1},{"id":1,"p":3},{"id":2}]`},

		// Another key, named for the array; the same documents without it merge by position and conflict.
		{name: "sku by position", base: skuDoc("A1", "B1", "C1"), ours: skuDoc("A1", "N0", "B2", "C1"),
			theirs: strings.Replace(skuDoc("A1", "B1", "C1"), `"sku":"B","p":1,"q":0`, `"sku":"B","p":1,"q":5`, 1), conflicts: []string{"/items/1"}},
		{name: "sku by key", base: skuDoc("A1", "B1", "C1"), ours: skuDoc("A1", "N0", "B2", "C1"),
			theirs: strings.Replace(skuDoc("A1", "B1", "C1"), `"sku":"B","p":1,"q":0`, `"sku":"B","p":1,"q":5`, 1),
			want:   strings.Replace(skuDoc("A1", "N0", "B2", "C1"), `"sku":"B","p":2,"q":0`, `"sku":"B","p":2,"q":5`, 1),
			opts:   &MergeOptions{Keys: map[string]string{"/items": "sku"}}},
		{name: "id turned off", base: `[{"id":1,"p":1},{"id":2,"p":1}]`, ours: `[{"id":1,"p":1},{"id":3},{"id":2,"p":2}]`, theirs: `[{"id":1,"p":1},{"id":2,"p":1,"q":1}]`,
			conflicts: []string{"/1"}, opts: &MergeOptions{Keys: map[string]string{"": ""}}},
		{name: "id on", base: `[{"id":1,"p":1},{"id":2,"p":1}]`, ours: `[{"id":1,"p":1},{"id":3},{"id":2,"p":2}]`, theirs: `[{"id":1,"p":1},{"id":2,"p":1,"q":1}]`,
			want: `[{"id":1,"p":1},{"id":3},{"id":2,"p":2,"q":1}]`},
	})
}

// skuDoc is {"items":[...]} with one element per "Xn": sku X, p n.
func skuDoc(specs ...string) string {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i, s := range specs {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"sku":%q,"p":%s,"q":0}`, s[:1], s[1:])
	}
	b.WriteString(`]}`)
	return b.String()
}

// TestMergeResolve: conflicts are settled path by path; nothing is built until all are; a resolution naming a path
// not in conflict is refused.
func TestMergeResolve(t *testing.T) {
	ctx := context.Background()
	f, ms := newForest(t)
	base := mustImport(t, f, `{"a":1,"b":1,"list":[0,1,2,3,4],"keep":true}`)
	ours := mustImport(t, f, `{"a":2,"b":2,"list":[0,"x",3,4],"keep":true}`)
	theirs := mustImport(t, f, `{"a":3,"b":3,"list":[0,1,"y","z",4],"keep":false}`)
	res, err := f.Merge(ctx, base, ours, theirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, c := range res.Conflicts {
		paths = append(paths, c.Path)
	}
	if fmt.Sprint(paths) != "[/a /b /list/1]" || res.Change != nil {
		t.Fatalf("conflicts %v change %v", paths, res.Change)
	}
	// A conflict over a run of elements carries each side's run; the merge built them, Nodes holds what they need.
	run := res.Conflicts[2]
	if !run.Elements {
		t.Fatalf("%+v", run)
	}
	if _, err := ms.PutNodes(ctx, res.Nodes); err != nil {
		t.Fatal(err)
	}
	if b, o, th := mustJSON(t, f, run.Base), mustJSON(t, f, run.Ours), mustJSON(t, f, run.Theirs); b != `[1,2]` || o != `["x"]` || th != `[1,"y"]` {
		t.Fatalf("run conflict values %s %s %s", b, o, th)
	}
	if o, th := mustJSON(t, f, res.Conflicts[0].Ours), mustJSON(t, f, res.Conflicts[0].Theirs); o != "2" || th != "3" {
		t.Fatalf("conflict values %s %s", o, th)
	}

	// Settling some: the rest are still conflicts, and nothing is built.
	res, err = f.Merge(ctx, base, ours, theirs, &MergeOptions{Resolve: map[string]string{"/a": Theirs}})
	if err != nil || res.Change != nil || len(res.Conflicts) != 2 || len(res.Resolved) != 1 || res.Resolved[0].Path != "/a" {
		t.Fatalf("partial: %+v %v", res, err)
	}
	// Settling all.
	res, err = f.Merge(ctx, base, ours, theirs, &MergeOptions{Resolve: map[string]string{"/a": Theirs, "/b": Ours, "/list/1": Theirs}})
	if err != nil || res.Change == nil || len(res.Conflicts) != 0 {
		t.Fatalf("all: %+v %v", res, err)
	}
	if _, err := f.Save(ctx, res.Change); err != nil {
		t.Fatal(err)
	}
	if got := mustJSON(t, f, res.Change.Root); got != `{"a":3,"b":2,"keep":false,"list":[0,1,"y","z",4]}` {
		t.Fatal(got)
	}
	res, err = f.Merge(ctx, base, ours, theirs, &MergeOptions{Resolve: map[string]string{"/a": Ours, "/b": Ours, "/list/1": Ours}})
	if err != nil || res.Change == nil {
		t.Fatal(err)
	}
	// Theirs replaced 2 and 3 one for one: the edit of 3 overlaps nothing of ours and is kept.
	if got := mustJSON(t, f, res.Change.Root); got != `{"a":2,"b":2,"keep":false,"list":[0,"x","z",4]}` {
		t.Fatal(got)
	}

	// A path that is not in conflict is refused, naming it and the paths that are.
	_, err = f.Merge(ctx, base, ours, theirs, &MergeOptions{Resolve: map[string]string{"/a": Ours, "/keep": Ours, "/list/2": Theirs}})
	var re *ResolutionError
	if !errors.Is(err, ErrResolution) || !errors.As(err, &re) || fmt.Sprint(re.NotInConflict) != "[/keep /list/2]" ||
		!strings.Contains(err.Error(), `"/list/1"`) {
		t.Fatalf("got %v", err)
	}
	// So is a side that is neither.
	if _, err := f.Merge(ctx, base, ours, theirs, &MergeOptions{Resolve: map[string]string{"/a": "mine"}}); !errors.Is(err, ErrResolution) || !strings.Contains(err.Error(), `"ours" or "theirs"`) {
		t.Fatalf("got %v", err)
	}
	// And any resolution of a merge without conflicts.
	if _, err := f.Merge(ctx, base, ours, base, &MergeOptions{Resolve: map[string]string{"/a": Ours}}); !errors.Is(err, ErrResolution) || !strings.Contains(err.Error(), "no conflicts") {
		t.Fatalf("got %v", err)
	}
	// Keyed conflicts settle the same way: the element moved to two places goes where the chosen side put it.
	kb := mustImport(t, f, `[{"id":1},{"id":2},{"id":3},{"id":4},{"id":5}]`)
	ko := mustImport(t, f, `[{"id":2},{"id":3},{"id":1},{"id":4},{"id":5}]`)
	kt := mustImport(t, f, `[{"id":2},{"id":3},{"id":4},{"id":5},{"id":1,"x":1}]`)
	for side, want := range map[string]string{Ours: `[{"id":2},{"id":3},{"id":1},{"id":4},{"id":5}]`, Theirs: `[{"id":2},{"id":3},{"id":4},{"id":5},{"id":1,"x":1}]`} {
		res, err := f.Merge(ctx, kb, ko, kt, &MergeOptions{Resolve: map[string]string{"/0": side}})
		if err != nil || res.Change == nil {
			t.Fatalf("%s: %+v %v", side, res, err)
		}
		if got := mustJSON(t, f, res.Change.Root); got != want {
			t.Fatalf("%s: %s", side, got)
		}
	}
}

func TestMergeLargeDocuments(t *testing.T) {
	ctx := context.Background()
	f, _ := newForest(t)
	doc := `{"users":` + string(userDoc(30000)) + `,"config":{"mode":"a","limit":5}}`
	base := mustImport(t, f, doc)
	ours := mustPatch(t, f, base, `[{"op":"replace","path":"/users/100/name","value":"ours"},{"op":"replace","path":"/config/mode","value":"b"}]`)
	theirs := mustPatch(t, f, base, `[{"op":"replace","path":"/users/29000/score","value":-1},{"op":"add","path":"/config/new","value":true}]`)
	res, err := f.Merge(ctx, base, ours, theirs, nil)
	if err != nil || len(res.Conflicts) > 0 {
		t.Fatalf("merge: %v %+v", err, res)
	}
	if _, err := f.Save(ctx, res.Change); err != nil {
		t.Fatal(err)
	}
	want := mustPatch(t, f, ours, `[{"op":"replace","path":"/users/29000/score","value":-1},{"op":"add","path":"/config/new","value":true}]`)
	if res.Change.Root != want {
		t.Fatal("merged tree differs from applying both changes")
	}
	// Changing the same element two ways is a conflict naming the exact path and both values.
	theirs2 := mustPatch(t, f, base, `[{"op":"replace","path":"/users/100/name","value":"theirs"}]`)
	res, err = f.Merge(ctx, base, ours, theirs2, nil)
	if err != nil || len(res.Conflicts) != 1 || res.Conflicts[0].Path != "/users/100/name" {
		t.Fatalf("conflicts %+v err %v", res, err)
	}
	c := res.Conflicts[0]
	if b, o, th := mustJSON(t, f, c.Base), mustJSON(t, f, c.Ours), mustJSON(t, f, c.Theirs); b != `"user-100"` || o != `"ours"` || th != `"theirs"` {
		t.Fatalf("conflict sides %s / %s / %s", b, o, th)
	}
	if !strings.Contains(c.String(), "changed on both sides") {
		t.Fatal(c.String())
	}
}

// TestMergeCostFollowsChange: inserts, deletes and edits on both sides of a 100,000-element array (which change
// its length, so the array merges by diff3) read a number of nodes that follows the changes, not the array.
func TestMergeCostFollowsChange(t *testing.T) {
	ctx := context.Background()
	f, _ := newForest(t)
	base := mustImport(t, f, string(userDoc(100_000)))
	var po, pt []string
	for i := 0; i < 10; i++ {
		po = append(po, fmt.Sprintf(`{"op":"replace","path":"/%d/name","value":"o%d"}`, 1000+i*9000, i))
		pt = append(pt, fmt.Sprintf(`{"op":"replace","path":"/%d/score","value":%d}`, 5000+i*9000, i))
	}
	po = append(po, `{"op":"add","path":"/-","value":{"id":-1}}`, `{"op":"remove","path":"/99990"}`)
	pt = append(pt, `{"op":"add","path":"/7","value":{"id":-2}}`, `{"op":"add","path":"/-","value":{"id":-3}}`)
	ours := mustPatch(t, f, base, "["+strings.Join(po, ",")+"]")
	theirs := mustPatch(t, f, base, "["+strings.Join(pt, ",")+"]")
	res, err := f.Merge(ctx, base, ours, theirs, nil)
	if err != nil || len(res.Conflicts) > 0 {
		t.Fatalf("%v %+v", err, res)
	}
	want := mustPatch(t, f, ours, "["+strings.Join(pt, ",")+"]")
	if _, err := f.Save(ctx, res.Change); err != nil {
		t.Fatal(err)
	}
	if res.Change.Root != want {
		t.Fatalf("merged %s", mustJSON(t, f, res.Change.Root)[:200])
	}
	// 24 changes; a path from the root to a leaf is 3 nodes here. Reading the whole array would take ~1,300.
	if res.NodeReads > 24*3*6 {
		t.Fatalf("%d node reads for 24 changes", res.NodeReads)
	}
	t.Logf("%d node reads", res.NodeReads)
}

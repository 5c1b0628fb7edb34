package revision

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"
)

func TestDiffOneChangeInLargeArrayVisitsFewNodes(t *testing.T) {
	ctx := context.Background()
	f, _ := newForest(t)
	a := mustImport(t, f, string(userDoc(100000)))
	b := mustPatch(t, f, a, `[{"op":"replace","path":"/77777/score","value":1234}]`)
	d := checkDiffRoundTrip(t, f, a, b)
	if len(d.Operations) != 1 {
		t.Fatalf("want one operation, got %s", opsString(d))
	}
	op := d.Operations[0]
	if op.Op != "replace" || op.Path != "/77777/score" || string(op.Value) != "1234" || string(op.OldValue) != "77" {
		t.Fatalf("got %+v", op)
	}
	if d.Visited > 12 {
		t.Fatalf("diff of one change read %d nodes; it should read a handful", d.Visited)
	}
	if d.Counts != (Counts{Replaced: 1}) {
		t.Fatalf("counts %+v", d.Counts)
	}

	// An insertion and two removals are reported as such, not as a rewrite of the tail.
	c := mustPatch(t, f, a, `[{"op":"add","path":"/5","value":{"id":-1}},{"op":"remove","path":"/50000"},{"op":"remove","path":"/50000"}]`)
	d = checkDiffRoundTrip(t, f, a, c)
	if d.Counts != (Counts{Added: 1, Removed: 2}) {
		t.Fatalf("counts %+v: %s", d.Counts, opsString(d))
	}
	if d.Visited > 30 {
		t.Fatalf("diff read %d nodes", d.Visited)
	}
	// The removed elements carry their old values.
	var old map[string]any
	if err := json.Unmarshal(d.Operations[1].OldValue, &old); err != nil || old["id"] != float64(49999) {
		t.Fatalf("old value of the first removal: %s (%v)", d.Operations[1].OldValue, err)
	}
	_ = ctx
}

func TestDiffScatteredChanges(t *testing.T) {
	f, _ := newForest(t)
	a := mustImport(t, f, string(userDoc(50000)))
	rng := rand.New(rand.NewSource(1))
	var ops []map[string]any
	for i := 0; i < 200; i++ {
		ops = append(ops, map[string]any{"op": "replace", "path": fmt.Sprintf("/%d/name", rng.Intn(50000)), "value": fmt.Sprint("renamed-", i)})
	}
	for i := 0; i < 20; i++ {
		ops = append(ops, map[string]any{"op": "add", "path": fmt.Sprintf("/%d", rng.Intn(49000)), "value": map[string]any{"id": -i}})
		ops = append(ops, map[string]any{"op": "remove", "path": fmt.Sprintf("/%d", rng.Intn(49000))})
	}
	patch, _ := json.Marshal(ops)
	b := mustPatch(t, f, a, string(patch))
	d := checkDiffRoundTrip(t, f, a, b)
	if n := len(d.Operations); n < 200 || n > 260 {
		t.Fatalf("%d operations for 240 changes: %s", n, opsString(d))
	}
	if d.Visited > 2000 {
		t.Fatalf("diff read %d nodes for 240 scattered changes", d.Visited)
	}
}

func TestDiffShapes(t *testing.T) {
	f, _ := newForest(t)
	cases := []struct{ a, b string }{
		{`{"a":1}`, `{"a":1}`},
		{`{"a":1}`, `{"b":1}`},
		{`1`, `"x"`},
		{`[]`, `[1,2,3]`},
		{`[1,2,3]`, `[]`},
		{`{"a":[1,2,3]}`, `{"a":[3,2,1]}`},
		{`{"a":{"b":{"c":1.0}}}`, `{"a":{"b":{"c":1}}}`},
		{`{"n":12345678901234567891}`, `{"n":12345678901234567892}`},
	}
	big := string(userDoc(3000))
	cases = append(cases, struct{ a, b string }{big, `[]`}, struct{ a, b string }{`{"x":1}`, big},
		struct{ a, b string }{`{"k":` + big + `}`, `{"renamed":` + big + `}`})
	for _, c := range cases {
		a, b := mustImport(t, f, c.a), mustImport(t, f, c.b)
		d := checkDiffRoundTrip(t, f, a, b)
		if c.a == `{"k":`+big+`}` && d.Counts != (Counts{Moved: 1}) {
			t.Fatalf("a renamed member should be one move: %s", opsString(d))
		}
	}
	// Two unrelated large arrays: over the work cap the diff still round-trips.
	a := mustImport(t, f, string(userDoc(4000)))
	var other []any
	for i := 0; i < 4000; i++ {
		other = append(other, i)
	}
	ob, _ := json.Marshal(other)
	d, err := f.Diff(context.Background(), a, mustImport(t, f, string(ob)), &DiffOptions{MaxWork: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if d.Counts.Replaced+d.Counts.Added+d.Counts.Removed == 0 {
		t.Fatal("no operations")
	}
	d, err = f.Diff(context.Background(), a, mustImport(t, f, string(ob)), &DiffOptions{MaxOps: 10})
	if err != nil || !d.Truncated || len(d.Operations) != 10 {
		t.Fatalf("MaxOps: truncated=%v ops=%d err=%v", d.Truncated, len(d.Operations), err)
	}
}

// A small container that refers to large subtrees must be diffed by walking them, not by materialising them.
func TestDiffSmallContainerOverLargeSubtrees(t *testing.T) {
	f, _ := newForest(t)
	big := string(userDoc(20000))
	a := mustImport(t, f, `[`+big+`,`+big+`]`)
	b := mustPatch(t, f, a, `[{"op":"replace","path":"/1/19999/score","value":0}]`)
	if a.IsTree() {
		t.Fatal("the outer array should be inline")
	}
	d := checkDiffRoundTrip(t, f, a, b)
	if len(d.Operations) != 1 || d.Operations[0].Path != "/1/19999/score" || d.Visited > 12 {
		t.Fatalf("visited %d: %s", d.Visited, opsString(d))
	}
	o := mustImport(t, f, `{"x":`+big+`,"y":1}`)
	o2 := mustPatch(t, f, o, `[{"op":"replace","path":"/x/5/name","value":"n"}]`)
	if d := checkDiffRoundTrip(t, f, o, o2); len(d.Operations) != 1 || d.Visited > 12 {
		t.Fatalf("visited %d: %s", d.Visited, opsString(d))
	}
}

// Removing one element of a small array and appending another is a remove and an add, not a rewrite of every
// position in between.
func TestDiffSmallArrayAlignsElements(t *testing.T) {
	f, _ := newForest(t)
	a := mustImport(t, f, `[{"id":1},{"id":2},{"id":3},{"id":4},{"id":5},{"id":6}]`)
	b := mustImport(t, f, `[{"id":1},{"id":3},{"id":4},{"id":5},{"id":6},{"id":7}]`)
	d := checkDiffRoundTrip(t, f, a, b)
	if len(d.Operations) > 2 {
		t.Fatalf("want a remove and an add, got %s", opsString(d))
	}
}

package revision

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// B1: both sides append, one appends more: the common part is duplicated.
func TestBothAppendPrefixDuplicates(t *testing.T) {
	runMergeCases(t, []mergeCase{
		{name: "prefix", base: `[0]`, ours: `[0,1]`, theirs: `[0,1,2]`, want: `[0,1,2]`},
		{name: "same move, one also appends", base: `["a","b"]`, ours: `["b","a"]`, theirs: `["b","a","c"]`, want: `["b","a","c"]`},
	})
}

// B2: both insert x at the front; ours also removed a (its diff: a replaced by x): x is duplicated.
func TestEdgeInsertDuplicates(t *testing.T) {
	runMergeCases(t, []mergeCase{
		{name: "front", base: `["a","b"]`, ours: `["x","b"]`, theirs: `["x","a","b"]`, conflicts: []string{"/0"}},
		{name: "back", base: `["a","b"]`, ours: `["a","x"]`, theirs: `["a","b","x"]`, conflicts: []string{"/1"}},
		{name: "another insert at the edge stays clean", base: `["a","b"]`, ours: `["x","b"]`, theirs: `["y","a","b"]`, want: `["y","x","b"]`},
	})
}

// B3: settling a run conflict lost (or repeated) a keyed element the other side moved. Now such resolutions make
// the array one conflict at its own path (resolving an element inside it is refused, naming that path), and a
// resolution of the whole array takes that side's array.
func TestResolveLosesMovedElement(t *testing.T) {
	ctx := context.Background()
	f, _ := newForest(t)
	for _, c := range []struct {
		base, ours, theirs string
		resolve            map[string]string
	}{
		{`[{"id":1},{"id":2},{"id":3}]`, `[{"id":3},{"id":9},{"id":1},{"id":2}]`, `[{"id":9},{"id":1},{"id":2},{"id":3}]`, map[string]string{"/0": Theirs}},
		{`[{"id":1},{"id":2},{"id":3},{"id":4}]`, `[{"id":3},{"id":9},{"id":1},{"id":2}]`, `[{"id":9},{"id":1},{"id":2},{"id":3}]`, map[string]string{"/0": Ours, "/2": Theirs}},
	} {
		b, o, th := mustImport(t, f, c.base), mustImport(t, f, c.ours), mustImport(t, f, c.theirs)
		res, err := f.Merge(ctx, b, o, th, &MergeOptions{Resolve: c.resolve})
		if err == nil {
			if res.Change == nil {
				t.Fatalf("resolve %v: %+v", c.resolve, res)
			}
			f.Save(ctx, res.Change)
			if got := mustJSON(t, f, res.Change.Root); strings.Count(got, `{"id":3}`) != 1 {
				t.Errorf("resolve %v: %s has id 3 %d times", c.resolve, got, strings.Count(got, `{"id":3}`))
			}
			continue
		}
		if !strings.Contains(err.Error(), `conflicts are at ""`) {
			t.Fatalf("resolve %v: %v, want the array to be settled whole", c.resolve, err)
		}
		whole, err := f.Merge(ctx, b, o, th, &MergeOptions{Resolve: map[string]string{"": Theirs}})
		if err != nil || whole.Change == nil {
			t.Fatalf("resolve the whole array: %v %+v", err, whole)
		}
		f.Save(ctx, whole.Change)
		if got := mustJSON(t, f, whole.Change.Root); got != canonical(t, []byte(c.theirs)) {
			t.Errorf("the whole array by theirs: %s, want %s", got, c.theirs)
		}
	}
}

// B4: the conflicts reported depend on which side is ours.
func TestKeyedConflictsAsymmetric(t *testing.T) {
	ctx := context.Background()
	f, _ := newForest(t)
	b := mustImport(t, f, `[{"id":2},{"id":3}]`)
	o := mustImport(t, f, `[{"id":3},{"id":2},{"id":9}]`)
	th := mustImport(t, f, `[{"id":9},{"id":3},{"id":2}]`)
	r1, _ := f.Merge(ctx, b, o, th, nil)
	r2, _ := f.Merge(ctx, b, th, o, nil)
	if fmt.Sprint(conflictPaths(r1.Conflicts)) != fmt.Sprint(conflictPaths(r2.Conflicts)) {
		t.Fatalf("merge(b,o,t) %v\nmerge(b,t,o) %v", r1.Conflicts, r2.Conflicts)
	}
}

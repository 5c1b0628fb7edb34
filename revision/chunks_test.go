package revision

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/strata-db/strata/store"
)

// walkChunks reads every chunk of array v and returns its elements in order, the leaves' hashes, and the number
// of inner nodes.
func walkChunks(t *testing.T, f *Forest, v Value) (elems []string, leaves []store.Hash, inner int) {
	t.Helper()
	ctx := context.Background()
	root, err := ArrayChunk(v)
	if err != nil {
		t.Fatal(err)
	}
	var walk func(cs []Chunk)
	walk = func(cs []Chunk) {
		cc, err := f.ReadChunks(ctx, cs)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range cc {
			if c.Children != nil {
				inner++
				walk(c.Children)
				continue
			}
			leaves = append(leaves, cs[i].Hash)
			for _, e := range c.Elements {
				elems = append(elems, mustJSON(t, f, e))
			}
		}
	}
	walk([]Chunk{root})
	return elems, leaves, inner
}

// TestReadChunks: the chunks of an array hold its elements in order; a one-element change makes one new leaf and
// keeps every other leaf's hash; an inline array is one chunk.
func TestReadChunks(t *testing.T) {
	f, _ := newForest(t)
	var b strings.Builder
	b.WriteString("[")
	for i := range 3000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"i":%d,"s":"%s"}`, i, strings.Repeat("x", i%7))
	}
	b.WriteString("]")
	v := mustImport(t, f, b.String())
	elems, leaves, inner := walkChunks(t, f, v)
	if got := "[" + strings.Join(elems, ",") + "]"; got != mustJSON(t, f, v) {
		t.Fatalf("the chunks' elements are not the array's")
	}
	if len(leaves) < 10 || inner == 0 {
		t.Fatalf("%d leaves, %d inner nodes: the array should be a tree of several levels", len(leaves), inner)
	}
	v2 := mustPatch(t, f, v, `[{"op":"replace","path":"/1500/i","value":-1}]`)
	elems2, leaves2, _ := walkChunks(t, f, v2)
	if elems2[1500] != `{"i":-1,"s":"xx"}` || len(elems2) != 3000 {
		t.Fatalf("after the change: %s", elems2[1500])
	}
	old := map[store.Hash]bool{}
	for _, h := range leaves {
		old[h] = true
	}
	fresh := 0
	for _, h := range leaves2 {
		if !old[h] {
			fresh++
		}
	}
	if fresh < 1 || fresh > 2 {
		t.Errorf("%d new leaves after one element changed, want 1 (2 if a boundary moved)", fresh)
	}

	small := mustImport(t, f, `[1,"a",{"b":[2]}]`)
	elems, leaves, inner = walkChunks(t, f, small)
	if !reflect.DeepEqual(elems, []string{"1", `"a"`, `{"b":[2]}`}) || len(leaves) != 1 || inner != 0 || leaves[0] != small.Hash() {
		t.Errorf("inline array: %v %v %d", elems, leaves, inner)
	}
	if _, err := ArrayChunk(mustImport(t, f, `{"a":1}`)); !errors.Is(err, ErrInvalidPath) {
		t.Errorf("an object: %v", err)
	}
	// A chunk whose count does not match its node is corruption, not a silent short read.
	root, _ := ArrayChunk(v)
	root.Count++
	if _, err := f.ReadChunks(context.Background(), []Chunk{root}); !errors.Is(err, store.ErrCorruptNode) {
		t.Errorf("a wrong count: %v", err)
	}
}

// TestMaterializeMembers: only the named members are materialised, whole; objects held as trees and values that
// are not objects work too.
func TestMaterializeMembers(t *testing.T) {
	f, _ := newForest(t)
	ctx := context.Background()
	big := `{"a":1,"b":[1,2,3],"c":"` + strings.Repeat("y", 5000) + `","d":{"e":null},"z":1.50}`
	for _, doc := range []string{`{"a":1,"b":[1,2,3],"d":{"e":null},"z":1.50}`, big} {
		v := mustImport(t, f, doc)
		got, err := f.MaterializeMembers(ctx, v, []string{"b", "missing", "z"})
		if err != nil {
			t.Fatal(err)
		}
		m := got.(map[string]any)
		if len(m) != 2 || fmt.Sprint(m["b"]) != "[1 2 3]" || fmt.Sprint(m["z"]) != "1.50" {
			t.Errorf("%.40s: %v", doc, m)
		}
		x, found, err := f.MaterializeMember(ctx, v, "d")
		if err != nil || !found || fmt.Sprint(x) != "map[e:<nil>]" {
			t.Errorf("%.40s: member d: %v %v %v", doc, x, found, err)
		}
		if _, found, err := f.MaterializeMember(ctx, v, "c0"); found || err != nil {
			t.Errorf("%.40s: a missing member: %v %v", doc, found, err)
		}
		if x, found, _ := f.MaterializeMember(ctx, v, "a"); !found || x != 1 {
			t.Errorf("%.40s: member a: %v", doc, x)
		}
	}
	x, err := f.MaterializeMembers(ctx, mustImport(t, f, `[1,2]`), []string{"a"})
	if err != nil || fmt.Sprint(x) != "[1 2]" {
		t.Errorf("an array is materialised whole: %v %v", x, err)
	}
	if _, _, err := f.MaterializeMember(ctx, mustImport(t, f, `[1]`), "a"); !errors.Is(err, ErrInvalidPath) {
		t.Errorf("member of an array: %v", err)
	}
}

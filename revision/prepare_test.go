package revision

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/strata-db/strata/store"
)

// A write on a forest WithPrepare hands its nodes to the prepare function while it builds them, and its change is
// exactly the change it makes without one: the same root and nodes, each once, with the data the function was given
// (so that what it filled in reaches the store).
func TestWithPrepareHandsOverBatchesAndChangesNothing(t *testing.T) {
	ctx := context.Background()
	f, _ := newForest(t)
	root := mustImport(t, f, `{"name":"doc"}`)
	var b strings.Builder
	b.WriteByte('[')
	for i := range 100000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"id":` + strconv.Itoa(i) + `,"email":"user` + strconv.Itoa(i) + `@example.com","active":true}`)
	}
	b.WriteByte(']')
	ops := []Operation{{Op: "add", Path: "/items", Value: []byte(b.String()), HasValue: true}}

	plain, err := f.Patch(ctx, root, ops)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		batches int
		given   = map[store.Hash]*byte{} // the first byte of each node's data as handed over
	)
	pf := f.WithPrepare(func(ns []store.Node) {
		mu.Lock()
		defer mu.Unlock()
		batches++
		for _, n := range ns {
			if store.HashOf(n.Data) != n.Hash {
				t.Errorf("node %s handed over with data that does not hash to it", n.Hash.Short())
			}
			given[n.Hash] = &n.Data[0]
		}
	})
	prepared, err := pf.Patch(ctx, root, ops)
	if err != nil {
		t.Fatal(err)
	}
	if prepared.Root != plain.Root {
		t.Fatal("the root differs with a prepare function")
	}
	hashes := func(ns []store.Node) []store.Hash {
		var hs []store.Hash
		for _, n := range ns {
			hs = append(hs, n.Hash)
		}
		slices.SortFunc(hs, func(a, b store.Hash) int { return strings.Compare(string(a[:]), string(b[:])) })
		return hs
	}
	if !slices.Equal(hashes(prepared.Nodes), hashes(plain.Nodes)) {
		t.Fatalf("%d nodes with a prepare function, %d without: not the same set", len(prepared.Nodes), len(plain.Nodes))
	}
	if len(slices.Compact(hashes(prepared.Nodes))) != len(prepared.Nodes) {
		t.Fatal("a node appears twice in the change")
	}
	mu.Lock()
	handed := batches
	mu.Unlock()
	if handed < 2 {
		t.Fatalf("%d batches handed over for %d nodes; want several, during the build", batches, len(prepared.Nodes))
	}
	reused := 0
	for _, n := range prepared.Nodes {
		if p, ok := given[n.Hash]; ok {
			if p != &n.Data[0] {
				t.Fatalf("node %s: the change has a copy of its data, not the node the prepare function was given", n.Hash.Short())
			}
			reused++
		}
	}
	if reused == 0 {
		t.Fatal("no node of the change was one handed over")
	}
	t.Logf("%d nodes, %d handed over in %d batches", len(prepared.Nodes), reused, handed)

	// A point edit's few nodes are never handed over: they are prepared with the rest of its change.
	if _, err := pf.Patch(ctx, prepared.Root, []Operation{{Op: "replace", Path: "/name", Value: []byte(`"x"`), HasValue: true}}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if batches != handed {
		t.Fatalf("a point edit handed over %d batches", batches-handed)
	}
}

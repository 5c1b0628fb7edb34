package revision

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/strata-db/strata/revision/internal/codec"
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

// markingStore records, for each node a write puts, whether it came marked incompressible.
type markingStore struct {
	*store.Mem
	mu     sync.Mutex
	marked map[store.Hash]bool
}

func (m *markingStore) PutNodes(ctx context.Context, ns []store.Node) (store.PutStats, error) {
	m.mu.Lock()
	for _, n := range ns {
		m.marked[n.Hash] = n.Incompressible
	}
	m.mu.Unlock()
	return m.Mem.PutNodes(ctx, ns)
}

// Every node a write hands to a store is marked incompressible exactly when it is a node of hashes (an array's or a
// long string's inner node), so that the store tries no codec on those and still tries one on everything else: on
// an import, on a point edit of it, and on a write whose nodes go through a prepare function.
func TestNodesOfHashesAreMarkedIncompressible(t *testing.T) {
	ctx := context.Background()
	ms := &markingStore{Mem: store.NewMem(), marked: map[store.Hash]bool{}}
	f := New(ms, nil)
	items := func(prefix string, n int) string {
		var b strings.Builder
		b.WriteByte('[')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"id":` + strconv.Itoa(i) + `,"name":"` + prefix + strconv.Itoa(i) + `"}`)
		}
		return b.String() + "]"
	}
	doc := `{"long":"` + strings.Repeat("a fragment of a long string, ", 4000) + `","items":` + items("user-", 20000) + `}`
	check := func(what string, ns []store.Node, marked func(store.Node) bool) {
		t.Helper()
		kinds := map[byte]int{}
		for _, n := range ns {
			want := n.Data[0] == codec.NodeArrInner || n.Data[0] == codec.NodeStrInner
			if marked(n) != want {
				t.Errorf("%s: node of kind %d marked incompressible: %v, want %v", what, n.Data[0], marked(n), want)
			}
			kinds[n.Data[0]]++
		}
		for _, k := range []byte{codec.NodeArrInner, codec.NodeArrLeaf} {
			if kinds[k] == 0 {
				t.Errorf("%s: no node of kind %d among %d (kinds %v): the test does not cover it", what, k, len(ns), kinds)
			}
		}
	}
	root, _, err := f.ImportBytes(ctx, []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	hs := slices.Collect(maps.Keys(ms.marked))
	data, err := ms.GetNodes(ctx, hs)
	if err != nil {
		t.Fatal(err)
	}
	var all []store.Node
	for i, h := range hs {
		all = append(all, store.Node{Hash: h, Data: data[i]})
	}
	check("import", all, func(n store.Node) bool { return ms.marked[n.Hash] })
	if !slices.ContainsFunc(all, func(n store.Node) bool { return n.Data[0] == codec.NodeStrInner }) {
		t.Error("import: no inner node of a long string: the test does not cover it")
	}

	ops := []Operation{{Op: "replace", Path: "/items/10000/name", Value: []byte(`"changed"`), HasValue: true}}
	ch, err := f.Patch(ctx, root, ops)
	if err != nil {
		t.Fatal(err)
	}
	check("point edit", ch.Nodes, func(n store.Node) bool { return n.Incompressible })

	var (
		mu     sync.Mutex
		handed []store.Node
	)
	pf := f.WithPrepare(func(ns []store.Node) {
		mu.Lock()
		defer mu.Unlock()
		handed = append(handed, ns...)
	})
	// More than a batch (prepareBatchBytes) of new nodes, so that some are handed over during the build.
	ch, err = pf.Patch(ctx, root, []Operation{{Op: "add", Path: "/copy", Value: []byte(items("copy-", 60000)), HasValue: true}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	check("prepared batches", handed, func(n store.Node) bool { return n.Incompressible })
	mu.Unlock()
	check("prepared change", ch.Nodes, func(n store.Node) bool { return n.Incompressible })
}

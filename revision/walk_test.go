package revision

import (
	"context"
	"errors"
	"testing"

	"github.com/strata-db/strata/store"
)

func TestWalkVisitsEveryNodeOnce(t *testing.T) {
	ctx := context.Background()
	f, ms := newForest(t)
	v := mustImport(t, f, `{"users":`+string(userDoc(20000))+`}`)
	seen := map[store.Hash]bool{}
	skip := func(h store.Hash) bool { return seen[h] }
	if err := f.Walk(ctx, v, skip, func(nv NodeVisit) error {
		if seen[nv.Hash] {
			t.Fatalf("node %s visited twice", nv.Hash.Short())
		}
		seen[nv.Hash] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != ms.Len() {
		t.Fatalf("walk saw %d nodes, the store holds %d", len(seen), ms.Len())
	}
	// A second root sharing almost everything: only the new nodes are visited.
	w := mustPatch(t, f, v, `[{"op":"replace","path":"/users/777/name","value":"x"}]`)
	n := 0
	if err := f.Walk(ctx, w, skip, func(nv NodeVisit) error { n++; seen[nv.Hash] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if n == 0 || n > 5 {
		t.Fatalf("second walk visited %d nodes", n)
	}
	// A damaged node is reported by a walk without a cache.
	users, err := f.Get(ctx, w, MustPointer("/users"))
	if err != nil || !users.IsTree() {
		t.Fatalf("users: %v", err)
	}
	ms.Corrupt(users.Hash(), []byte{1, 2, 3})
	cold := New(ms, &Options{CacheBytes: -1})
	err = cold.Walk(ctx, w, func(store.Hash) bool { return false }, func(NodeVisit) error { return nil })
	if !errors.Is(err, store.ErrCorruptNode) {
		t.Fatalf("got %v", err)
	}
}

package revision

import (
	"context"
	"testing"

	"github.com/strata-db/strata/store"
)

// TestNodeCacheStats: a read of nodes not yet decoded misses the shared cache, the same read again hits it, and the
// counts are the cache's, across every forest that shares it.
func TestNodeCacheStats(t *testing.T) {
	ms := store.NewMem()
	build := New(ms, nil)
	root := mustImport(t, build, `{"users":`+string(userDoc(2000))+`}`)

	cache := NewNodeCache(64 << 20)
	ctx := context.Background()
	read := func() {
		f := New(ms, &Options{Cache: cache}) // a forest of its own, the cache shared
		if _, err := f.Get(ctx, root, MustPointer("/users/1777/name")); err != nil {
			t.Fatal(err)
		}
	}
	read()
	first := cache.Stats()
	if first.Misses == 0 || first.Hits != 0 || first.Entries == 0 || first.Bytes <= 0 || first.MaxBytes != 64<<20 {
		t.Fatalf("after a cold read: %+v; want misses, no hits, entries held", first)
	}
	read()
	second := cache.Stats()
	if second.Misses != first.Misses || second.Hits != first.Misses {
		t.Fatalf("after the same read again: %+v; want %d hits (the nodes of the first read) and no new miss", second, first.Misses)
	}
}

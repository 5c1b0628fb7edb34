package snapshots

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/strata-db/strata/internal/workload"
	"github.com/strata-db/strata/revision"
)

// TestCacheBudgetAcrossDatabases: the databases of a directory share one cache of decoded nodes, so that a server's
// memory is bounded by one budget however many databases are created and read (each used to have a cache of its
// own, 256 MiB by default: six databases grew a server past 1 GiB).
func TestCacheBudgetAcrossDatabases(t *testing.T) {
	if testing.Short() {
		t.Skip("reads four 10 MB documents three times")
	}
	const budget = 8 << 20
	// What the heap grows by without any cache (the databases themselves), then with one budget, then with a cache
	// per database, as it was (the control).
	none := cacheGrowth(t, &DirOptions{CacheBytes: -1})
	shared := cacheGrowth(t, &DirOptions{CacheBytes: budget}) - none
	each := cacheGrowth(t, &DirOptions{DB: Options{Forest: &revision.Options{CacheBytes: 256 << 20}}}) - none
	t.Logf("four 10 MB databases read whole: caches took %.1f MiB with one %d MiB budget, %.1f MiB with one cache per database (the databases themselves %.1f MiB)",
		float64(shared)/(1<<20), budget>>20, float64(each)/(1<<20), float64(none)/(1<<20))
	if shared > budget+3<<20 {
		t.Errorf("the caches took %.1f MiB, over the %d MiB budget plus 3 MiB", float64(shared)/(1<<20), budget>>20)
	}
	if each < 3*budget {
		t.Errorf("the control took only %.1f MiB: the test no longer tells one budget from one per database", float64(each)/(1<<20))
	}
}

// cacheGrowth is how much the heap grows while four databases, each with a 10 MB document of its own, are created and
// read whole through a directory opened with opts.
func cacheGrowth(t *testing.T, opts *DirOptions) int64 {
	ctx := context.Background()
	dir, err := OpenDir(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	doc := workload.JSON(100_000)
	base := heap()
	for i := 0; i < 4; i++ {
		db, err := dir.Create(ctx, fmt.Sprintf("db%d", i), "tester")
		if err != nil {
			t.Fatal(err)
		}
		own := bytes.ReplaceAll(doc, []byte(`"user-`), []byte(fmt.Sprintf(`"u%d-`, i))) // no node shared between them
		if _, err := db.Put(ctx, "users", own, WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		v, _, err := db.Get(ctx, Ref{}, "users", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Forest().JSON(ctx, v); err != nil { // every node of the document goes through the cache
			t.Fatal(err)
		}
	}
	grown := int64(heap()) - int64(base)
	runtime.KeepAlive(dir)
	return grown
}

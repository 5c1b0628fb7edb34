package snapshots

import (
	"bytes"
	"context"
	"runtime"
	"testing"

	"github.com/strata-db/strata/internal/workload"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// TestWriteReleasesItsInput: once a write is answered, nothing of the database keeps its input (the writer used to
// keep the last group's requests until the next write came, so a server with many databases held the last document
// written to each, a 100 MB transform's output included).
func TestWriteReleasesItsInput(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, store.NewMemBackend(), &Options{Forest: &revision.Options{CacheBytes: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	doc := workload.JSON(50_000)
	own := bytes.Clone(doc)
	if _, err := db.Put(ctx, "users", own, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	freed := make(chan struct{})
	runtime.AddCleanup(&own[0], func(chan struct{}) { close(freed) }, freed)
	own = nil
	for i := 0; i < 5; i++ {
		heap()
		select {
		case <-freed:
			return
		default:
		}
	}
	t.Fatalf("the %d bytes of a put are still reachable after it was answered", len(doc))
}

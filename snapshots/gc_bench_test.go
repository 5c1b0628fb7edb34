package snapshots

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/workload"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// BenchmarkGCMark measures garbage collection over a database holding a 100,000-element document and 20 revisions
// of it, with nothing to remove: the cost is marking (walking every kept tree once) and listing the nodes. It
// reports marked nodes per second.
//
//	go test -run='^$' -bench=BenchmarkGCMark -benchtime=5x ./snapshots/
func BenchmarkGCMark(b *testing.B) {
	ctx := context.Background()
	be, err := store.OpenBolt(filepath.Join(b.TempDir(), "gc.strata"), nil)
	if err != nil {
		b.Fatal(err)
	}
	db, err := Open(ctx, be, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Put(ctx, "users", workload.JSON(100_000), WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		patch := fmt.Sprintf(`[{"op":"replace","path":"/%d/score","value":-1}]`, i*4999)
		ops, _ := parsePatch(patch)
		if _, err := db.Patch(ctx, "users", ops, WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	var rep *GCReport
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if rep, err = db.GC(ctx, &GCOptions{Grace: time.Hour}); err != nil {
			b.Fatal(err)
		}
		if rep.RemovedNodes != 0 {
			b.Fatalf("removed %d nodes from a database with nothing to collect", rep.RemovedNodes)
		}
	}
	b.ReportMetric(float64(rep.MarkedNodes), "nodes")
	b.ReportMetric(float64(rep.MarkedNodes)*float64(b.N)/time.Since(start).Seconds(), "nodes/s")
}

func parsePatch(s string) ([]revision.Operation, error) { return revision.ParsePatch([]byte(s)) }

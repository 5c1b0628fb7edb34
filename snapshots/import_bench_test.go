package snapshots

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/strata-db/strata/internal/workload"
	"github.com/strata-db/strata/store"
)

// BenchmarkImportStream measures the streaming import (DB.Import) of docs/benchmarks.md's workload into a fresh bbolt file,
// the way strata import does it (the Shared backend of a data directory), as JSON and as JSON Lines: MB/s of input,
// every batch and the commit durable. n = 1,000,000 (110 MB of JSON) is skipped under -short. Run:
//
//	go test -run='^$' -bench=ImportStream -benchtime=3x ./snapshots/
func BenchmarkImportStream(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		for _, lines := range []bool{false, true} {
			name := fmt.Sprintf("json/n=%d", n)
			var doc []byte
			if lines {
				name = fmt.Sprintf("jsonl/n=%d", n)
			}
			b.Run(name, func(b *testing.B) {
				if n >= 1_000_000 && testing.Short() {
					b.Skip("1M elements (110 MB of JSON) under -short")
				}
				if doc == nil {
					if lines {
						doc = workloadLines(n)
					} else {
						doc = workload.JSON(n)
					}
				}
				b.SetBytes(int64(len(doc)))
				b.ReportAllocs()
				loadEach(b, func(db *DB) error {
					_, err := db.Import(context.Background(), "users", bytes.NewReader(doc), ImportOptions{Lines: lines}, WriteOptions{})
					return err
				})
			})
		}
	}
}

// BenchmarkPut measures row (a) as `strata bench` loads: a Put of docs/benchmarks.md's workload into a fresh bbolt
// file (the Shared backend of a data directory), MB/s of JSON, durable. "import" is a Put as it is built from
// putImportBytes up (putImport), "overlay" the same Put built in the write's overlay. Run:
//
//	go test -run='^$' -bench='Put/' -benchtime=5x ./snapshots/
func BenchmarkPut(b *testing.B) {
	for _, n := range []int{10_000, 40_000, 100_000, 1_000_000} {
		doc := workload.JSON(n)
		for _, way := range []string{"import", "overlay"} {
			b.Run(fmt.Sprintf("%s/n=%d", way, n), func(b *testing.B) {
				if n >= 1_000_000 && testing.Short() {
					b.Skip("1M elements (104 MB of JSON) under -short")
				}
				defer func(n int) { putImportBytes = n }(putImportBytes)
				if putImportBytes = 0; way == "overlay" {
					putImportBytes = 1 << 40
				}
				b.SetBytes(int64(len(doc)))
				loadEach(b, func(db *DB) error {
					_, err := db.Put(context.Background(), "users", doc, WriteOptions{})
					return err
				})
			})
		}
	}
}

// loadEach times load once per iteration, each on a fresh bbolt file (the Shared backend of a data directory),
// opening and closing it outside the timer.
func loadEach(b *testing.B, load func(*DB) error) {
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		be, err := store.OpenShared(filepath.Join(b.TempDir(), fmt.Sprintf("load-%d%s", i, Ext)), nil)
		if err != nil {
			b.Fatal(err)
		}
		db, err := Open(context.Background(), be, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := load(db); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		db.Close()
		b.StartTimer()
	}
}

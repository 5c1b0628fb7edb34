package revision

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
)

// BenchmarkDiff measures the diff of k changed fields between two revisions of the workload document; its cost must
// follow k, not the document's size (docs/benchmarks.md (f)). nodes/op is how many nodes the diff read.
//
//	go test -run='^$' -bench=BenchmarkDiff -benchtime=50x ./revision/
func BenchmarkDiff(b *testing.B) {
	for _, k := range []int{1, 50} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			forSizes(b, func(b *testing.B, fx *benchFixture) {
				ctx := context.Background()
				f, root := fx.WarmTree(b)
				rng := rand.New(rand.NewSource(int64(k)))
				ops := make([]Operation, k)
				for i := range ops {
					ops[i] = Operation{Op: "replace", Path: fmt.Sprintf("/%d/score", rng.Intn(fx.n)), Value: []byte("-1"), HasValue: true}
				}
				c, err := f.Patch(ctx, root, ops)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.Save(ctx, c); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				visited := 0
				for i := 0; i < b.N; i++ {
					d, err := f.Diff(ctx, root, c.Root, nil)
					if err != nil {
						b.Fatal(err)
					}
					if d.Counts.Replaced == 0 {
						b.Fatal("no change found")
					}
					visited = d.Visited
				}
				b.ReportMetric(float64(visited), "nodes/op")
			})
		})
	}
}

package revision

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"testing"
)

// BenchmarkMerge measures the three-way merge of two sides that each made k changes to the workload document (an
// array of n objects keyed by id): per side, 80% member edits, 10% inserts and 10% deletes, at distinct places, so
// that the array's length moves and it merges by diff3. Its cost must follow k, not n: node-reads/op is how many
// nodes the merge read (each a lookup in the forest's own new nodes, the cache or the store).
//
//	go test -run='^$' -bench=BenchmarkMerge -benchtime=20x ./revision/
func BenchmarkMerge(b *testing.B) {
	const k = 50
	forSizes(b, func(b *testing.B, fx *benchFixture) {
		ctx := context.Background()
		f, base := fx.Tree(b)
		po, pt := concurrentEdits(fx.n, k, 1)
		side := func(ops []Operation) Value {
			c, err := f.Patch(ctx, base, ops)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.Save(ctx, c); err != nil {
				b.Fatal(err)
			}
			return c.Root
		}
		ours, theirs := side(po), side(pt)
		b.ResetTimer()
		var res *MergeResult
		for i := 0; i < b.N; i++ {
			var err error
			if res, err = f.Merge(ctx, base, ours, theirs, nil); err != nil {
				b.Fatal(err)
			}
			if res.Change == nil {
				b.Fatalf("conflicts %v", res.Conflicts)
			}
		}
		b.StopTimer()
		if res.Change.Root.Len() != uint64(fx.n) {
			b.Fatalf("merged %d elements, want %d", res.Change.Root.Len(), fx.n)
		}
		b.ReportMetric(float64(res.NodeReads), "node-reads/op")
		b.ReportMetric(float64(len(res.Change.Nodes)), "new-nodes/op")
	})
}

// concurrentEdits returns two JSON Patches of k changes each to the workload document of n elements, at places
// at least three elements apart from each other's: 80% member edits, 10% inserts (of elements with new ids) and 10%
// deletes. Each patch's operations run from the last index to the first, so that every index is the base's.
func concurrentEdits(n, k int, seed int64) (ours, theirs []Operation) {
	rng := rand.New(rand.NewSource(seed))
	taken := map[int]bool{}
	var at []int
	for len(at) < 2*k {
		i := 1 + rng.Intn(n-2)
		if taken[i-2] || taken[i-1] || taken[i] || taken[i+1] || taken[i+2] {
			continue
		}
		taken[i] = true
		at = append(at, i)
	}
	next := 10_000_000
	mk := func(idx []int) []Operation {
		sort.Sort(sort.Reverse(sort.IntSlice(idx)))
		var ops []Operation
		for j, i := range idx {
			switch {
			case j%10 == 3:
				next++
				ops = append(ops, Operation{Op: "add", Path: fmt.Sprintf("/%d", i), Value: fmt.Appendf(nil, `{"id":%d,"name":"new"}`, next), HasValue: true})
			case j%10 == 7:
				ops = append(ops, Operation{Op: "remove", Path: fmt.Sprintf("/%d", i)})
			case j%2 == 0:
				ops = append(ops, Operation{Op: "replace", Path: fmt.Sprintf("/%d/score", i), Value: []byte("-1"), HasValue: true})
			default:
				ops = append(ops, Operation{Op: "replace", Path: fmt.Sprintf("/%d/name", i), Value: []byte(`"edited"`), HasValue: true})
			}
		}
		return ops
	}
	return mk(at[:k]), mk(at[k:])
}

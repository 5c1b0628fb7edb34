package snapshots

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/strata-db/strata/revision"
)

// BenchmarkPromote measures promoting a branch that made 50 changes to docs/benchmarks.md's document (an array of n objects,
// on bbolt) into main, which made 50 changes of its own since the branch left it: a three-way merge committed as a
// revision with two parents. Each side's changes are 80% member edits, 10% inserts and 10% deletes at distinct
// places, so the array's length moves and it merges by diff3. The cost must follow the changes, not n:
// node-reads/op is how many nodes the merge read, new-nodes/op how many it wrote; commit-50-ms is, for scale, what main's own commit of its 50
// changes (one patch) took.
//
//	go test -run='^$' -bench=BenchmarkPromote -benchtime=20x ./snapshots/
func BenchmarkPromote(b *testing.B) {
	const k = 50
	forWorkload(b, func(b *testing.B, n int, s *storageState) {
		ctx := context.Background()
		reads, written := 0, 0
		var patchTime time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			branch := fmt.Sprint("agent-", i)
			if _, err := s.db.CreateBranch(ctx, branch, Ref{}, ""); err != nil {
				b.Fatal(err)
			}
			ours, theirs := promoteEdits(n, k, uint64(i), 10_000_000+2*k*i)
			if _, err := s.db.Patch(ctx, "users", theirs, WriteOptions{Branch: branch}); err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			if _, err := s.db.Patch(ctx, "users", ours, WriteOptions{}); err != nil {
				b.Fatal(err)
			}
			patchTime += time.Since(t0)
			b.StartTimer()
			p, err := s.db.Promote(ctx, branch, "", WriteOptions{})
			if err != nil {
				b.Fatalf("%v %v", err, p.Conflicts)
			}
			if p.FastForward {
				b.Fatal("a fast-forward: nothing merged")
			}
			reads, written = p.NodeReads, p.NewNodes
		}
		b.StopTimer()
		v, _, err := s.db.Get(ctx, Ref{}, "users", nil)
		if err != nil || v.Len() != uint64(n) {
			b.Fatalf("main has %d elements, want %d (%v)", v.Len(), n, err)
		}
		b.ReportMetric(float64(reads), "node-reads/op")
		b.ReportMetric(float64(written), "new-nodes/op")
		b.ReportMetric(float64(patchTime.Microseconds())/1000/float64(b.N), "commit-50-ms")
	})
}

// promoteEdits returns two patches of k changes each to an array of n workload elements, at places at least three
// elements apart from each other's: 80% member edits, 10% inserts (new ids from nextID) and 10% deletes, from the
// last index to the first so that every index is the base's.
func promoteEdits(n, k int, seed uint64, nextID int) (ours, theirs []revision.Operation) {
	r := rand.New(rand.NewPCG(seed, 17))
	taken := map[int]bool{}
	var at []int
	for len(at) < 2*k {
		i := 1 + r.IntN(n-2)
		if taken[i-2] || taken[i-1] || taken[i] || taken[i+1] || taken[i+2] {
			continue
		}
		taken[i] = true
		at = append(at, i)
	}
	mk := func(idx []int) []revision.Operation {
		sort.Sort(sort.Reverse(sort.IntSlice(idx)))
		var ops []revision.Operation
		for j, i := range idx {
			switch {
			case j%10 == 3:
				nextID++
				ops = append(ops, revision.Operation{Op: "add", Path: fmt.Sprintf("/%d", i), Value: fmt.Appendf(nil, `{"id":%d,"name":"new"}`, nextID), HasValue: true})
			case j%10 == 7:
				ops = append(ops, revision.Operation{Op: "remove", Path: fmt.Sprintf("/%d", i)})
			case j%2 == 0:
				ops = append(ops, revision.Operation{Op: "add", Path: fmt.Sprintf("/%d/score", i), Value: []byte("-1"), HasValue: true})
			default:
				ops = append(ops, revision.Operation{Op: "add", Path: fmt.Sprintf("/%d/name", i), Value: []byte(`"edited"`), HasValue: true})
			}
		}
		return ops
	}
	return mk(at[:k]), mk(at[k:])
}

package snapshots

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/store"
)

// TestCheckDuringGC: a garbage collection that runs while strata check walks the revisions (another process's, or
// a server's) removes revisions and a branch check has already read: check must not report the healthy database
// as damaged (found in review: "revision 2: node … missing from store"). It still reports real damage.
func TestCheckDuringGC(t *testing.T) {
	ctx := context.Background()
	db, clk := openTest(t, store.NewMemBackend())
	must(db.CreateBranch(ctx, "tmp", Ref{}, ""))
	var b strings.Builder
	b.WriteString("[")
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&b, `{"i":%d,"pad":"%040d"},`, i, i)
	}
	b.WriteString("0]")
	must(db.Put(ctx, "doc", []byte(b.String()), WriteOptions{Branch: "tmp"}))
	must(db.CreateBranch(ctx, "tmp2", Ref{Branch: "tmp"}, ""))
	must(db.Put(ctx, "other", []byte(`{}`), WriteOptions{}))
	clk.mu.Lock()
	clk.t = clk.t.Add(3 * time.Hour)
	clk.mu.Unlock()
	must(db.DeleteBranch(ctx, "tmp"))
	rep := must(db.Check(ctx, func(done, total uint64) {
		if done == 1 {
			must(db.DeleteBranch(ctx, "tmp2"))
			clk.mu.Lock()
			clk.t = clk.t.Add(3 * time.Hour)
			clk.mu.Unlock()
			must(db.GC(ctx, nil))
		}
	}))
	if len(rep.Problems) != 0 {
		t.Fatalf("a healthy database reported damaged: %v", rep.Problems)
	}
}

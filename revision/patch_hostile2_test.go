package revision

import (
	"context"
	"strings"
	"testing"

	"github.com/strata-db/strata/internal/heapwatch"
)

// TestLongPatchMemoryBounded: a patch of 5,000 appends to one array (190 KB of operations, far under the 4 MiB
// of one request) keeps the memory of its change, not of every intermediate version. (Found in review: each
// operation's new leaf and path stayed in the write's overlay until the end: 5,000 appends held 420 MB, 10,000
// 1.1 GB; the 100,000 that fit in one request would exhaust the server.) The result is the same either way.
func TestLongPatchMemoryBounded(t *testing.T) {
	const n = 5000
	f, _ := newForest(t)
	root := mustImport(t, f, `{"a":[],"b":{}}`)
	var b strings.Builder
	b.WriteString("[")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"op":"add","path":"/a/-","value":1}`)
	}
	b.WriteString(`,{"op":"add","path":"/b/x","value":[1,2,3]},{"op":"copy","from":"/b","path":"/c"}]`)
	ops, err := ParsePatch([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	stop := heapwatch.Start()
	c, err := f.Patch(context.Background(), root, ops)
	grew, _ := stop()
	if err != nil {
		t.Fatal(err)
	}
	if grew > 150<<20 {
		t.Errorf("a patch of %d appends grew the heap by %d MB", n, grew>>20)
	}
	if _, err := f.Save(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	want := `{"a":[1` + strings.Repeat(`,1`, n-1) + `],"b":{"x":[1,2,3]},"c":{"x":[1,2,3]}}`
	if got := mustJSON(t, f, c.Root); got != want {
		t.Fatalf("result: %.200s", got)
	}
}

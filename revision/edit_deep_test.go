package revision

import (
	"context"
	"runtime"
	"strings"
	"testing"
)

// A point write at depth d formats every ancestor's pointer (editChild's parent, for error messages it may never
// give): O(d²·len(key)) bytes. 500 levels of 2,000-byte keys: ~250 MB allocated for one replace.
func TestPatchDeepLongKeys(t *testing.T) {
	f, _ := newForest(t)
	k := strings.Repeat("k", 2000)
	depth := 500
	doc := strings.Repeat(`{"`+k+`":`, depth) + "1" + strings.Repeat("}", depth)
	root := mustImport(t, f, doc)
	ops := []Operation{{Op: "replace", Path: strings.Repeat("/"+k, depth), Value: []byte("2"), HasValue: true}}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	if _, err := f.Patch(context.Background(), root, ops); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&m1)
	mb := (m1.TotalAlloc - m0.TotalAlloc) >> 20
	t.Logf("one replace %d levels deep under %d-byte keys allocated %d MB", depth, len(k), mb)
	if mb > 60 {
		t.Errorf("one replace in a %d KB document allocated %d MB", len(doc)>>10, mb)
	}
}

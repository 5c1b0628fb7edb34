package revision

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// copiesPatch is a patch of n copies of /r into itself: 2^n members in a handful of shared nodes.
func copiesPatch(t *testing.T, n int) []Operation {
	t.Helper()
	var ops []string
	for i := 0; i < n; i++ {
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/r","path":"/r/c%d"}`, i))
	}
	patch, err := ParsePatch([]byte("[" + strings.Join(ops, ",") + "]"))
	if err != nil {
		t.Fatal(err)
	}
	return patch
}

// TestCopyAmplificationPatch: copy doubles a value in O(1), its nodes shared (8b48818 says so, and bounds what
// a query reads whole), so one patch of 40 small copy operations makes a value of 2^40 members. The patch must cost
// what its nodes cost, not what the value would be as JSON: the depth check of a copy into a deeper path
// (checkDepth → depthAtMost) walked every member of the copied value, shared nodes again and again, without looking
// at the context, so this patch (40 operations, 1 KB: snapshots.DB.Patch, the MCP patch tool) ran for hours inside
// the database's single writer, and no other write committed meanwhile.
func TestCopyAmplificationPatch(t *testing.T) {
	f, _ := newForest(t)
	root := mustImport(t, f, `{"r":{"a":"x"}}`)
	patch := copiesPatch(t, 40)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // once fixed, a walk that still ran would stop
	done := make(chan error, 1)
	go func() {
		_, err := f.Patch(ctx, root, patch)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("patch of 40 copies: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a patch of 40 copy operations still runs after 5 s: the depth check walks the shared nodes of every copy again")
	}
}

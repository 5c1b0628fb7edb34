package revision

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// checkDiffRoundTrip asserts that applying diff(a, b) to a gives exactly b, and that the counts match the operations.
func checkDiffRoundTrip(t testing.TB, f *Forest, a, b Value) *DiffResult {
	t.Helper()
	ctx := context.Background()
	d, err := f.Diff(ctx, a, b, nil)
	if err != nil {
		t.Fatalf("diff: %v", err)
	}
	var c Counts
	for _, op := range d.Operations {
		switch op.Op {
		case "add":
			c.Added++
		case "remove":
			c.Removed++
			if op.OldValue == nil {
				t.Fatalf("remove without old_value: %+v", op)
			}
		case "replace":
			c.Replaced++
			if op.OldValue == nil {
				t.Fatalf("replace without old_value: %+v", op)
			}
		case "move":
			c.Moved++
		default:
			t.Fatalf("unexpected op %q in diff", op.Op)
		}
	}
	if c != d.Counts {
		t.Fatalf("counts %+v do not match operations %+v", d.Counts, c)
	}
	if (a == b) != (len(d.Operations) == 0) {
		t.Fatalf("diff of %s values gave %d operations", map[bool]string{true: "equal", false: "different"}[a == b], len(d.Operations))
	}
	got, _, err := f.Apply(ctx, a, d.Patch())
	if err != nil {
		t.Fatalf("applying the diff: %v\nops: %+v", err, d.Operations)
	}
	if got != b {
		t.Fatalf("apply(a, diff(a, b)) != b\n a=%.300s\n b=%.300s\n got=%.300s\nops=%s", mustJSON(t, f, a), mustJSON(t, f, b), mustJSON(t, f, got), opsString(d))
	}
	return d
}

func opsString(d *DiffResult) string {
	s := ""
	for i, op := range d.Operations {
		if i > 20 {
			return s + "…"
		}
		s += op.Op + " " + op.From + " " + op.Path + " " + string(op.Value) + "; "
	}
	return s
}

// TestDiffSmallArraysExhaustive: every pair of arrays of up to four elements drawn from 0, 1 and 2, at the root and
// inside an object, diffs to operations that turn one into the other (found in review: jsondiff's factorized LCS
// emitted moves whose indexes did not match the order they apply in, for [0,1] to [1,2,0] among others).
func TestDiffSmallArraysExhaustive(t *testing.T) {
	var arrays []string
	var gen func(prefix []string)
	gen = func(prefix []string) {
		arrays = append(arrays, "["+strings.Join(prefix, ",")+"]")
		if len(prefix) == 4 {
			return
		}
		for _, v := range []string{"0", "1", "2"} {
			gen(append(slices.Clone(prefix), v))
		}
	}
	gen(nil)
	f, _ := newForest(t)
	ctx := context.Background()
	vals := map[string]Value{}
	for _, a := range arrays {
		for _, doc := range []string{a, `{"x":` + a + `}`} {
			v, _, err := f.ImportBytes(ctx, []byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			vals[doc] = v
		}
	}
	for _, a := range arrays {
		for _, b := range arrays {
			checkDiffRoundTrip(t, f, vals[a], vals[b])
			checkDiffRoundTrip(t, f, vals[`{"x":`+a+`}`], vals[`{"x":`+b+`}`])
		}
	}
}

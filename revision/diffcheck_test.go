package revision

import (
	"context"
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

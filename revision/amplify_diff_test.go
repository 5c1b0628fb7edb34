package revision

import (
	"context"
	"encoding/json"
	"testing"
)

// TestCopyAmplificationDiff: the diff of a value amplified by copies (40 copies, 2^40 members in a handful of
// nodes) against the value before, with the value bound every front end sets, stands the huge added values as
// markers read from their nodes (it wrote every copied member out, and never finished: found in review), and tells
// two different values apart by their content hash.
func TestCopyAmplificationDiff(t *testing.T) {
	f, _ := newForest(t)
	root := mustImport(t, f, `{"r":{"a":"x"}}`)
	after, _, err := f.Apply(context.Background(), root, copiesPatch(t, 40))
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.Diff(context.Background(), root, after, &DiffOptions{MaxOps: 1000, MaxValueBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if d.Counts.Added != 40 || len(d.Operations) != 40 {
		t.Fatalf("counts %+v, %d operations", d.Counts, len(d.Operations))
	}
	hashes := map[string]bool{}
	for _, op := range d.Operations {
		var m struct {
			Elided string `json:"$elided"`
			Bytes  uint64 `json:"bytes"`
			Hash   string `json:"hash"`
		}
		if len(op.Value) > 1<<20 {
			t.Fatalf("%s: a value of %d bytes written out", op.Path, len(op.Value))
		}
		if err := json.Unmarshal(op.Value, &m); err != nil {
			t.Fatal(err)
		}
		if m.Elided == "object" {
			if m.Bytes <= 1<<20 || m.Hash == "" {
				t.Fatalf("%s: marker %s", op.Path, op.Value)
			}
			hashes[m.Hash] = true
		}
	}
	if len(hashes) < 20 {
		t.Fatalf("%d distinct hashes among the markers of different values", len(hashes))
	}
	// Without the bound the values are written out whole, as before, for a diff of ordinary size.
	small := mustPatch(t, f, root, `[{"op":"add","path":"/r/b","value":[1,2]}]`)
	if d, err := f.Diff(context.Background(), root, small, nil); err != nil || string(d.Operations[0].Value) != "[1,2]" {
		t.Fatalf("unbounded diff: %+v %v", d, err)
	}
}

package revision

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"

	"github.com/strata-db/strata/internal/workload"
)

// userDoc builds the docs/benchmarks.md workload: an array of n small objects.
func userDoc(n int) []byte { return workload.JSON(n) }

// model is the trivial reference: the document as plain Go values.
type model struct{ v any }

func (m *model) json(t testing.TB) []byte {
	b, err := json.Marshal(m.v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestModelRandomEdits applies thousands of random edits to large documents, both through Strata's trees and to a
// plain in-memory model. After every edit the tree must read back as the model, and must be the very same value
// (same root) as the model's document imported from scratch: chunk boundaries depend only on content.
func TestModelRandomEdits(t *testing.T) {
	seed := rand.Int63()
	t.Logf("seed %d (rerun with STRATA_SEED)", seed)
	if s := envSeed(); s != 0 {
		seed = s
	}
	rng := rand.New(rand.NewSource(seed))
	ctx := context.Background()
	sizes := []int{0, 3, 40, 2000, 20000}
	steps := 400
	if testing.Short() {
		steps = 100
	}
	for _, n := range sizes {
		t.Run(fmt.Sprintf("array-%d", n), func(t *testing.T) {
			f, _ := newForest(t)
			var m model
			if err := json.Unmarshal(userDoc(n), &m.v); err != nil {
				t.Fatal(err)
			}
			root := mustImport(t, f, string(userDoc(n)))
			for step := 0; step < steps; step++ {
				patch := randomArrayEdit(rng, &m)
				ops, err := ParsePatch(patch)
				if err != nil {
					t.Fatal(err)
				}
				next, _, err := f.Apply(ctx, root, ops)
				if err != nil {
					t.Fatalf("step %d %s: %v", step, patch, err)
				}
				checkDiffRoundTrip(t, f, root, next)
				root = next
				if step%25 == 0 || step == steps-1 {
					want := m.json(t)
					if got := mustJSON(t, f, root); got != canonical(t, want) {
						t.Fatalf("step %d (%s): tree and model differ", step, patch)
					}
					if fresh := mustImport(t, f, string(want)); fresh != root {
						t.Fatalf("step %d (%s): edited tree is not the canonical tree of its content", step, patch)
					}
				}
			}
		})
	}
	t.Run("object", func(t *testing.T) {
		f, _ := newForest(t)
		obj := map[string]any{}
		for i := 0; i < 5000; i++ {
			obj[fmt.Sprintf("key-%05d", i*7)] = map[string]any{"v": i, "s": fmt.Sprint("value ", i)}
		}
		m := model{obj}
		root := mustImport(t, f, string(m.json(t)))
		for step := 0; step < steps; step++ {
			k := fmt.Sprintf("key-%05d", rng.Intn(40000))
			var patch string
			_, exists := obj[k]
			switch {
			case exists && rng.Intn(2) == 0:
				delete(obj, k)
				patch = fmt.Sprintf(`[{"op":"remove","path":"/%s"}]`, k)
			case exists:
				obj[k].(map[string]any)["v"] = float64(step)
				patch = fmt.Sprintf(`[{"op":"add","path":"/%s/v","value":%d}]`, k, step)
			default:
				obj[k] = map[string]any{"new": float64(step)}
				patch = fmt.Sprintf(`[{"op":"add","path":"/%s","value":{"new":%d}}]`, k, step)
			}
			next := mustPatch(t, f, root, patch)
			checkDiffRoundTrip(t, f, root, next)
			root = next
			if step%50 == 0 || step == steps-1 {
				want := m.json(t)
				if got := mustJSON(t, f, root); got != canonical(t, want) {
					t.Fatalf("step %d (%s): tree and model differ", step, patch)
				}
				if fresh := mustImport(t, f, string(want)); fresh != root {
					t.Fatalf("step %d: edited tree is not canonical", step)
				}
			}
		}
	})
}

func randomArrayEdit(rng *rand.Rand, m *model) []byte {
	arr := m.v.([]any)
	n := len(arr)
	elem := func() any {
		return map[string]any{"id": float64(rng.Intn(1e6)), "name": fmt.Sprint("new-", rng.Intn(1e6)), "tags": []any{"x"}}
	}
	var op map[string]any
	switch r := rng.Intn(10); {
	case n == 0 || r < 3:
		i := rng.Intn(n + 1)
		e := elem()
		path := fmt.Sprint("/", i)
		if i == n && rng.Intn(2) == 0 {
			path = "/-"
		}
		arr = append(arr[:i], append([]any{e}, arr[i:]...)...)
		op = map[string]any{"op": "add", "path": path, "value": e}
	case r < 5:
		i := rng.Intn(n)
		arr = append(arr[:i], arr[i+1:]...)
		op = map[string]any{"op": "remove", "path": fmt.Sprint("/", i)}
	case r < 6:
		i := rng.Intn(n)
		e := elem()
		arr[i] = e
		op = map[string]any{"op": "replace", "path": fmt.Sprint("/", i), "value": e}
	case r < 7 && n > 1:
		i, j := rng.Intn(n), rng.Intn(n-1)
		v := arr[i]
		arr = append(arr[:i], arr[i+1:]...)
		arr = append(arr[:j], append([]any{v}, arr[j:]...)...)
		op = map[string]any{"op": "move", "from": fmt.Sprint("/", i), "path": fmt.Sprint("/", j)}
	default:
		i := rng.Intn(n)
		obj, ok := arr[i].(map[string]any)
		if !ok {
			return []byte(`[]`)
		}
		s := float64(rng.Intn(1000))
		obj["score"] = s
		op = map[string]any{"op": "add", "path": fmt.Sprintf("/%d/score", i), "value": s}
	}
	m.v = arr
	b, _ := json.Marshal([]any{op})
	return b
}

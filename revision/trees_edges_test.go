package revision

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// --- generators of edge shapes -------------------------------------------------------------------------------

var reviewRunes = []string{"a", "b", "z", "é", "日", "😀", "\n", "\"", "\\", "\x01", " ", "~", "/"}

func reviewStr(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		if rng.Intn(4) == 0 {
			b.WriteString(reviewRunes[rng.Intn(len(reviewRunes))])
		} else {
			b.WriteByte(byte('a' + rng.Intn(26)))
		}
	}
	return b.String()
}

// reviewLen draws a length from a spread that crosses every threshold: inline string (4 KiB), leaf (1..16 KiB).
func reviewLen(rng *rand.Rand) int {
	switch rng.Intn(8) {
	case 0:
		return rng.Intn(8)
	case 1, 2:
		return rng.Intn(64)
	case 3:
		return 4090 + rng.Intn(12) // around maxInlineS
	case 4:
		return 1000 + rng.Intn(50) // around maxInline
	case 5:
		return 16370 + rng.Intn(30) // around maxChunk
	case 6:
		return rng.Intn(40000)
	}
	return rng.Intn(300)
}

func reviewNumber(rng *rand.Rand) json.Number {
	switch rng.Intn(6) {
	case 0:
		return json.Number(fmt.Sprint(rng.Int63() - rng.Int63()))
	case 1:
		return json.Number("1.5e300")
	case 2:
		return json.Number("-0")
	case 3:
		// thousands of digits
		var b strings.Builder
		b.WriteByte(byte('1' + rng.Intn(9)))
		n := rng.Intn(20000)
		if depth := 0; rng.Intn(3) != 0 {
			n = rng.Intn(2000) + depth
		}
		for i := 0; i < n; i++ {
			b.WriteByte(byte('0' + rng.Intn(10)))
		}
		if rng.Intn(2) == 0 {
			b.WriteString(".5")
		}
		return json.Number(b.String())
	case 4:
		return json.Number("9223372036854775808") // just past int64
	}
	return json.Number(fmt.Sprint(rng.Intn(100)))
}

func reviewVal(rng *rand.Rand, depth int) any {
	r := rng.Intn(10)
	if depth > 3 && r >= 7 {
		r = rng.Intn(7)
	}
	switch r {
	case 0:
		return nil
	case 1:
		return rng.Intn(2) == 0
	case 2, 3:
		return reviewNumber(rng)
	case 4, 5, 6:
		if depth > 1 {
			return reviewStr(rng, rng.Intn(100))
		}
		return reviewStr(rng, reviewLen(rng))
	case 7:
		m := map[string]any{}
		n := rng.Intn(6)
		if depth <= 1 && rng.Intn(30) == 0 {
			n = 200 + rng.Intn(300)
		}
		for i := 0; i < n; i++ {
			k := reviewStr(rng, rng.Intn(12))
			if rng.Intn(30) == 0 {
				k = reviewStr(rng, 17000+rng.Intn(4000)) // a key longer than a node
			}
			m[k] = reviewVal(rng, depth+1)
		}
		return m
	default:
		n := rng.Intn(6)
		if depth <= 1 && rng.Intn(30) == 0 {
			n = 200 + rng.Intn(300)
		}
		a := make([]any, n)
		for i := range a {
			a[i] = reviewVal(rng, depth+1)
		}
		return a
	}
}

func reviewMarshal(t testing.TB, v any) string {
	t.Helper()
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimRight(buf.String(), "\n")
}

func reviewDecode(t testing.TB, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %.200s: %v", b, err)
	}
	return v
}

func reviewClone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = reviewClone(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = reviewClone(e)
		}
		return a
	}
	return v
}

func escTok(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1") }

// reviewDoc is {"obj": {many keys}, "arr": [many elements]}.
func reviewDoc(rng *rand.Rand, nKeys, nElems int) map[string]any {
	obj := map[string]any{}
	for i := 0; i < nKeys; i++ {
		k := fmt.Sprintf("k%06d", rng.Intn(1_000_000))
		if rng.Intn(200) == 0 {
			k += reviewStr(rng, 17000+rng.Intn(3000))
		}
		var v any
		if rng.Intn(12) == 0 {
			v = reviewVal(rng, 1)
		} else {
			v = rng.Intn(1000)
		}
		obj[k] = v
	}
	arr := make([]any, nElems)
	for i := range arr {
		if rng.Intn(12) == 0 {
			arr[i] = reviewVal(rng, 1)
		} else {
			arr[i] = fmt.Sprint("e", i)
		}
	}
	return map[string]any{"obj": obj, "arr": arr}
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// reviewEdit makes one random edit of the model and returns the patch that makes it.
func reviewEdit(t testing.TB, rng *rand.Rand, doc map[string]any) string {
	obj := doc["obj"].(map[string]any)
	arr := doc["arr"].([]any)
	var op map[string]any
	switch r := rng.Intn(9); r {
	case 0: // add a key
		k := fmt.Sprintf("k%06d", rng.Intn(1_000_000))
		if rng.Intn(20) == 0 {
			k += reviewStr(rng, 17000+rng.Intn(3000))
		}
		v := reviewVal(rng, 1)
		obj[k] = v
		op = map[string]any{"op": "add", "path": "/obj/" + escTok(k), "value": v}
	case 1: // remove a key
		ks := sortedKeys(obj)
		if len(ks) == 0 {
			return "[]"
		}
		k := ks[rng.Intn(len(ks))]
		delete(obj, k)
		op = map[string]any{"op": "remove", "path": "/obj/" + escTok(k)}
	case 2: // replace a value with a much larger or smaller one
		ks := sortedKeys(obj)
		if len(ks) == 0 {
			return "[]"
		}
		k := ks[rng.Intn(len(ks))]
		var v any = 1
		if rng.Intn(2) == 0 {
			v = reviewStr(rng, 20000+rng.Intn(20000))
		}
		obj[k] = v
		op = map[string]any{"op": "replace", "path": "/obj/" + escTok(k), "value": v}
	case 3: // rename (move a key, which may sort into another chunk)
		ks := sortedKeys(obj)
		if len(ks) == 0 {
			return "[]"
		}
		k := ks[rng.Intn(len(ks))]
		nk := fmt.Sprintf("k%06d", rng.Intn(1_000_000))
		if nk == k {
			return "[]"
		}
		obj[nk] = obj[k]
		delete(obj, k)
		op = map[string]any{"op": "move", "from": "/obj/" + escTok(k), "path": "/obj/" + escTok(nk)}
	case 4: // insert an element
		i := rng.Intn(len(arr) + 1)
		v := reviewVal(rng, 1)
		arr = append(arr[:i], append([]any{v}, arr[i:]...)...)
		op = map[string]any{"op": "add", "path": fmt.Sprint("/arr/", i), "value": v}
	case 5: // remove an element
		if len(arr) == 0 {
			return "[]"
		}
		i := rng.Intn(len(arr))
		arr = append(arr[:i], arr[i+1:]...)
		op = map[string]any{"op": "remove", "path": fmt.Sprint("/arr/", i)}
	case 6: // replace an element with a much larger / smaller one
		if len(arr) == 0 {
			return "[]"
		}
		i := rng.Intn(len(arr))
		var v any = reviewNumber(rng)
		if rng.Intn(2) == 0 {
			v = []any{reviewStr(rng, 3000), reviewStr(rng, 3000)}
		}
		arr[i] = v
		op = map[string]any{"op": "replace", "path": fmt.Sprint("/arr/", i), "value": v}
	case 7: // move an element
		if len(arr) < 2 {
			return "[]"
		}
		i, j := rng.Intn(len(arr)), rng.Intn(len(arr)-1)
		v := arr[i]
		arr = append(arr[:i], arr[i+1:]...)
		arr = append(arr[:j], append([]any{v}, arr[j:]...)...)
		op = map[string]any{"op": "move", "from": fmt.Sprint("/arr/", i), "path": fmt.Sprint("/arr/", j)}
	case 8: // copy a member into the array
		ks := sortedKeys(obj)
		if len(ks) == 0 {
			return "[]"
		}
		k := ks[rng.Intn(len(ks))]
		i := rng.Intn(len(arr) + 1)
		arr = append(arr[:i], append([]any{reviewClone(obj[k])}, arr[i:]...)...)
		op = map[string]any{"op": "copy", "from": "/obj/" + escTok(k), "path": fmt.Sprint("/arr/", i)}
	}
	doc["arr"] = arr
	return "[" + reviewMarshal(t, op) + "]"
}

// TestTreesRandomEdgeShapes is a differential test of import, export, point reads, paging, patch, diff and
// canonical form on documents with long strings, long keys, huge numbers, big objects and big arrays.
func TestTreesRandomEdgeShapes(t *testing.T) {
	seed := int64(20240611)
	if s := envSeed(); s != 0 {
		seed = s
	}
	rng := rand.New(rand.NewSource(seed))
	ctx := context.Background()
	f, _ := newForest(t)
	doc := reviewDoc(rng, 800, 800)
	text := reviewMarshal(t, doc)
	root := mustImport(t, f, text)
	if got := mustJSON(t, f, root); got != text {
		t.Fatalf("round trip differs (%d vs %d bytes)", len(got), len(text))
	}
	for step := 0; step < 120; step++ {
		patch := reviewEdit(t, rng, doc)
		next := mustPatch(t, f, root, patch)
		want := reviewMarshal(t, doc)
		got := mustJSON(t, f, next)
		if got != want {
			t.Fatalf("step %d %.300s: tree and model differ", step, patch)
		}
		if fresh := mustImport(t, f, want); fresh != next {
			t.Fatalf("step %d %.300s: edited tree is not the canonical tree of its content", step, patch)
		}
		if step%5 == 0 {
			checkDiffRoundTrip(t, f, root, next)
		}
		// point reads at every key of the object and a sample of elements
		if step%10 == 0 {
			obj := doc["obj"].(map[string]any)
			for _, k := range sortedKeys(obj) {
				v, err := f.Get(ctx, next, Pointer{"obj", k})
				if err != nil {
					t.Fatalf("get %q: %v", k, err)
				}
				b := mustJSON(t, f, v)
				if b != reviewMarshal(t, obj[k]) {
					t.Fatalf("step %d: get /obj/%.40q differs", step, k)
				}
			}
			arr := doc["arr"].([]any)
			for i := range arr {
				v, err := f.Get(ctx, next, Pointer{"arr", fmt.Sprint(i)})
				if err != nil {
					t.Fatalf("get %d: %v", i, err)
				}
				if b := mustJSON(t, f, v); b != reviewMarshal(t, arr[i]) {
					t.Fatalf("step %d: get /arr/%d differs", step, i)
				}
			}
			// paging over both with a small window
			for _, name := range []string{"obj", "arr"} {
				var off uint64
				var collected []any
				keys := map[string]any{}
				for pages := 0; ; pages++ {
					res, err := f.Read(ctx, next, Pointer{name}, ReadOptions{Offset: off, Limit: uint64(1 + rng.Intn(97))})
					if err != nil {
						t.Fatal(err)
					}
					page := reviewDecode(t, res.JSON)
					switch p := page.(type) {
					case []any:
						collected = append(collected, p...)
					case map[string]any:
						for k, v := range p {
							if _, dup := keys[k]; dup {
								t.Fatalf("key %q on two pages", k)
							}
							keys[k] = v
						}
					}
					if !res.HasNext {
						break
					}
					off = res.Next
				}
				var all any = collected
				if name == "obj" {
					all = keys
				}
				if !reflect.DeepEqual(all, reviewDecode(t, []byte(reviewMarshal(t, doc[name])))) {
					t.Fatalf("step %d: paging over /%s does not give it back", step, name)
				}
			}
		}
		root = next
	}
}

// reviewRegionEdit edits the model's object only among keys in [lo, hi), and its array only within its first
// region elements (front) or its last region elements (!front). It returns the patch and the region's new length.
func reviewRegionEdit(t testing.TB, rng *rand.Rand, doc map[string]any, lo, hi string, front bool, region int) (string, int) {
	obj := doc["obj"].(map[string]any)
	arr := doc["arr"].([]any)
	var op map[string]any
	newKey := func() string {
		for {
			k := fmt.Sprintf("k%06d", rng.Intn(1_000_000))
			if rng.Intn(15) == 0 {
				k += reviewStr(rng, 17000) // a key longer than a node
			}
			if k >= lo && k < hi {
				return k
			}
		}
	}
	var inRange []string
	for _, k := range sortedKeys(obj) {
		if k >= lo && k < hi {
			inRange = append(inRange, k)
		}
	}
	at := func(j int) int { // the array index of the region's position j (0 <= j <= region)
		if front {
			return j
		}
		return len(arr) - region + j
	}
	switch r := rng.Intn(6); {
	case r == 0 || len(inRange) == 0:
		k := newKey()
		v := reviewVal(rng, 1)
		obj[k] = v
		op = map[string]any{"op": "add", "path": "/obj/" + escTok(k), "value": v}
	case r == 1:
		k := inRange[rng.Intn(len(inRange))]
		delete(obj, k)
		op = map[string]any{"op": "remove", "path": "/obj/" + escTok(k)}
	case r == 2:
		k := inRange[rng.Intn(len(inRange))]
		v := reviewVal(rng, 1)
		obj[k] = v
		op = map[string]any{"op": "replace", "path": "/obj/" + escTok(k), "value": v}
	case r == 3 || region == 0:
		i := at(rng.Intn(region + 1))
		v := reviewVal(rng, 1)
		arr = append(arr[:i], append([]any{v}, arr[i:]...)...)
		op = map[string]any{"op": "add", "path": fmt.Sprint("/arr/", i), "value": v}
		region++
	case r == 4:
		i := at(rng.Intn(region))
		arr = append(arr[:i], arr[i+1:]...)
		op = map[string]any{"op": "remove", "path": fmt.Sprint("/arr/", i)}
		region--
	default:
		i := at(rng.Intn(region))
		v := reviewVal(rng, 1)
		arr[i] = v
		op = map[string]any{"op": "replace", "path": fmt.Sprint("/arr/", i), "value": v}
	}
	doc["arr"] = arr
	return "[" + reviewMarshal(t, op) + "]", region
}

// TestTreesMergeDisjointRegions merges edits made in different chunks of one big object and one big array
// (long keys, long strings and huge numbers among them) and checks the result against a model's merge.
func TestTreesMergeDisjointRegions(t *testing.T) {
	seed := int64(7)
	if s := envSeed(); s != 0 {
		seed = s
	}
	rng := rand.New(rand.NewSource(seed))
	ctx := context.Background()
	f, _ := newForest(t)
	for round := 0; round < 4; round++ {
		base := reviewDoc(rng, 1500, 1500)
		for i := range base["arr"].([]any) { // unique elements, so that the alignment is unambiguous
			base["arr"].([]any)[i] = []any{fmt.Sprint("u", i), reviewVal(rng, 2)}
		}
		baseV := mustImport(t, f, reviewMarshal(t, base))
		ours, theirs := reviewClone(base).(map[string]any), reviewClone(base).(map[string]any)
		ov, tv := baseV, baseV
		oreg, treg := 300, 300
		for i := 0; i < 15; i++ {
			var p string
			p, oreg = reviewRegionEdit(t, rng, ours, "k", "k3", true, oreg)
			ov = mustPatch(t, f, ov, p)
			p, treg = reviewRegionEdit(t, rng, theirs, "k6", "l", false, treg)
			tv = mustPatch(t, f, tv, p)
		}
		// The model's merge: ours' keys below k3 and array front, base's middle, theirs' keys from k6 and array tail.
		obj := map[string]any{}
		for k, v := range base["obj"].(map[string]any) {
			if k >= "k3" && k < "k6" {
				obj[k] = v
			}
		}
		for k, v := range ours["obj"].(map[string]any) {
			if k < "k3" {
				obj[k] = v
			}
		}
		for k, v := range theirs["obj"].(map[string]any) {
			if k >= "k6" {
				obj[k] = v
			}
		}
		ba, oa, ta := base["arr"].([]any), ours["arr"].([]any), theirs["arr"].([]any)
		var arr []any
		arr = append(arr, oa[:oreg]...)
		arr = append(arr, ba[300:len(ba)-300]...)
		arr = append(arr, ta[len(ta)-treg:]...)
		want := map[string]any{"obj": obj, "arr": arr}
		res, err := f.Merge(ctx, baseV, ov, tv, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Conflicts) > 0 {
			t.Fatalf("round %d: %d conflicts, first %s: %s", round, len(res.Conflicts), res.Conflicts[0].Path, res.Conflicts[0].Reason)
		}
		if _, err := f.Save(ctx, res.Change); err != nil {
			t.Fatal(err)
		}
		wantText := reviewMarshal(t, want)
		if got := mustJSON(t, f, res.Change.Root); got != wantText {
			t.Fatalf("round %d: merged value differs from the model's", round)
		}
		if fresh := mustImport(t, f, wantText); fresh != res.Change.Root {
			t.Fatalf("round %d: merged tree is not canonical", round)
		}
		res2, err := f.Merge(ctx, baseV, tv, ov, nil)
		if err != nil || len(res2.Conflicts) > 0 || res2.Change.Root != res.Change.Root {
			t.Fatalf("round %d: merge is not symmetric (%v)", round, err)
		}
	}
}

// runBounded runs the test named name in a child process (so that a runaway build can be killed) and fails if it
// does not pass within the deadline.
func runBounded(t *testing.T, name string, body func(t *testing.T)) {
	if os.Getenv("STRATA_TREES_CHILD") == name {
		body(t)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+name+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), "STRATA_TREES_CHILD="+name, "GOMEMLIMIT=512MiB")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("did not finish within 4 s (killed); the build never terminates:\n%.2000s", out)
	}
	if err != nil {
		if len(out) > 3000 {
			out = out[len(out)-3000:]
		}
		t.Fatalf("child failed: %v\n…%s", err, out)
	}
}

// TestLongKeyObjectImport: an object whose smallest key is longer than a node (16 KiB) next to any other
// member. Each inner level then cuts the long key's entry into a node of its own, the level never shrinks to one
// node, and the builder adds levels until memory runs out.
func TestLongKeyObjectImport(t *testing.T) {
	runBounded(t, "TestLongKeyObjectImport", func(t *testing.T) {
		f, _ := newForest(t)
		doc := `{"` + strings.Repeat("a", 17000) + `":1,"b":2}`
		v := mustImport(t, f, doc)
		if got := mustJSON(t, f, v); got != doc {
			t.Fatalf("round trip differs")
		}
	})
}

// TestLongKeyObjectPatch: the same object reached by a patch (the edit path builds it too).
func TestLongKeyObjectPatch(t *testing.T) {
	runBounded(t, "TestLongKeyObjectPatch", func(t *testing.T) {
		f, _ := newForest(t)
		root := mustImport(t, f, `{"b":2}`)
		long := strings.Repeat("a", 17000)
		v := mustPatch(t, f, root, `[{"op":"add","path":"/`+long+`","value":1}]`)
		want := `{"` + long + `":1,"b":2}`
		if got := mustJSON(t, f, v); got != want {
			t.Fatalf("patched value differs")
		}
		if fresh := mustImport(t, f, want); fresh != v {
			t.Fatalf("patched tree is not canonical")
		}
	})
}

// TestModerateLongKeys: keys of 8 KiB (half a node) as the first of many members: each inner entry is large
// enough that the cut probability after a lone child is nearly 1, so the levels do not shrink either.
func TestModerateLongKeys(t *testing.T) {
	runBounded(t, "TestModerateLongKeys", func(t *testing.T) {
		f, _ := newForest(t)
		var b strings.Builder
		b.WriteString("{")
		for i := 0; i < 6; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`"` + string(rune('a'+i)) + strings.Repeat("x", 8000) + `":1`)
		}
		b.WriteString("}")
		doc := b.String()
		v := mustImport(t, f, doc)
		if got := mustJSON(t, f, v); got != doc {
			t.Fatalf("round trip differs")
		}
	})
}

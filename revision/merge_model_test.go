package revision

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestMergeModel: random documents (a config object, an array of objects keyed by id, an array of objects without
// a key, an array of strings), random concurrent edits on two sides (member edits, inserts, deletes), merged by
// Forest.Merge and by refMerge below, a plain reference over Go values that shares no code with the merge. Both
// must agree on the conflicts and, when there are none, on the result; then the conflicts are settled with random
// sides and they must agree again. And the properties: merge(base, a, a) = a, merge(base, base, b) = b,
// merge(base, a, base) = a, and in a merge without conflicts every change of either side is in the result.
func TestMergeModel(t *testing.T) {
	seed := rand.Int63()
	if s := envSeed(); s != 0 {
		seed = s
	}
	t.Logf("seed %d (rerun with STRATA_SEED)", seed)
	rng := rand.New(rand.NewSource(seed))
	ctx := context.Background()
	f, _ := newForest(t)
	rounds := 300
	if testing.Short() {
		rounds = 80
	}
	var merged, conflicted int
	for round := 0; round < rounds; round++ {
		g := &gen{rng: rng}
		base := g.doc()
		ours, theirs := g.edit(base, 1), g.edit(base, 2)
		var keys map[string]string
		switch rng.Intn(4) {
		case 0:
			keys = map[string]string{"/plain": "n"} // align the unkeyed objects by their unique n
		case 1:
			keys = map[string]string{"/keyed": ""} // and the keyed ones by position
		}
		vb, vo, vt := g.value(t, f, base), g.value(t, f, ours), g.value(t, f, theirs)
		what := fmt.Sprintf("round %d\nbase   %s\nours   %s\ntheirs %s\nkeys %v", round, js(base), js(ours), js(theirs), keys)

		// The properties that need no reference.
		for _, c := range []struct {
			name      string
			o, t      Value
			want      any
			wantValue Value
		}{{"merge(base,a,a)", vo, vo, ours, vo}, {"merge(base,base,b)", vb, vt, theirs, vt}, {"merge(base,a,base)", vo, vb, ours, vo}} {
			res, err := f.Merge(ctx, vb, c.o, c.t, &MergeOptions{Keys: keys})
			if err != nil || len(res.Conflicts) > 0 || res.Change.Root != c.wantValue {
				t.Fatalf("%s: %v %+v\n%s", c.name, err, res, what)
			}
		}

		ref := &refMerge{keys: keys}
		want := ref.merge("", base, ours, theirs)
		res, err := f.Merge(ctx, vb, vo, vt, &MergeOptions{Keys: keys})
		if err != nil {
			t.Fatalf("%v\n%s", err, what)
		}
		got := conflictPaths(res.Conflicts)
		if fmt.Sprint(got) != fmt.Sprint(sorted(ref.conflicts)) {
			t.Fatalf("conflicts %v, reference %v\n%s", got, sorted(ref.conflicts), what)
		}
		if len(got) == 0 {
			merged++
			checkMerged(t, f, res, want, what)
			checkChangesKept(t, base, ours, want, keys, what)
			checkChangesKept(t, base, theirs, want, keys, what)
			continue
		}
		conflicted++
		// Settle every conflict with a random side; the reference settles the same way.
		resolve := map[string]string{}
		for _, p := range got {
			resolve[p] = []string{Ours, Theirs}[rng.Intn(2)]
		}
		ref = &refMerge{keys: keys, resolve: resolve}
		want = ref.merge("", base, ours, theirs)
		res, err = f.Merge(ctx, vb, vo, vt, &MergeOptions{Keys: keys, Resolve: resolve})
		if err != nil {
			t.Fatalf("resolve %v: %v\n%s", resolve, err, what)
		}
		if len(res.Conflicts) > 0 {
			t.Fatalf("resolve %v left %v\n%s", resolve, res.Conflicts, what)
		}
		checkMerged(t, f, res, want, what+fmt.Sprintf("\nresolve %v", resolve))
	}
	t.Logf("%d merges without conflicts, %d with", merged, conflicted)
	if merged < rounds/10 || conflicted < rounds/10 {
		t.Fatalf("the generator makes too few merges of one kind: %d clean, %d conflicting", merged, conflicted)
	}
}

func checkMerged(t *testing.T, f *Forest, res *MergeResult, want any, what string) {
	t.Helper()
	if res.Change == nil {
		t.Fatalf("no change\n%s", what)
	}
	if _, err := f.Save(context.Background(), res.Change); err != nil {
		t.Fatal(err)
	}
	w := js(want)
	if got := mustJSON(t, f, res.Change.Root); got != w {
		t.Fatalf("merged\n  %s\nreference\n  %s\n%s", got, w, what)
	}
	if fresh := mustImport(t, f, w); fresh != res.Change.Root {
		t.Fatalf("the merged tree is not the canonical tree of its content\n%s", what)
	}
}

// checkChangesKept: every change side made to base (a member set or removed, an element added or removed, a member
// of an element changed) is in the merged document. In arrays aligned by position, an element replaced one for one
// is an edit of the element at that place (its members merge with the other side's edits of it), so there only
// the presence of added elements and the absence of removed ones are checked.
func checkChangesKept(t *testing.T, base, side, merged any, keys map[string]string, what string) {
	t.Helper()
	b, s, m := base.(map[string]any), side.(map[string]any), merged.(map[string]any)
	bc, sc, mc := b["cfg"].(map[string]any), s["cfg"].(map[string]any), m["cfg"].(map[string]any)
	for k := range union(bc, sc) {
		bv, inB := bc[k]
		sv, inS := sc[k]
		mv, inM := mc[k]
		if inB == inS && (!inS || js(bv) == js(sv)) {
			continue
		}
		if inS != inM || (inS && js(sv) != js(mv)) {
			t.Fatalf("the change of cfg/%s to %v is not in the result\n%s", k, sv, what)
		}
	}
	for _, arr := range []string{"keyed", "plain", "scalars"} {
		_, keyedOff := keys["/keyed"]
		positional := arr == "plain" && keys["/plain"] != "n" || arr == "keyed" && keyedOff
		bi, si, mi := identities(b[arr]), identities(s[arr]), identities(m[arr])
		for id, sv := range si {
			bv, inB := bi[id]
			mv, inM := mi[id]
			switch {
			case !inB && !inM:
				t.Fatalf("%s: %s added, not in the result\n%s", arr, id, what)
			case positional:
			case !inB:
				if js(sv) != js(mv) {
					t.Fatalf("%s: %s added as %s, in the result as %s\n%s", arr, id, js(sv), js(mv), what)
				}
			case js(bv) != js(sv):
				if !inM {
					t.Fatalf("%s: %s changed, not in the result\n%s", arr, id, what)
				}
				so, mo := sv.(map[string]any), mv.(map[string]any)
				for k, v := range so {
					if js(bv.(map[string]any)[k]) != js(v) && js(mo[k]) != js(v) {
						t.Fatalf("%s: %s/%s changed to %v, %v in the result\n%s", arr, id, k, v, mo[k], what)
					}
				}
			}
		}
		for id := range bi {
			if _, inS := si[id]; !inS {
				if _, inM := mi[id]; inM {
					t.Fatalf("%s: %s removed, still in the result\n%s", arr, id, what)
				}
			}
		}
	}
}

// identities maps each element of a generated array to its identity: id, n, or the string itself.
func identities(v any) map[string]any {
	out := map[string]any{}
	for _, e := range v.([]any) {
		switch x := e.(type) {
		case string:
			out[x] = x
		case map[string]any:
			if id, ok := x["id"]; ok {
				out[js(id)] = x
			} else {
				out["n"+js(x["n"])] = x
			}
		}
	}
	return out
}

func union(a, b map[string]any) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func conflictPaths(cs []Conflict) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Path)
	}
	return sorted(out)
}

func sorted(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}

// js is canonical JSON (encoding/json sorts members).
func js(v any) string {
	if v == missing {
		return "<missing>"
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// gen makes random documents and random edits of them. Values new to a side carry the side's number, so that
// the two sides never make the same insert by chance (the properties cover the same change on both sides).
type gen struct {
	rng  *rand.Rand
	next int
}

func (g *gen) fresh(side int) int { g.next++; return side*1_000_000 + g.next }

func (g *gen) doc() any {
	cfg := map[string]any{}
	for i := 0; i < 1+g.rng.Intn(6); i++ {
		cfg[fmt.Sprint("k", i)] = float64(g.rng.Intn(5))
	}
	size := func() int {
		switch g.rng.Intn(4) {
		case 0:
			return g.rng.Intn(4)
		case 1:
			return g.rng.Intn(20)
		default:
			return 50 + g.rng.Intn(250) // several leaves
		}
	}
	var keyed, plain, scalars []any
	for i := 0; i < size(); i++ {
		keyed = append(keyed, g.keyedElem(0, i))
	}
	for i := 0; i < size(); i++ {
		plain = append(plain, map[string]any{"n": float64(i), "v": "value-" + strconv.Itoa(i), "w": float64(i % 7)})
	}
	for i := 0; i < size(); i++ {
		scalars = append(scalars, "s-"+strconv.Itoa(i))
	}
	return map[string]any{"cfg": cfg, "keyed": nonNil(keyed), "plain": nonNil(plain), "scalars": nonNil(scalars)}
}

func nonNil(a []any) []any {
	if a == nil {
		return []any{}
	}
	return a
}

func (g *gen) keyedElem(side, i int) any {
	var id any = float64(i)
	if i%3 == 1 {
		id = "k" + strconv.Itoa(i) // string and number keys side by side
	}
	if side > 0 {
		id = float64(g.fresh(side))
	}
	return map[string]any{"id": id, "price": float64(g.rng.Intn(9)), "stock": float64(g.rng.Intn(9)), "name": fmt.Sprintf("item %v with a longer name", id)}
}

// edit returns a copy of doc with a few random changes, clustered around a few places so that the two sides
// overlap often enough.
func (g *gen) edit(doc any, side int) any {
	d := clone(doc).(map[string]any)
	cfg := d["cfg"].(map[string]any)
	for n := g.rng.Intn(3); n > 0; n-- {
		k := fmt.Sprint("k", g.rng.Intn(8))
		if _, ok := cfg[k]; ok && g.rng.Intn(3) == 0 {
			delete(cfg, k)
		} else {
			cfg[k] = float64(g.rng.Intn(3)) // small values: the sides agree by chance now and then
		}
	}
	for _, name := range []string{"keyed", "plain", "scalars"} {
		arr := d[name].([]any)
		focus := g.rng.Intn(len(arr) + 1)
		for n := g.rng.Intn(5); n > 0; n-- {
			at := focus + g.rng.Intn(7) - 3
			if g.rng.Intn(4) == 0 {
				at = g.rng.Intn(len(arr) + 1)
			}
			at = max(0, min(at, len(arr)))
			switch r := g.rng.Intn(10); {
			case r < 3 || len(arr) == 0 || at == len(arr): // insert (at the end too)
				var e any
				switch name {
				case "keyed":
					e = g.keyedElem(side, 0)
				case "plain":
					e = map[string]any{"n": float64(g.fresh(side)), "v": "new", "w": float64(0)}
				default:
					e = "new-" + strconv.Itoa(g.fresh(side))
				}
				arr = append(arr[:at], append([]any{e}, arr[at:]...)...)
			case r < 5:
				arr = append(arr[:at], arr[at+1:]...)
			default: // edit in place
				switch name {
				case "scalars":
					arr[at] = "edit-" + strconv.Itoa(g.fresh(side))
				case "keyed":
					arr[at].(map[string]any)[[]string{"price", "stock", "name"}[g.rng.Intn(3)]] = float64(g.rng.Intn(4))
				default:
					arr[at].(map[string]any)[[]string{"v", "w"}[g.rng.Intn(2)]] = float64(g.rng.Intn(4))
				}
			}
		}
		d[name] = arr
	}
	return d
}

func clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = clone(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = clone(e)
		}
		return out
	}
	return v
}

func (g *gen) value(t *testing.T, f *Forest, v any) Value { return mustImport(t, f, js(v)) }

// missing is an absent value in refMerge.
var missing = &struct{ absent bool }{true}

// refMerge is the reference three-way merge, written plainly over Go values from the rules (see mergeArray's
// comment), for documents without moves: every element is unique, so each side's changes are the runs between the
// elements it kept.
type refMerge struct {
	keys      map[string]string
	resolve   map[string]string
	conflicts []string // unresolved
	settled   []string // all
}

func (r *refMerge) clash(p string, o, t any) any {
	r.settled = append(r.settled, p)
	switch r.resolve[p] {
	case Theirs:
		return t
	case Ours:
		return o
	}
	r.conflicts = append(r.conflicts, p)
	return o
}

func same(x, y any) bool { return js(x) == js(y) }

func (r *refMerge) merge(p string, b, o, t any) any {
	switch {
	case same(o, t), same(b, t):
		return o
	case same(b, o):
		return t
	case o == missing || t == missing:
		return r.clash(p, o, t)
	}
	bo, ok1 := b.(map[string]any)
	oo, ok2 := o.(map[string]any)
	to, ok3 := t.(map[string]any)
	if ok1 && ok2 && ok3 {
		out := map[string]any{}
		for k := range union(bo, union2(oo, to)) {
			v := r.merge(p+"/"+strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"), get(bo, k), get(oo, k), get(to, k))
			if v != missing {
				out[k] = v
			}
		}
		return out
	}
	ba, ok1 := b.([]any)
	oa, ok2 := o.([]any)
	ta, ok3 := t.([]any)
	if ok1 && ok2 && ok3 {
		mark, markC := len(r.settled), len(r.conflicts)
		v := r.array(p, ba, oa, ta)
		seen := map[string]bool{}
		for _, q := range r.settled[mark:] {
			if seen[q] { // two conflicts on one path: the whole array is one
				r.settled, r.conflicts = r.settled[:mark], r.conflicts[:markC]
				return r.clash(p, o, t)
			}
			seen[q] = true
		}
		return v
	}
	return r.clash(p, o, t)
}

func union2(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func get(m map[string]any, k string) any {
	if v, ok := m[k]; ok {
		return v
	}
	return missing
}

type refItem struct {
	side, lo, hi int
	ins          []any
	edit         bool
}

type refComp struct {
	lo, hi   int
	its      [2][]refItem
	merged   []any
	verbatim bool
}

func (r *refMerge) array(p string, b, o, t []any) any {
	key := "id"
	if k, ok := r.keys[p]; ok {
		key = k
	}
	keyed := key != "" && keyedBy(key, b) && keyedBy(key, o) && keyedBy(key, t)
	ident := func(v any) string {
		if keyed {
			return js(v.(map[string]any)[key])
		}
		return js(v)
	}
	var items [2][]refItem
	for s, side := range [][]any{o, t} {
		inBase := map[string]bool{}
		for _, e := range b {
			inBase[ident(e)] = true
		}
		common := map[string]bool{}
		for _, e := range side {
			if inBase[ident(e)] {
				common[ident(e)] = true
			}
		}
		i, j := 0, 0
		for i < len(b) || j < len(side) {
			lo, j0 := i, j
			for i < len(b) && !common[ident(b[i])] {
				i++
			}
			for j < len(side) && !common[ident(side[j])] {
				j++
			}
			gap := side[j0:j]
			if !keyed && i > lo && i == len(b) && len(gap) > i-lo && refSameShapes(b[lo:i], gap[:i-lo]) { // the last elements edited, the rest appended
				items[s] = append(items[s], refItem{s, len(b), len(b), gap[i-lo:], false})
				gap = gap[:i-lo]
			}
			switch {
			case i == lo && len(gap) == 0:
			case !keyed && i-lo == len(gap):
				for k := 0; k < i-lo; k++ {
					if !same(b[lo+k], gap[k]) {
						items[s] = append(items[s], refItem{s, lo + k, lo + k + 1, []any{gap[k]}, true})
					}
				}
			default:
				items[s] = append(items[s], refItem{s, lo, i, gap, false})
			}
			if i < len(b) && j < len(side) {
				if ident(b[i]) != ident(side[j]) {
					panic("the reference merges documents without moves")
				}
				if keyed && !same(b[i], side[j]) {
					items[s] = append(items[s], refItem{s, i, i + 1, []any{side[j]}, true})
				}
				i, j = i+1, j+1
			}
		}
	}
	// sameEdge: an insert at an edge of the other side's run that inserts what the run begins (or ends) with.
	sameEdge := func(ins, run refItem) bool {
		n := len(ins.ins)
		eq := func(x, y []any) bool {
			for i := range x {
				if !same(x[i], y[i]) {
					return false
				}
			}
			return true
		}
		switch {
		case n == 0 || n > len(run.ins):
			return false
		case ins.lo == run.lo:
			return eq(ins.ins, run.ins[:n])
		case ins.lo == run.hi:
			return eq(ins.ins, run.ins[len(run.ins)-n:])
		}
		return false
	}
	overlap := func(x, y refItem) bool {
		ex, ey := x.lo == x.hi, y.lo == y.hi
		switch {
		case !ex && !ey:
			return x.lo < y.hi && y.lo < x.hi
		case ex && !ey:
			return y.lo < x.lo && x.lo < y.hi || sameEdge(x, y)
		case !ex && ey:
			return x.lo < y.lo && y.lo < x.hi || sameEdge(y, x)
		}
		return x.lo == y.lo
	}
	// Groups: the transitive closure of overlaps, found naively.
	all := append(append([]refItem{}, items[0]...), items[1]...)
	group := make([]int, len(all))
	for i := range group {
		group[i] = i
	}
	for changed := true; changed; {
		changed = false
		for i := range all {
			for j := range all {
				if all[i].side != all[j].side && overlap(all[i], all[j]) && group[i] != group[j] {
					g := min(group[i], group[j])
					group[i], group[j], changed = g, g, true
				}
			}
		}
	}
	byGroup := map[int]*refComp{}
	var comps []*refComp
	for i, it := range all {
		c := byGroup[group[i]]
		if c == nil {
			c = &refComp{lo: it.lo, hi: it.hi}
			byGroup[group[i]] = c
			comps = append(comps, c)
		}
		c.lo, c.hi = min(c.lo, it.lo), max(c.hi, it.hi)
		c.its[it.side] = append(c.its[it.side], it)
	}
	sort.Slice(comps, func(i, j int) bool {
		if comps[i].lo != comps[j].lo {
			return comps[i].lo < comps[j].lo
		}
		return comps[i].hi < comps[j].hi
	})
	baseKeys := map[string]int{}
	if keyed {
		for i, e := range b {
			baseKeys[ident(e)] = i
		}
	}
	slice := func(c *refComp, s int) []any {
		its := append([]refItem{}, c.its[s]...)
		sort.Slice(its, func(i, j int) bool { return its[i].lo < its[j].lo || its[i].lo == its[j].lo && its[i].hi < its[j].hi })
		var out []any
		pos := c.lo
		for _, it := range its {
			out = append(out, b[pos:it.lo]...)
			out = append(out, it.ins...)
			pos = max(pos, it.hi)
		}
		return append(out, b[pos:c.hi]...)
	}
	sameRun := func(x, y []any) bool {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if same(x[i], y[i]) {
				continue
			}
			if !keyed || ident(x[i]) != ident(y[i]) {
				return false
			}
			if _, ok := baseKeys[ident(x[i])]; !ok {
				return false
			}
		}
		return true
	}
	for _, c := range comps {
		s0, s1 := slice(c, 0), slice(c, 1)
		switch {
		case len(c.its[1]) == 0:
			c.merged = s0
		case len(c.its[0]) == 0:
			c.merged = s1
		case !keyed && len(c.its[0]) == 1 && len(c.its[1]) == 1 && c.its[0][0].edit && c.its[1][0].edit:
			c.merged = []any{r.merge(p+"/"+strconv.Itoa(c.lo), b[c.lo], c.its[0][0].ins[0], c.its[1][0].ins[0])}
		case sameRun(s0, s1):
			c.merged = s0
		case c.lo == c.hi && c.lo == len(b):
			k := 0 // what both appended first, once
			for k < len(s0) && k < len(s1) && sameRun(s0[k:k+1], s1[k:k+1]) {
				k++
			}
			c.merged = append(append([]any{}, s0...), s1[k:]...)
		default:
			c.verbatim = true
			c.merged = []any{r.clash(p+"/"+strconv.Itoa(c.lo), s0, s1)}
			c.merged = c.merged[0].([]any)
		}
	}
	version := func(side []any, k string) any {
		for _, e := range side {
			if ident(e) == k {
				return e
			}
		}
		return missing
	}
	var out []any
	pos := 0
	for _, c := range comps {
		out = append(out, b[pos:c.lo]...)
		for _, e := range c.merged {
			if i, ok := baseKeys[ident(e)]; keyed && ok && !c.verbatim {
				e = r.merge(p+"/"+strconv.Itoa(i), b[i], version(o, ident(e)), version(t, ident(e)))
			}
			out = append(out, e)
		}
		pos = max(pos, c.hi)
	}
	return append(append([]any{}, out...), b[pos:]...)
}

// keyedBy reports whether every element is an object with a unique string or number under key.
func keyedBy(key string, arr []any) bool {
	seen := map[string]bool{}
	for _, e := range arr {
		o, ok := e.(map[string]any)
		if !ok {
			return false
		}
		switch o[key].(type) {
		case string, float64:
		default:
			return false
		}
		k := js(o[key])
		if seen[k] {
			return false
		}
		seen[k] = true
	}
	return true
}

// refSameShapes: each element of x has the JSON type of the one at its place in y, and objects the same members.
func refSameShapes(x, y []any) bool {
	for i := range x {
		switch a := x[i].(type) {
		case map[string]any:
			b, ok := y[i].(map[string]any)
			if !ok || len(a) != len(b) {
				return false
			}
			for k := range a {
				if _, ok := b[k]; !ok {
					return false
				}
			}
		default:
			if fmt.Sprintf("%T", x[i]) != fmt.Sprintf("%T", y[i]) {
				return false
			}
		}
	}
	return true
}

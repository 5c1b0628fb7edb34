package revision

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/strata-db/strata/revision/internal/codec"
)

// Arrays merge three ways (diff3). Each side's changes against the base are found as runs of elements (hunks, by
// hash: subtrees equal on both sides are skipped unread), and then, in base positions:
//
//   - a change only one side made is taken: inserts at different places, deletes and edits of different elements;
//   - the same change on both sides is taken once;
//   - both sides inserting at the end of the array keep both, ours first, then theirs, and what both appended first
//     once (by position, a side that replaced its last elements by more of the same shape, as in "edit the last
//     element and append one", counts as editing those and appending the rest);
//   - an element both sides edited in place (a one-for-one replacement, or, for keyed elements, the same key) is
//     merged recursively, so that a member edit inside element 5 merges with a member edit of another member of it
//     and with a delete of element 1;
//   - any other pair of changes that overlap (touch the same base element, or insert at the same place other than
//     the end) is a conflict at the path of the first base element concerned, settled by a resolution or reported.
//
// Keyed elements: when every element the merge reads (those in the changed runs on either side) is an object
// whose key member (DefaultKey, or MergeOptions.Keys for this array) is a string or a number, and no key repeats
// among them in the base or on either side, elements are aligned by key instead of by content: an element keeps
// its identity when it is edited, and when it is moved its content follows it, so edits merge member by member
// whatever the other side inserted, deleted or moved around it. An element both sides moved to different places,
// added at different places, or that one side removed while the other moved it, is a conflict at its base path.
// Keys compare exactly as stored: 1 and 1.0, or 1 and "1", are different keys. When the key is missing from an
// element read, is not a string or number, or repeats, the array is aligned by position. Elements outside the
// changed runs are not read (that is what keeps the cost with the change), so a key repeated only there is not seen.
//
// When the conflicts of one array cannot be told apart (two would have the same path), the whole array is one
// conflict at its own path.
func (m *merger) array(p Pointer, base, ours, theirs Value) (Value, error) {
	mark, dups := len(m.settled), m.dups
	v, err := m.alignedArray(p, base, ours, theirs)
	_, wholeAsked := m.opts.Resolve[p.String()]
	var reason string // set when the array is to be one conflict at its own path
	switch {
	case errors.Is(err, errSettleWhole):
		reason = "the resolutions given inside this array would lose or repeat an element both sides keep: settle the array as a whole (a resolution at its own path)"
	case err != nil:
		return v, err
	case wholeAsked && len(m.settled) > mark:
		// A resolution at the array's own path settles every conflict inside it: that side's array.
		reason = "both sides changed this array in ways that conflict"
	case m.dups != dups:
		reason = "both sides changed this array in overlapping ways that cannot be reported element by element"
	default:
		return v, nil
	}
	if err == nil && wholeAsked {
		// The resolutions of the conflicts inside overlap the array's own: remember them, to say so.
		for _, s := range m.settled[mark:] {
			if s.side != "" {
				m.inside[s.c.Path] = true
			}
		}
	}
	m.rollback(mark)
	m.dups = dups
	return m.clash(p, reason, base, ours, theirs), nil
}

// mitem is one side's change to a base array, in base positions: the elements [lo, hi) become ins.
type mitem struct {
	side   int // 0 ours, 1 theirs
	lo, hi uint64
	ins    []string
	// edit: the element at lo changed in place (hi == lo+1, one element in ins): a one-for-one replacement when
	// aligned by position, the same key when aligned by key.
	edit bool
	// detached: keyed, an edit of an element the other side moved, kept with the group of the move only so that
	// this side's run reads right; it is not a change of the run.
	detached bool
	c        *mcomp
}

// mcomp is a set of changes that overlap, from one side or both; its base extent is [lo, hi).
type mcomp struct {
	lo, hi   uint64
	its      [2][]*mitem // each side's changes in it, in base order
	slice    [2][]occ    // the run [lo, hi) as each side has it
	merged   []occ       // the run as the merge has it
	verbatim bool        // merged is one side's run, taken whole by a resolution (or left as ours by a conflict)
	conflict bool        // the group is a conflict; side is what its resolution took ("" if none)
	side     string
}

// occ is one element of a run, with the sides it comes from (1 ours, 2 theirs, 3 both: a base element neither
// changed, or a change both made). An empty val marks an element the merge dropped.
type occ struct {
	val  string
	from uint8
}

// arrayMerge is the merge of one array.
type arrayMerge struct {
	m       *merger
	p       Pointer
	baseLen uint64
	bval    map[uint64]string // the base elements read (those in either side's hunks), by base index
	items   [2][]*mitem
	keys    *keying // nil: aligned by position
	// placedOnce: keyed, every key both sides keep is in the merged array once, none twice (byKey's finding).
	placedOnce bool

	// keyed only: per side, the keys it removed from their base place (dset), the elements it put in a new place
	// or added (iset), and the elements it edited in place (eset).
	dset [2]map[string]bool
	iset [2]map[string]string
	eset [2]map[string]string
}

// keying is what a keyed alignment knows: the key of each element read, and the base index of each base key.
type keying struct {
	of   map[string]string // element encoding → its key member's encoding
	base map[string]uint64 // key → index in base
}

func (m *merger) alignedArray(p Pointer, base, ours, theirs Value) (Value, error) {
	start := len(m.settled)
	var hs [2][]hunk
	var err error
	if hs[0], err = m.d.hunks(base, ours); err != nil {
		return Value{}, err
	}
	if hs[1], err = m.d.hunks(base, theirs); err != nil {
		return Value{}, err
	}
	a := &arrayMerge{m: m, p: p, baseLen: base.Len(), bval: map[uint64]string{}}
	for s := range hs {
		for _, h := range hs[s] {
			for j, v := range h.del {
				a.bval[h.lo+uint64(j)] = v
			}
		}
	}
	if key := m.keyFor(p); key != "" {
		if a.keys, err = m.keysOf(key, hs, a.bval); err != nil {
			return Value{}, err
		}
	}
	for s := range hs {
		if a.keys == nil {
			a.splitByPosition(s, hs[s])
		} else {
			a.splitByKey(s, hs[s])
		}
	}
	var detached [2][]*mitem
	if a.keys != nil {
		detached = a.detach()
	}
	for s := range a.items {
		a.items[s] = joinTouching(a.items[s])
	}
	comps, err := a.components(detached)
	if err != nil {
		return Value{}, err
	}
	for _, c := range comps {
		if err := a.outcome(c); err != nil {
			return Value{}, err
		}
	}
	if a.keys != nil {
		if err := a.byKey(comps); err != nil {
			return Value{}, err
		}
		if !a.placedOnce && settledAll(m.settled[start:]) {
			return Value{}, errSettleWhole
		}
	}
	return a.apply(ours, comps)
}

// errSettleWhole: the conflicts of an array, settled as resolved, would lose or repeat an element; the array is
// then one conflict at its own path.
var errSettleWhole = errors.New("the array is to be settled as a whole")

// settledAll reports whether every conflict of ss was settled by a resolution (and there was one).
func settledAll(ss []settled) bool {
	for _, s := range ss {
		if s.side == "" {
			return false
		}
	}
	return len(ss) > 0
}

// keyFor is the key member for the array at p ("" for none).
func (m *merger) keyFor(p Pointer) string {
	if k, ok := m.opts.Keys[p.String()]; ok {
		return k
	}
	return DefaultKey
}

// keysOf reads the key of every element the hunks hold, and returns nil (align by position) unless each is an
// object with a string or number under name and no key repeats: in the base elements read, or in what each side
// has of them (its own new elements, and the base elements it kept).
func (m *merger) keysOf(name string, hs [2][]hunk, bval map[uint64]string) (*keying, error) {
	k := &keying{of: map[string]string{}, base: map[string]uint64{}}
	keyOf := func(val string) (string, bool, error) {
		if key, ok := k.of[val]; ok {
			return key, true, nil
		}
		v := Value{val}
		if v.Kind() != Object {
			return "", false, nil
		}
		loc, err := m.t.locateKey(v, name)
		if err != nil || !loc.found {
			return "", false, err
		}
		kv := loc.val()
		if kk := kv.Kind(); kk != String && kk != Number {
			return "", false, nil
		}
		k.of[val] = kv.enc
		return kv.enc, true, nil
	}
	for i, val := range bval {
		key, ok, err := keyOf(val)
		if err != nil || !ok {
			return nil, err
		}
		if _, dup := k.base[key]; dup {
			return nil, nil
		}
		k.base[key] = i
	}
	for s := range hs {
		seen := map[string]bool{}
		for _, h := range hs[s] {
			for _, val := range h.ins {
				key, ok, err := keyOf(val)
				if err != nil || !ok {
					return nil, err
				}
				if seen[key] {
					return nil, nil
				}
				seen[key] = true
			}
		}
		for i, val := range bval {
			if covered(hs[s], i) {
				continue
			}
			key := k.of[val]
			if seen[key] {
				return nil, nil
			}
			seen[key] = true
		}
	}
	return k, nil
}

// covered reports whether base index i is among the elements a side's hunks replace.
func covered(hs []hunk, i uint64) bool {
	j := sort.Search(len(hs), func(j int) bool { return hs[j].lo > i }) - 1
	return j >= 0 && i < hs[j].lo+uint64(len(hs[j].del))
}

// splitByPosition turns a side's hunks into changes: a run replaced one for one is edits of its elements in place
// (merged recursively where the other side edited the same element); any other run is one change. A run that ends
// the array and grows it, whose first elements have the shape of those they replace (see sameShape), is those
// replaced one for one and an append of the rest (the common "edit the last element, append one"), so that both
// sides' appends stay in order.
func (a *arrayMerge) splitByPosition(s int, hs []hunk) {
	for _, h := range hs {
		nd := len(h.del)
		if nd > 0 && h.lo+uint64(nd) == a.baseLen && len(h.ins) > nd && allSameShape(h.del, h.ins[:nd]) {
			a.items[s] = append(a.items[s], &mitem{side: s, lo: a.baseLen, hi: a.baseLen, ins: h.ins[nd:]})
			h.ins = h.ins[:nd]
		}
		if nd > 0 && nd == len(h.ins) {
			for j := range nd {
				if h.del[j] != h.ins[j] {
					a.items[s] = append(a.items[s], &mitem{side: s, lo: h.lo + uint64(j), hi: h.lo + uint64(j) + 1, ins: h.ins[j : j+1], edit: true})
				}
			}
			continue
		}
		a.items[s] = append(a.items[s], &mitem{side: s, lo: h.lo, hi: h.lo + uint64(nd), ins: h.ins})
	}
}

// allSameShape reports whether each element of x has the shape of the one at its place in y.
func allSameShape(x, y []string) bool {
	for i := range x {
		if !sameShape(x[i], y[i]) {
			return false
		}
	}
	return true
}

// sameShape reports whether two elements look like one edited: the same JSON type and, for objects, the same
// member names (compared only for objects held inline, up to 1 KiB; larger ones never look alike).
func sameShape(x, y string) bool {
	vx, vy := Value{x}, Value{y}
	if vx.Kind() != vy.Kind() {
		return false
	}
	if vx.Kind() != Object {
		return true
	}
	if vx.IsTree() || vy.IsTree() || vx.Len() != vy.Len() {
		return false
	}
	ix, iy := newInlineIter(x), newInlineIter(y)
	for ix.ok && iy.ok {
		if ix.key != iy.key {
			return false
		}
		ix.next()
		iy.next()
	}
	return ix.ok == iy.ok
}

// splitByKey aligns each hunk's elements by key (Myers over the key sequences): an element whose key stays in
// place is an edit of it; the rest are runs of keys removed from and put in place.
func (a *arrayMerge) splitByKey(s int, hs []hunk) {
	a.dset[s], a.iset[s], a.eset[s] = map[string]bool{}, map[string]string{}, map[string]string{}
	tokens := func(vals []string) []item {
		out := make([]item, len(vals))
		for i, v := range vals {
			out[i] = item{val: a.keys.of[v]}
		}
		return out
	}
	add := func(it *mitem) {
		a.items[s] = append(a.items[s], it)
		if it.edit {
			a.eset[s][a.keys.of[it.ins[0]]] = it.ins[0]
			return
		}
		for i := it.lo; i < it.hi; i++ {
			a.dset[s][a.keys.of[a.bval[i]]] = true
		}
		for _, v := range it.ins {
			a.iset[s][a.keys.of[v]] = v
		}
	}
	for _, h := range hs {
		script, ok := myers(tokens(h.del), tokens(h.ins), a.m.d.opts.MaxWork)
		if !ok {
			add(&mitem{side: s, lo: h.lo, hi: h.lo + uint64(len(h.del)), ins: h.ins})
			continue
		}
		ai, bi, i := 0, 0, 0
		for i < len(script) {
			if script[i].kind == '=' {
				if h.del[ai] != h.ins[bi] {
					add(&mitem{side: s, lo: h.lo + uint64(ai), hi: h.lo + uint64(ai) + 1, ins: h.ins[bi : bi+1], edit: true})
				}
				ai, bi, i = ai+1, bi+1, i+1
				continue
			}
			a0, b0 := ai, bi
			for ; i < len(script) && script[i].kind != '='; i++ {
				if script[i].kind == 'd' {
					ai++
				} else {
					bi++
				}
			}
			add(&mitem{side: s, lo: h.lo + uint64(a0), hi: h.lo + uint64(ai), ins: h.ins[b0:bi]})
		}
	}
}

// moved reports whether side s put the base element with key k in another place.
func (a *arrayMerge) moved(s int, k string) bool {
	_, in := a.iset[s][k]
	return in && a.dset[s][k]
}

// detach takes out of the changes the edits of elements that the other side moved: their content follows the
// element to its new place (byKey merges it there), so they overlap nothing. Edits of elements the other side
// removed stay, and conflict with the removal.
func (a *arrayMerge) detach() (out [2][]*mitem) {
	for s := range a.items {
		kept := a.items[s][:0]
		for _, it := range a.items[s] {
			if it.edit && a.moved(1-s, a.keys.of[it.ins[0]]) {
				it.detached = true
				out[s] = append(out[s], it)
			} else {
				kept = append(kept, it)
			}
		}
		a.items[s] = kept
	}
	return out
}

// joinTouching joins a side's changes of runs (not edits) that meet, so that no two of its changes begin at the
// same place.
func joinTouching(its []*mitem) []*mitem {
	sort.SliceStable(its, func(i, j int) bool {
		if its[i].lo != its[j].lo {
			return its[i].lo < its[j].lo
		}
		return its[i].hi < its[j].hi
	})
	out := its[:0]
	for _, it := range its {
		if n := len(out); n > 0 && !it.edit && !out[n-1].edit && out[n-1].hi == it.lo {
			prev := out[n-1]
			ins := make([]string, 0, len(prev.ins)+len(it.ins))
			out[n-1] = &mitem{side: it.side, lo: prev.lo, hi: it.hi, ins: append(append(ins, prev.ins...), it.ins...)}
			continue
		}
		out = append(out, it)
	}
	return out
}

// overlaps reports whether two changes of different sides touch the same base elements or insert at the same
// place. An insert at the edge of the other side's run does not overlap it: it goes before (or after) it — unless
// the run's new elements begin (or end) with the very elements inserted, which is the same insert made on both
// sides (found in review: [a,b] to [x,b] and to [x,a,b] merged cleanly to [x,x,b]).
func overlaps(x, y *mitem) bool {
	ex, ey := x.lo == x.hi, y.lo == y.hi
	switch {
	case !ex && !ey:
		return x.lo < y.hi && y.lo < x.hi
	case ex && !ey:
		return y.lo < x.lo && x.lo < y.hi || sameAtEdge(x, y)
	case !ex && ey:
		return x.lo < y.lo && y.lo < x.hi || sameAtEdge(y, x)
	default:
		return x.lo == y.lo
	}
}

// sameAtEdge reports whether the insert ins, at an edge of the run r, inserts what r's new elements begin (at its
// start) or end (at its end) with.
func sameAtEdge(ins, r *mitem) bool {
	n := len(ins.ins)
	switch {
	case n == 0 || n > len(r.ins):
		return false
	case ins.lo == r.lo:
		return slices.Equal(ins.ins, r.ins[:n])
	case ins.lo == r.hi:
		return slices.Equal(ins.ins, r.ins[len(r.ins)-n:])
	}
	return false
}

// components groups the changes of both sides that overlap (transitively), in base order, and adds each detached
// edit to the group holding the other side's move of its element.
func (a *arrayMerge) components(detached [2][]*mitem) ([]*mcomp, error) {
	A, B := a.items[0], a.items[1]
	parent := make([]int, len(A)+len(B))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	// Each side's changes are disjoint and in order, so the other side's candidates for overlapping a change are
	// a window that only moves forward.
	j0 := 0
	for i, x := range A {
		for j0 < len(B) && B[j0].hi < x.lo {
			j0++
		}
		for j := j0; j < len(B) && B[j].lo <= x.hi; j++ {
			if overlaps(x, B[j]) {
				parent[find(i)] = find(len(A) + j)
			}
		}
	}
	byRoot := map[int]*mcomp{}
	var comps []*mcomp
	for i := range parent {
		it := A
		k := i
		if i >= len(A) {
			it, k = B, i-len(A)
		}
		x := it[k]
		r := find(i)
		c := byRoot[r]
		if c == nil {
			c = &mcomp{lo: x.lo, hi: x.hi}
			byRoot[r] = c
			comps = append(comps, c)
		}
		c.lo, c.hi = min(c.lo, x.lo), max(c.hi, x.hi)
		c.its[x.side] = append(c.its[x.side], x)
		x.c = c
	}
	for s := range detached {
		o := a.items[1-s]
		for _, x := range detached[s] {
			j := sort.Search(len(o), func(j int) bool { return o[j].hi > x.lo })
			if j == len(o) || o[j].lo > x.lo || o[j].edit {
				return nil, fmt.Errorf("internal error: merging the array at %q: no move of the element at base index %d", a.p, x.lo)
			}
			c := o[j].c
			c.its[s] = append(c.its[s], x)
			sort.SliceStable(c.its[s], func(i, j int) bool {
				if c.its[s][i].lo != c.its[s][j].lo {
					return c.its[s][i].lo < c.its[s][j].lo
				}
				return c.its[s][i].hi < c.its[s][j].hi
			})
		}
	}
	sort.Slice(comps, func(i, j int) bool {
		if comps[i].lo != comps[j].lo {
			return comps[i].lo < comps[j].lo
		}
		return comps[i].hi < comps[j].hi
	})
	return comps, nil
}

// sliceOf is the run [c.lo, c.hi) as side s has it: the base elements with its changes in it applied.
func (a *arrayMerge) sliceOf(c *mcomp, s int) ([]occ, error) {
	var out []occ
	pos := c.lo
	base := func(to uint64) error {
		for ; pos < to; pos++ {
			v, ok := a.bval[pos]
			if !ok {
				return fmt.Errorf("internal error: merging the array at %q: base element %d was not read", a.p, pos)
			}
			out = append(out, occ{v, 3})
		}
		return nil
	}
	for _, it := range c.its[s] {
		if err := base(it.lo); err != nil {
			return nil, err
		}
		for _, v := range it.ins {
			out = append(out, occ{v, 1 << s})
		}
		pos = max(pos, it.hi)
	}
	return out, base(c.hi)
}

// outcome decides a group of changes: one side's, the same on both, both appending, an element edited on both
// sides (merged recursively), or a conflict.
func (a *arrayMerge) outcome(c *mcomp) error {
	for s := range c.slice {
		var err error
		if c.slice[s], err = a.sliceOf(c, s); err != nil {
			return err
		}
	}
	s0, s1 := c.slice[0], c.slice[1]
	var n [2]int // each side's changes, edits that follow a moved element left out
	for s := range c.its {
		for _, it := range c.its[s] {
			if !it.detached {
				n[s]++
			}
		}
	}
	switch {
	case n[1] == 0:
		c.merged = append([]occ(nil), s0...) // byKey edits merged in place: never share it with a side's run
	case n[0] == 0:
		c.merged = append([]occ(nil), s1...)
	case a.keys == nil && len(c.its[0]) == 1 && len(c.its[1]) == 1 && c.its[0][0].edit && c.its[1][0].edit:
		v, err := a.m.merge(a.index(c.lo), Value{a.bval[c.lo]}, Value{c.its[0][0].ins[0]}, Value{c.its[1][0].ins[0]})
		if err != nil {
			return err
		}
		if v.IsValid() {
			c.merged = []occ{{v.enc, 3}}
		}
	case a.same(s0, s1):
		c.merged = make([]occ, len(s0))
		for i, o := range s0 {
			c.merged[i] = occ{o.val, 3}
		}
	case c.lo == c.hi && c.lo == a.baseLen:
		// Both append: ours, then theirs — what both appended first, once (found in review: [0] to [0,1] and to
		// [0,1,2] gave [0,1,1,2]; the same append on both sides is one change, as when the appends are equal).
		k := 0
		for k < len(s0) && k < len(s1) && a.same(s0[k:k+1], s1[k:k+1]) {
			k++
		}
		c.merged = make([]occ, 0, len(s0)+len(s1)-k)
		for _, o := range s0[:k] {
			c.merged = append(c.merged, occ{o.val, 3})
		}
		c.merged = append(append(c.merged, s0[k:]...), s1[k:]...)
	default:
		return a.runConflict(c)
	}
	return nil
}

// index is the path of base element i.
func (a *arrayMerge) index(i uint64) Pointer { return a.p.Child(strconv.FormatUint(i, 10)) }

// same reports whether two runs are the same change: the same elements, or, keyed, the same keys in the same order
// with the same content for keys new to the array (base elements' content is merged by key afterwards).
func (a *arrayMerge) same(x, y []occ) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i].val == y[i].val {
			continue
		}
		if a.keys == nil {
			return false
		}
		kx := a.keys.of[x[i].val]
		if kx != a.keys.of[y[i].val] {
			return false
		}
		if _, inBase := a.keys.base[kx]; !inBase {
			return false
		}
	}
	return true
}

// runConflict reports a group of overlapping changes from both sides, or takes one side's run as a resolution
// says.
func (a *arrayMerge) runConflict(c *mcomp) error {
	s0, s1 := c.slice[0], c.slice[1]
	cf := Conflict{Path: a.index(c.lo).String()}
	if c.hi-c.lo <= 1 && len(s0) <= 1 && len(s1) <= 1 {
		if c.hi > c.lo {
			cf.Base = Value{a.bval[c.lo]}
		}
		if len(s0) == 1 {
			cf.Ours = Value{s0[0].val}
		}
		if len(s1) == 1 {
			cf.Theirs = Value{s1[0].val}
		}
		switch {
		case !cf.Base.IsValid():
			cf.Reason = "both sides inserted an element at this place, differently"
		case !cf.Ours.IsValid() || !cf.Theirs.IsValid():
			cf.Reason = "removed on one side and changed on the other"
		default:
			cf.Reason = "changed on both sides in different ways"
		}
	} else {
		cf.Elements = true
		if c.lo == c.hi {
			cf.Reason = fmt.Sprintf("both sides inserted elements before base index %d, differently", c.lo)
		} else {
			cf.Reason = fmt.Sprintf("both sides changed base elements %d to %d in overlapping ways", c.lo, c.hi-1)
		}
		var bs []occ
		for i := c.lo; i < c.hi; i++ {
			bs = append(bs, occ{val: a.bval[i]})
		}
		var err error
		for _, x := range []struct {
			dst *Value
			run []occ
		}{{&cf.Base, bs}, {&cf.Ours, s0}, {&cf.Theirs, s1}} {
			es := make([]codec.Entry, len(x.run))
			for i, o := range x.run {
				es[i] = codec.Entry{Val: o.val}
			}
			if *x.dst, err = a.m.t.buildEntries(codec.NodeArrLeaf, es); err != nil {
				return err
			}
		}
	}
	c.verbatim, c.conflict = true, true
	c.merged = append([]occ(nil), s0...)
	if c.side = a.m.settle(cf); c.side == Theirs {
		c.merged = append([]occ(nil), s1...)
	}
	return nil
}

// version is side s's element with key k (the zero Value if it has none).
func (a *arrayMerge) version(s int, k string) Value {
	if v, ok := a.iset[s][k]; ok {
		return Value{v}
	}
	if v, ok := a.eset[s][k]; ok {
		return Value{v}
	}
	if a.dset[s][k] {
		return Value{}
	}
	if i, ok := a.keys.base[k]; ok {
		return Value{a.bval[i]}
	}
	return Value{}
}

// byKey finishes a keyed merge: each base element the merge placed gets its content merged from both sides'
// versions (wherever either side moved it). An element placed twice (moved or added to different places on both
// sides), or placed although one side removed it, is a conflict at its base path; when that path lies in a run
// already in conflict, the run's resolution decides for the element too. Elements in runs taken whole (verbatim)
// are left as they are.
func (a *arrayMerge) byKey(comps []*mcomp) error {
	at := map[string][]keyRef{}
	var order []string
	var conflicted []*mcomp
	for _, c := range comps {
		if c.conflict {
			conflicted = append(conflicted, c)
			if c.side == "" {
				// Unsettled: its run stands for nothing yet (it holds ours' only so that the walk goes on). Counting
				// its keys made the conflicts reported depend on which side was ours (found in review).
				continue
			}
		}
		for j, o := range c.merged {
			k := a.keys.of[o.val]
			if _, ok := at[k]; !ok {
				order = append(order, k)
			}
			at[k] = append(at[k], keyRef{c, j})
		}
	}
	around := func(i uint64) *mcomp {
		j := sort.Search(len(conflicted), func(j int) bool { return conflicted[j].hi > i })
		if j < len(conflicted) && conflicted[j].lo <= i {
			return conflicted[j]
		}
		return nil
	}
	for _, k := range order {
		refs := at[k]
		placed, fixed := 0, 0
		for _, r := range refs {
			if r.c.verbatim {
				fixed++
			} else {
				placed++
			}
		}
		if placed == 0 {
			continue
		}
		i, inBase := a.keys.base[k]
		var b Value
		if inBase {
			b = Value{a.bval[i]}
		}
		ours, theirs := a.version(0, k), a.version(1, k)
		var side string
		switch {
		case inBase && around(i) != nil:
			side = around(i).side
		case placed+fixed >= 2:
			p := a.index(refs[0].c.lo)
			if inBase {
				p = a.index(i)
			}
			kj, err := a.m.t.f.AppendJSON(a.m.t.ctx, nil, Value{k})
			if err != nil {
				return err
			}
			side = a.m.settle(Conflict{Path: p.String(), Reason: fmt.Sprintf("the element with key %s would be at more than one place: both sides moved or added it, to different places", kj), Base: b, Ours: ours, Theirs: theirs})
		case inBase && (!ours.IsValid() || !theirs.IsValid()):
			side = a.m.settle(Conflict{Path: a.index(i).String(), Reason: "removed on one side and moved on the other", Base: b, Ours: ours, Theirs: theirs})
		case inBase:
			r := refs[0]
			v, err := a.m.merge(a.index(i), b, ours, theirs)
			if err != nil {
				return err
			}
			r.c.merged[r.j].val = v.enc
			continue
		default:
			continue // a new element, placed once
		}
		if side == "" {
			continue // unresolved: nothing is written
		}
		s, v := 0, ours
		if side == Theirs {
			s, v = 1, theirs
		}
		a.takeKey(refs, s, v, fixed > 0)
	}
	a.placedOnce = a.keysPlacedOnce(comps, at)
	return nil
}

// keysPlacedOnce reports whether, as the groups were settled, every key both sides keep is in the merged array
// once and no key is in it twice. A resolution takes a run whole: it can leave out an element the other side only
// moved out of it, or hold one the other side moved in as well (found in review: settling the front of
// [1,2,3] → [3,9,1,2] and [9,1,2,3] by theirs lost 3).
func (a *arrayMerge) keysPlacedOnce(comps []*mcomp, at map[string][]keyRef) bool {
	inGroup := func(i uint64) bool {
		j := sort.Search(len(comps), func(j int) bool { return comps[j].hi > i })
		return j < len(comps) && comps[j].lo <= i
	}
	n := map[string]int{}
	for k, refs := range at {
		for _, r := range refs {
			if r.c.merged[r.j].val != "" {
				n[k]++
			}
		}
	}
	for k, i := range a.keys.base {
		if !inGroup(i) {
			n[k]++ // kept in place: no group reads over it
		}
	}
	for _, c := range n {
		if c > 1 {
			return false
		}
	}
	for k := range a.keys.base {
		if n[k] == 0 && a.version(0, k).IsValid() && a.version(1, k).IsValid() {
			return false
		}
	}
	for s := range a.iset {
		for k := range a.iset[s] {
			if n[k] == 0 && a.version(0, k).IsValid() && a.version(1, k).IsValid() {
				return false
			}
		}
	}
	return true
}

type keyRef struct {
	c *mcomp
	j int
}

// takeKey leaves the element with these occurrences as side s has it (v): where s placed it, with its content, or
// nowhere if s removed it. Occurrences in runs taken whole stay; when there are any, the others go.
func (a *arrayMerge) takeKey(refs []keyRef, s int, v Value, fixed bool) {
	keep := -1
	if v.IsValid() && !fixed {
		for n, r := range refs { // where s placed it, else the first place
			if !r.c.verbatim && (keep < 0 || r.c.merged[r.j].from&(1<<s) != 0) {
				if keep = n; r.c.merged[r.j].from&(1<<s) != 0 {
					break
				}
			}
		}
	}
	for n, r := range refs {
		switch {
		case r.c.verbatim:
		case n == keep:
			r.c.merged[r.j].val = v.enc
		default:
			r.c.merged[r.j].val = ""
		}
	}
}

// apply makes the merged array from ours: each group whose merged run differs from ours' is spliced in, from the
// last to the first so that the indexes of the earlier ones hold.
func (a *arrayMerge) apply(ours Value, comps []*mcomp) (Value, error) {
	type splice struct {
		at, del uint64
		ins     []string
	}
	var spl []splice
	var delta int64 // ours' index minus the base index, before the group at hand
	for _, c := range comps {
		s0 := c.slice[0]
		var merged []string
		for _, o := range c.merged {
			if o.val != "" {
				merged = append(merged, o.val)
			}
		}
		i := 0
		for i < len(s0) && i < len(merged) && s0[i].val == merged[i] {
			i++
		}
		j := 0
		for j < len(s0)-i && j < len(merged)-i && s0[len(s0)-1-j].val == merged[len(merged)-1-j] {
			j++
		}
		if i < len(s0)-j || i < len(merged)-j {
			spl = append(spl, splice{at: uint64(int64(c.lo)+delta) + uint64(i), del: uint64(len(s0) - j - i), ins: merged[i : len(merged)-j]})
		}
		delta += int64(len(s0)) - int64(c.hi-c.lo)
	}
	// The splices that fall in one leaf are made together: one rewrite of the leaf and the path above it.
	v := ours
	for k := len(spl) - 1; k >= 0; {
		t := a.m.t
		loc, err := t.locateIndex(v, spl[k].at)
		if err != nil {
			return Value{}, err
		}
		start := spl[k].at - uint64(loc.idx)
		end := start + uint64(len(loc.entries))
		if spl[k].at+spl[k].del > end { // spans leaves
			if v, err = t.splice(v, spl[k].at, spl[k].del, spl[k].ins); err != nil {
				return Value{}, err
			}
			k--
			continue
		}
		es := append([]codec.Entry(nil), loc.entries...)
		for ; k >= 0 && spl[k].at >= start && spl[k].at+spl[k].del <= end; k-- {
			i := int(spl[k].at - start)
			tail := es[i+int(spl[k].del):]
			next := make([]codec.Entry, 0, len(es)-int(spl[k].del)+len(spl[k].ins))
			next = append(next, es[:i]...)
			for _, val := range spl[k].ins {
				next = append(next, codec.Entry{Val: val})
			}
			es = append(next, tail...)
		}
		if v, err = t.replaceLeaf(loc, es); err != nil {
			return Value{}, err
		}
	}
	return v, nil
}

// splice removes del elements of array v from index at and inserts ins there, rewriting one leaf (and the path
// above it) per leaf the removal spans.
func (t *txn) splice(v Value, at, del uint64, ins []string) (Value, error) {
	for {
		loc, err := t.locateIndex(v, at)
		if err != nil {
			return Value{}, err
		}
		n := min(del, uint64(len(loc.entries)-loc.idx))
		if n == 0 && del > 0 {
			return Value{}, fmt.Errorf("internal error: splicing %d elements at index %d of an array of %d", del, at, v.Len())
		}
		last := n == del
		es := make([]codec.Entry, 0, len(loc.entries)-int(n)+len(ins))
		es = append(es, loc.entries[:loc.idx]...)
		if last {
			for _, s := range ins {
				es = append(es, codec.Entry{Val: s})
			}
		}
		es = append(es, loc.entries[loc.idx+int(n):]...)
		if v, err = t.replaceLeaf(loc, es); err != nil {
			return Value{}, err
		}
		if del -= n; last {
			return v, nil
		}
	}
}

package revision

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/strata-db/strata/revision/internal/codec"
	"github.com/strata-db/strata/store"
	"github.com/wI2L/jsondiff"
	"github.com/zeebo/xxh3"
)

// DiffOptions bounds a diff. The zero value means no limit on operations and the default work cap.
type DiffOptions struct {
	// MaxOps stops the diff after this many operations, with Truncated set. 0 means no limit.
	MaxOps int
	// MaxWork caps the edit-script search on one run of changed array elements (Myers' D·(N+M)); beyond it the run
	// is reported as replaced element by element. 0 means 1,000,000.
	MaxWork int
	// MaxValueBytes leaves out of the operations a value whose JSON is longer: it stands as an elision marker,
	// {"$elided": kind, "path": p, "count": n, "bytes": size, "hash": its content hash}, read from its nodes
	// without writing it out. Two markers are equal exactly when their values are. 0 means no limit; front ends set
	// one, since a value's size is not bounded by what requests carry (copy doubles a value in O(1), its nodes
	// shared: found in review, a diff of 40 added copies ran for ever).
	MaxValueBytes uint64
}

// Counts summarises a diff.
type Counts struct {
	Added    int `json:"added"`
	Removed  int `json:"removed"`
	Replaced int `json:"replaced"`
	Moved    int `json:"moved"`
}

// DiffOp is one RFC 6902 operation of a diff. remove and replace also carry the value they remove (OldValue).
type DiffOp struct {
	Op       string          `json:"op"`
	Path     string          `json:"path"`
	From     string          `json:"from,omitempty"`
	Value    json.RawMessage `json:"value,omitempty"`
	OldValue json.RawMessage `json:"old_value,omitempty"`
	// Elided says that Value or OldValue is a marker standing for a value over DiffOptions.MaxValueBytes.
	Elided bool `json:"-"`
}

// DiffResult is a structural diff: applying Operations in order to the first value gives the second.
type DiffResult struct {
	Counts     Counts   `json:"counts"`
	Operations []DiffOp `json:"operations"`
	Truncated  bool     `json:"truncated"`
	// Visited is how many nodes the diff read: a measure of its cost, which grows with the change, not the document.
	Visited int `json:"-"`
}

// Patch returns the operations as a JSON Patch, each remove and replace with its old value as a precondition
// (Operation.OldValue), so that it applies to the first value and refuses a value that differs there.
func (d *DiffResult) Patch() []Operation {
	ops := make([]Operation, len(d.Operations))
	for i, o := range d.Operations {
		ops[i] = Operation{Op: o.Op, Path: o.Path, From: o.From, Value: o.Value, HasValue: o.Value != nil,
			OldValue: o.OldValue, HasOldValue: o.OldValue != nil}
	}
	return ops
}

type differ struct {
	r       *reader
	opts    DiffOptions
	res     *DiffResult
	visited map[[32]byte]bool

	// scratch of anchorsOf, reused from call to call
	anchorTab   []int32
	anchorSeen  []anchorSeen
	anchorMatch []int32
	anchorPairs [][2]int
	lisTails    []int
	lisPrev     []int
	// the two runs trim works on (trim does not recurse)
	trimA, trimB side

	// onRun, when set, receives each run of pieces that differ (aAt and bAt: where the runs begin in a and in b)
	// instead of the run being reported as operations: the three-way merge collects hunks with it.
	onRun func(aAt, bAt uint64, qa, qb []item) error
}

var errTruncated = fmt.Errorf("%w: diff truncated", ErrLimit)

// Diff compares two values structurally. Equal subtrees are skipped by hash, so the cost grows with what changed,
// not with the documents: one changed element in a million-element array reads a handful of nodes.
func (f *Forest) Diff(ctx context.Context, a, b Value, opts *DiffOptions) (*DiffResult, error) {
	d := &differ{r: f.reader(ctx), res: &DiffResult{Operations: []DiffOp{}}, visited: map[[32]byte]bool{}}
	if opts != nil {
		d.opts = *opts
	}
	if d.opts.MaxWork <= 0 {
		d.opts.MaxWork = 1_000_000
	}
	err := d.diff(Pointer{}, a, b)
	d.res.Visited = len(d.visited)
	if err == errTruncated {
		d.res.Truncated = true
		err = nil
	}
	if err != nil {
		return nil, err
	}
	return d.res, nil
}

func (d *differ) json(path string, v Value) (json.RawMessage, error) {
	if d.over(v) {
		h := v.Hash()
		return json.Marshal(struct {
			Elided string `json:"$elided"`
			Path   string `json:"path"`
			Count  uint64 `json:"count,omitempty"`
			Bytes  uint64 `json:"bytes"`
			Hash   string `json:"hash"`
		}{v.Kind().String(), path, v.Len(), v.Size(), hex.EncodeToString(h[:])})
	}
	return d.r.f.AppendJSON(d.r.ctx, nil, v)
}

// over reports whether v is too large to write out in an operation (DiffOptions.MaxValueBytes).
func (d *differ) over(v Value) bool { n := d.opts.MaxValueBytes; return n > 0 && v.Size() > n }

func (d *differ) emit(op DiffOp) error {
	if d.opts.MaxOps > 0 && len(d.res.Operations) >= d.opts.MaxOps {
		return errTruncated
	}
	switch op.Op {
	case "add", "copy":
		d.res.Counts.Added++
	case "remove":
		d.res.Counts.Removed++
	case "replace":
		d.res.Counts.Replaced++
	case "move":
		d.res.Counts.Moved++
	}
	d.res.Operations = append(d.res.Operations, op)
	return nil
}

func (d *differ) replace(p Pointer, a, b Value) error {
	path := p.String()
	old, err := d.json(path, a)
	if err != nil {
		return err
	}
	nv, err := d.json(path, b)
	if err != nil {
		return err
	}
	return d.emit(DiffOp{Op: "replace", Path: path, Value: nv, OldValue: old, Elided: d.over(a) || d.over(b)})
}

func (d *differ) add(path string, b Value) error {
	nv, err := d.json(path, b)
	if err != nil {
		return err
	}
	return d.emit(DiffOp{Op: "add", Path: path, Value: nv, Elided: d.over(b)})
}

func (d *differ) remove(path string, a Value) error {
	old, err := d.json(path, a)
	if err != nil {
		return err
	}
	return d.emit(DiffOp{Op: "remove", Path: path, OldValue: old, Elided: d.over(a)})
}

func (d *differ) diff(p Pointer, a, b Value) error {
	if a == b {
		return nil
	}
	if err := d.r.ctx.Err(); err != nil {
		return err
	}
	ka, kb := a.Kind(), b.Kind()
	if ka != kb || (ka != Object && ka != Array) {
		return d.replace(p, a, b)
	}
	if ka == Object {
		return d.object(p, a, b)
	}
	if isSmall(a) && isSmall(b) {
		return d.small(p, a, b)
	}
	return d.array(p, a, b)
}

// small diffs two inline arrays (at most 1 KiB each) with jsondiff's longest common subsequence. Not with its
// factorisation too (moves and copies): with the LCS, v0.7.1 emits moves whose indexes do not hold in the order the
// operations apply ([0,1] to [1,2,0]: move /0 to /2 in a two-element array; TestDiffSmallArraysExhaustive).
// Objects of any size go through members: renames are found there, and it is several times faster.
func (d *differ) small(p Pointer, a, b Value) error {
	x, err := d.r.materializeExact(a.enc)
	if err != nil {
		return err
	}
	y, err := d.r.materializeExact(b.enc)
	if err != nil {
		return err
	}
	patch, err := jsondiff.CompareWithoutMarshal(x, y, jsondiff.LCS())
	if err != nil {
		return err
	}
	prefix := p.String()
	for _, op := range patch {
		out := DiffOp{Op: op.Type, Path: prefix + op.Path}
		if op.From != "" || op.Type == "move" || op.Type == "copy" {
			out.From = prefix + op.From
		}
		switch op.Type {
		case "add", "replace", "copy", "move", "test":
			if op.Type != "move" && op.Type != "copy" {
				if out.Value, err = marshalExact(op.Value); err != nil {
					return err
				}
			}
		}
		if op.Type == "remove" || op.Type == "replace" {
			if out.OldValue, err = marshalExact(op.OldValue); err != nil {
				return err
			}
		}
		if op.Type == "copy" {
			// A copy is an add of a value found elsewhere; report the value as well, so readers need not resolve it.
			v, err := marshalExact(op.Value)
			if err != nil {
				return err
			}
			out = DiffOp{Op: "add", Path: out.Path, Value: v}
		}
		if err := d.emit(out); err != nil {
			return err
		}
	}
	return nil
}

// isSmall reports whether v is held entirely inline: no subtree of it lives in nodes of its own.
func isSmall(v Value) bool {
	if v.IsTree() {
		return false
	}
	small := true
	_ = codec.WalkRefs(v.enc, func(codec.Ref) error { small = false; return errStop })
	return small
}

// marshalExact writes a value from materializeExact back as JSON, numbers as their exact text.
func marshalExact(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

// materializeExact is materialize with every number as json.Number, the form jsondiff compares exactly.
func (r *reader) materializeExact(enc string) (any, error) { return r.materializeAs(enc, true) }

// item is a piece of a container during a diff: either a subtree (a child reference, not yet read) or one entry.
// It is small (48 bytes) and points into the node it came from, which is immutable, so runs of items are cheap to
// build and copy.
type item struct {
	child *codec.Child // the subtree; nil for an entry
	level int          // level of the referenced node (children only)
	key   string       // entries of objects
	val   string       // entries
}

func (it item) isEntry() bool { return it.child == nil }

func (it item) count() uint64 {
	if it.child == nil {
		return 1
	}
	return it.child.Count
}

func (it item) rank() int {
	if it.child == nil {
		return -1
	}
	return it.level
}

func (it item) same(o item) bool {
	if (it.child == nil) != (o.child == nil) {
		return false
	}
	if it.child == nil {
		return it.key == o.key && it.val == o.val
	}
	return it.child == o.child || it.child.Hash == o.child.Hash
}

// items returns the top-level pieces of a container.
func (d *differ) items(v Value) ([]item, error) {
	if !v.IsTree() {
		es, err := inlineEntries(v)
		if err != nil {
			return nil, err
		}
		return appendEntryItems(make([]item, 0, len(es)), es), nil
	}
	n, err := d.r.root(v)
	if err != nil {
		return nil, err
	}
	ref, _ := v.ref()
	d.visited[ref.Hash] = true
	return appendNodeItems(make([]item, 0, n.Len()), n), nil
}

func appendEntryItems(out []item, es []codec.Entry) []item {
	for _, e := range es {
		out = append(out, item{key: e.Key, val: e.Val})
	}
	return out
}

func appendNodeItems(out []item, n *codec.Node) []item {
	if n.Level == 0 {
		return appendEntryItems(out, n.Entries)
	}
	for i := range n.Children {
		out = append(out, item{child: &n.Children[i], level: n.Level - 1})
	}
	return out
}

// nodeItem returns piece i of node n.
func nodeItem(n *codec.Node, i int) item {
	if n.Level == 0 {
		e := &n.Entries[i]
		return item{key: e.Key, val: e.Val}
	}
	return item{child: &n.Children[i], level: n.Level - 1}
}

// open reads the node of a child item.
func (d *differ) open(it item) (*codec.Node, error) {
	n, err := d.r.node(it.child.Hash)
	if err != nil {
		return nil, err
	}
	if n.Level != it.level {
		return nil, fmt.Errorf("corrupt tree: node at level %d where %d was expected", n.Level, it.level)
	}
	d.visited[it.child.Hash] = true
	return n, nil
}

// side is one run of pieces consumed from both ends, whose end pieces are opened in place: opening an end piece
// puts its node in as a frame instead of copying the rest of the run, so trimming equal pieces costs only the
// pieces looked at, and only what is left in the end is copied (flat).
type side struct {
	fr []runFrame // in order; none is empty
}

// runFrame is a window [lo, hi) of a run (n == nil) or of an opened node's pieces.
type runFrame struct {
	items  []item
	n      *codec.Node
	lo, hi int
}

func (f *runFrame) at(i int) item {
	if f.n == nil {
		return f.items[i]
	}
	return nodeItem(f.n, i)
}

func (f *runFrame) appendTo(out []item) []item {
	if f.n == nil {
		return append(out, f.items[f.lo:f.hi]...)
	}
	for i := f.lo; i < f.hi; i++ {
		out = append(out, nodeItem(f.n, i))
	}
	return out
}

func (s *side) init(q []item) {
	s.fr = s.fr[:0]
	if len(q) > 0 {
		s.fr = append(s.fr, runFrame{items: q, hi: len(q)})
	}
}

func (s *side) empty() bool { return len(s.fr) == 0 }

func (s *side) front() item { return s.fr[0].at(s.fr[0].lo) }

func (s *side) back() item {
	f := &s.fr[len(s.fr)-1]
	return f.at(f.hi - 1)
}

func (s *side) popFront() {
	f := &s.fr[0]
	f.lo++
	if f.lo == f.hi {
		copy(s.fr, s.fr[1:])
		s.fr = s.fr[:len(s.fr)-1]
	}
}

func (s *side) popBack() {
	f := &s.fr[len(s.fr)-1]
	f.hi--
	if f.lo == f.hi {
		s.fr = s.fr[:len(s.fr)-1]
	}
}

// openFront replaces the first piece by the pieces of its node.
func (s *side) openFront(d *differ) error {
	n, err := d.open(s.front())
	if err != nil {
		return err
	}
	s.popFront()
	if n.Len() > 0 {
		s.fr = append(s.fr, runFrame{})
		copy(s.fr[1:], s.fr)
		s.fr[0] = runFrame{n: n, hi: n.Len()}
	}
	return nil
}

// openBack replaces the last piece by the pieces of its node.
func (s *side) openBack(d *differ) error {
	n, err := d.open(s.back())
	if err != nil {
		return err
	}
	s.popBack()
	if n.Len() > 0 {
		s.fr = append(s.fr, runFrame{n: n, hi: n.Len()})
	}
	return nil
}

// flat returns the pieces left, as one run.
func (s *side) flat() []item {
	switch {
	case len(s.fr) == 0:
		return nil
	case len(s.fr) == 1 && s.fr[0].n == nil:
		return s.fr[0].items[s.fr[0].lo:s.fr[0].hi]
	}
	k := 0
	for i := range s.fr {
		k += s.fr[i].hi - s.fr[i].lo
	}
	out := make([]item, 0, k)
	for i := range s.fr {
		out = s.fr[i].appendTo(out)
	}
	return out
}

// members walks two objects in key order and calls fn for each member whose value differs (absent = ""), skipping
// subtrees whose hashes are equal without reading them.
func (d *differ) members(a, b Value, fn func(key, va, vb string) error) error {
	if !a.IsTree() && !b.IsTree() {
		return mergeInline(a.enc, b.enc, fn)
	}
	qa, err := d.items(a)
	if err != nil {
		return err
	}
	qb, err := d.items(b)
	if err != nil {
		return err
	}
	var sa, sb side
	sa.init(qa)
	sb.init(qb)
	for !sa.empty() || !sb.empty() {
		var x, y item
		ea, eb := sa.empty(), sb.empty()
		if !ea {
			x = sa.front()
		}
		if !eb {
			y = sb.front()
		}
		switch {
		case !ea && !eb && !x.isEntry() && !y.isEntry() && x.same(y):
			sa.popFront()
			sb.popFront()
			continue
		case !ea && !x.isEntry() && (eb || x.rank() >= y.rank()):
			if err := sa.openFront(d); err != nil {
				return err
			}
			continue
		case !eb && !y.isEntry():
			if err := sb.openFront(d); err != nil {
				return err
			}
			continue
		}
		// Both fronts are entries (or one side is exhausted).
		switch {
		case eb || (!ea && x.key < y.key):
			err = fn(x.key, x.val, "")
			sa.popFront()
		case ea || y.key < x.key:
			err = fn(y.key, "", y.val)
			sb.popFront()
		default:
			if x.val != y.val {
				err = fn(x.key, x.val, y.val)
			}
			sa.popFront()
			sb.popFront()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// inlineIter walks the members of an inline object straight from its encoding.
type inlineIter struct {
	r        codec.Reader
	left     uint64
	key, val string
	ok       bool
}

func newInlineIter(enc string) inlineIter {
	it := inlineIter{r: codec.Reader{S: enc, I: 1}}
	it.left = it.r.Uvarint()
	it.next()
	return it
}

func (it *inlineIter) next() {
	if it.left == 0 || it.r.Bad {
		it.ok = false
		return
	}
	it.left--
	it.key = it.r.Str(it.r.Uvarint())
	start := it.r.I
	end, err := codec.SkipValue(it.r.S, start)
	if err != nil || it.r.Bad {
		it.r.Bad = true
		it.ok = false
		return
	}
	it.r.I = end
	it.val = it.r.S[start:end]
	it.ok = true
}

// mergeInline is members for two inline objects: a merge join over their encodings, allocating nothing.
func mergeInline(a, b string, fn func(key, va, vb string) error) error {
	x, y := newInlineIter(a), newInlineIter(b)
	for x.ok || y.ok {
		var err error
		switch {
		case !y.ok || (x.ok && x.key < y.key):
			err = fn(x.key, x.val, "")
			x.next()
		case !x.ok || y.key < x.key:
			err = fn(y.key, "", y.val)
			y.next()
		default:
			if x.val != y.val {
				err = fn(x.key, x.val, y.val)
			}
			x.next()
			y.next()
		}
		if err != nil {
			return err
		}
	}
	if x.r.Bad || y.r.Bad || x.left > 0 || y.left > 0 {
		return fmt.Errorf("%w: malformed inline container", store.ErrCorruptNode)
	}
	return nil
}

// positions walks two arrays of the same length in step and calls fn for each index whose element differs.
func (d *differ) positions(a, b Value, fn func(i uint64, va, vb string) error) error {
	qa, err := d.items(a)
	if err != nil {
		return err
	}
	qb, err := d.items(b)
	if err != nil {
		return err
	}
	var sa, sb side
	sa.init(qa)
	sb.init(qb)
	var i uint64
	for !sa.empty() && !sb.empty() {
		x, y := sa.front(), sb.front()
		switch {
		case x.same(y):
			i += x.count()
			sa.popFront()
			sb.popFront()
		case x.isEntry() && y.isEntry():
			if err := fn(i, x.val, y.val); err != nil {
				return err
			}
			i++
			sa.popFront()
			sb.popFront()
		default:
			if err := d.openLarger(&sa, &sb, x, y, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// openLarger opens the first (or last) piece of sa or sb, whichever is the larger subtree (both when they are
// alike), so that the two runs can be compared one level further down.
func (d *differ) openLarger(sa, sb *side, x, y item, front bool) error {
	rx, ry := x.rank(), y.rank()
	if rx >= ry {
		if err := sa.open(d, front); err != nil {
			return err
		}
	}
	if ry >= rx {
		if err := sb.open(d, front); err != nil {
			return err
		}
	}
	return nil
}

func (s *side) open(d *differ, front bool) error {
	if front {
		return s.openFront(d)
	}
	return s.openBack(d)
}

// object diffs two objects member by member, skipping subtrees whose hashes are equal.
func (d *differ) object(p Pointer, a, b Value) error {
	var removed, added []item
	err := d.members(a, b, func(key, va, vb string) error {
		switch {
		case vb == "":
			removed = append(removed, item{key: key, val: va})
		case va == "":
			added = append(added, item{key: key, val: vb})
		default:
			return d.diff(p.Child(key), Value{va}, Value{vb})
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(removed) == 0 && len(added) == 0 {
		return nil
	}
	// A member removed under one name and added under another with the same (non-trivial) value is a move.
	moved := map[int]int{}
	if len(removed) > 0 && len(added) > 0 {
		byVal := map[string][]int{}
		for i, it := range removed {
			if len(it.val) >= 8 {
				byVal[it.val] = append(byVal[it.val], i)
			}
		}
		for j, it := range added {
			if is := byVal[it.val]; len(is) > 0 {
				moved[is[0]] = j
				byVal[it.val] = is[1:]
			}
		}
	}
	movedTo := map[int]bool{}
	for i, it := range removed {
		if j, ok := moved[i]; ok {
			movedTo[j] = true
			if err := d.emit(DiffOp{Op: "move", From: p.Child(it.key).String(), Path: p.Child(added[j].key).String()}); err != nil {
				return err
			}
			continue
		}
		if err := d.remove(p.Child(it.key).String(), Value{it.val}); err != nil {
			return err
		}
	}
	for j, it := range added {
		if movedTo[j] {
			continue
		}
		if err := d.add(p.Child(it.key).String(), Value{it.val}); err != nil {
			return err
		}
	}
	return nil
}

// array diffs two arrays. Runs of equal subtrees are skipped by hash at every level; what remains is aligned by
// anchors (pieces that occur once on each side) and, at the level of elements, by Myers' edit script.
func (d *differ) array(p Pointer, a, b Value) error {
	qa, err := d.items(a)
	if err != nil {
		return err
	}
	qb, err := d.items(b)
	if err != nil {
		return err
	}
	return d.run(p, qa, qb, 0, 0)
}

// trim drops the common prefix and suffix of two runs, opening subtrees until the first (last) difference, and
// returns how many elements the prefix held. Opened nodes are walked in place; only what is left is copied.
func (d *differ) trim(qa, qb []item) ([]item, []item, uint64, error) {
	var at uint64
	sa, sb := &d.trimA, &d.trimB
	sa.init(qa)
	sb.init(qb)
	for !sa.empty() && !sb.empty() {
		x, y := sa.front(), sb.front()
		if x.same(y) {
			at += x.count()
			sa.popFront()
			sb.popFront()
			continue
		}
		if x.isEntry() && y.isEntry() {
			break
		}
		if err := d.openLarger(sa, sb, x, y, true); err != nil {
			return nil, nil, 0, err
		}
	}
	for !sa.empty() && !sb.empty() {
		x, y := sa.back(), sb.back()
		if x.same(y) {
			sa.popBack()
			sb.popBack()
			continue
		}
		if x.isEntry() && y.isEntry() {
			break
		}
		if err := d.openLarger(sa, sb, x, y, false); err != nil {
			return nil, nil, 0, err
		}
	}
	return sa.flat(), sb.flat(), at, nil
}

// run diffs two runs of array pieces; at is the index, in the array as the previous operations left it (that is,
// in b), where the runs begin, and aAt the same index in a.
func (d *differ) run(p Pointer, qa, qb []item, at, aAt uint64) error {
	for {
		var skip uint64
		var err error
		if qa, qb, skip, err = d.trim(qa, qb); err != nil {
			return err
		}
		at, aAt = at+skip, aAt+skip
		if len(qa) == 0 && len(qb) == 0 {
			return nil
		}
		if len(qa) == 0 || len(qb) == 0 {
			if d.onRun != nil {
				return d.onRun(aAt, at, qa, qb)
			}
			return d.removeAdd(p, qa, qb, at)
		}
		allEntries := true
		for _, it := range qa {
			allEntries = allEntries && it.isEntry()
		}
		for _, it := range qb {
			allEntries = allEntries && it.isEntry()
		}
		if allEntries {
			if d.onRun != nil {
				return d.onRun(aAt, at, qa, qb)
			}
			return d.elements(p, qa, qb, at)
		}
		// Split at anchors: pieces found exactly once on each side, in the same order.
		if anchors := d.anchorsOf(qa, qb); len(anchors) > 0 {
			ia, ib := 0, 0
			for _, an := range anchors {
				if err := d.run(p, qa[ia:an[0]], qb[ib:an[1]], at, aAt); err != nil {
					return err
				}
				at += sumCount(qb[ib:an[1]]) + qb[an[1]].count()
				aAt += sumCount(qa[ia:an[0]]) + qa[an[0]].count()
				ia, ib = an[0]+1, an[1]+1
			}
			return d.run(p, qa[ia:], qb[ib:], at, aAt)
		}
		// No anchors at this granularity: open the largest pieces on both sides and try again.
		if qa, err = d.expandTop(qa); err != nil {
			return err
		}
		if qb, err = d.expandTop(qb); err != nil {
			return err
		}
	}
}

func sumCount(its []item) uint64 {
	var n uint64
	for _, it := range its {
		n += it.count()
	}
	return n
}

// expandTop opens every child piece of the highest level present.
func (d *differ) expandTop(q []item) ([]item, error) {
	top := -1
	for _, it := range q {
		top = max(top, it.rank())
	}
	if top < 0 {
		return q, nil
	}
	var nodes []*codec.Node
	size := 0
	for _, it := range q {
		if it.rank() == top {
			n, err := d.open(it)
			if err != nil {
				return nil, err
			}
			nodes = append(nodes, n)
			size += n.Len()
		} else {
			size++
		}
	}
	out := make([]item, 0, size)
	for _, it := range q {
		if it.rank() == top {
			out = appendNodeItems(out, nodes[0])
			nodes = nodes[1:]
		} else {
			out = append(out, it)
		}
	}
	return out, nil
}

// anchorKey hashes a piece's identity for anchoring: an element's bytes, or a subtree's address.
func anchorKey(it item) uint64 {
	if it.child == nil {
		return xxh3.HashString(it.val)
	}
	return binary.LittleEndian.Uint64(it.child.Hash[:8]) | 1
}

// sameAnchor reports whether two pieces have the same identity for anchoring (elements compare by value only).
func sameAnchor(x, y item) bool {
	if (x.child == nil) != (y.child == nil) {
		return false
	}
	if x.child == nil {
		return x.val == y.val
	}
	return x.child.Hash == y.child.Hash
}

// anchorSeen counts the occurrences of one identity: the last index on each side and how many on each side.
type anchorSeen struct {
	key          uint64
	a, b, na, nb int
}

// anchorsOf returns index pairs (in qa, in qb) of pieces unique on both sides, forming the longest increasing
// sequence (patience alignment). It uses an open-addressing table kept in d between calls.
func (d *differ) anchorsOf(qa, qb []item) [][2]int {
	size := 16
	for size < 2*len(qa)+2 {
		size <<= 1
	}
	if cap(d.anchorTab) < size {
		d.anchorTab = make([]int32, size)
	}
	tab := d.anchorTab[:size]
	clear(tab)
	mask := uint64(size - 1)
	seen := d.anchorSeen[:0]
	// slot returns the table slot of it's identity: occupied (tab[slot] > 0) when it is known.
	slot := func(it item, key uint64) uint64 {
		i := key & mask
		for tab[i] != 0 {
			s := &seen[tab[i]-1]
			if s.key == key && sameAnchor(qa[s.a], it) {
				return i
			}
			i = (i + 1) & mask
		}
		return i
	}
	for i, it := range qa {
		key := anchorKey(it)
		k := slot(it, key)
		if tab[k] == 0 {
			seen = append(seen, anchorSeen{key: key})
			tab[k] = int32(len(seen))
		}
		s := &seen[tab[k]-1]
		s.a, s.na = i, s.na+1
	}
	match := d.anchorMatch[:0]
	for j, it := range qb {
		k := slot(it, anchorKey(it))
		if tab[k] == 0 {
			match = append(match, -1)
			continue
		}
		s := &seen[tab[k]-1]
		s.b, s.nb = j, s.nb+1
		match = append(match, tab[k]-1)
	}
	pairs := d.anchorPairs[:0]
	for j, m := range match {
		if m < 0 {
			continue
		}
		if s := &seen[m]; s.na == 1 && s.nb == 1 && s.b == j {
			pairs = append(pairs, [2]int{s.a, j})
		}
	}
	d.anchorSeen, d.anchorMatch, d.anchorPairs = seen, match, pairs
	var out [][2]int
	out, d.lisTails, d.lisPrev = longestIncreasing(pairs, d.lisTails, d.lisPrev)
	return out
}

// longestIncreasing keeps the longest subsequence of pairs (ordered by the second index) whose first indexes rise.
// tails and prev are scratch space, returned for reuse.
func longestIncreasing(pairs [][2]int, tails, prev []int) (out [][2]int, _, _ []int) {
	if len(pairs) == 0 {
		return nil, tails, prev
	}
	tails = tails[:0] // index into pairs of the smallest tail of each length
	if cap(prev) < len(pairs) {
		prev = make([]int, len(pairs))
	}
	prev = prev[:len(pairs)]
	for i, pr := range pairs {
		lo, hi := 0, len(tails)
		for lo < hi {
			mid := (lo + hi) / 2
			if pairs[tails[mid]][0] < pr[0] {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		if lo > 0 {
			prev[i] = tails[lo-1]
		} else {
			prev[i] = -1
		}
		if lo == len(tails) {
			tails = append(tails, i)
		} else {
			tails[lo] = i
		}
	}
	out = make([][2]int, len(tails))
	for k, i := len(tails)-1, tails[len(tails)-1]; k >= 0; k, i = k-1, prev[i] {
		out[k] = pairs[i]
	}
	return out, tails, prev
}

// removeAdd reports the pieces of qa as removed and those of qb as added, at index at.
func (d *differ) removeAdd(p Pointer, qa, qb []item, at uint64) error {
	for _, it := range qa {
		if err := d.eachEntry(it, func(val string) error {
			return d.remove(p.Child(strconv.FormatUint(at, 10)).String(), Value{val})
		}); err != nil {
			return err
		}
	}
	for _, it := range qb {
		if err := d.eachEntry(it, func(val string) error {
			err := d.add(p.Child(strconv.FormatUint(at, 10)).String(), Value{val})
			at++
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

func (d *differ) eachEntry(it item, fn func(val string) error) error {
	if it.isEntry() {
		return fn(it.val)
	}
	n, err := d.r.node(it.child.Hash)
	if err != nil {
		return err
	}
	d.visited[it.child.Hash] = true
	return d.r.eachNode(n, 0, func(_, val string) error { return fn(val) })
}

// elements aligns two runs of elements with Myers' algorithm and reports the edit script. A removal next to an
// insertion is reported as a replacement (diffed inside when both are containers of the same kind).
func (d *differ) elements(p Pointer, qa, qb []item, at uint64) error {
	if len(qa) == 1 && len(qb) == 1 {
		// The script of one element against another: equal, or a removal next to an insertion.
		if qa[0].val == qb[0].val {
			return nil
		}
		return d.diff(p.Child(strconv.FormatUint(at, 10)), Value{qa[0].val}, Value{qb[0].val})
	}
	script, ok := myers(qa, qb, d.opts.MaxWork)
	if !ok {
		script = nil // over the work cap: pair the runs up element by element
		for i := 0; i < max(len(qa), len(qb)); i++ {
			if i < len(qa) {
				script = append(script, edit{kind: 'd', a: i})
			}
			if i < len(qb) {
				script = append(script, edit{kind: 'i', b: i})
			}
		}
	}
	i := 0
	for i < len(script) {
		if script[i].kind == '=' {
			at++
			i++
			continue
		}
		var dels, ins []int
		for i < len(script) && script[i].kind != '=' {
			if script[i].kind == 'd' {
				dels = append(dels, script[i].a)
			} else {
				ins = append(ins, script[i].b)
			}
			i++
		}
		k := 0
		for ; k < len(dels) && k < len(ins); k++ {
			if err := d.diff(p.Child(strconv.FormatUint(at, 10)), Value{qa[dels[k]].val}, Value{qb[ins[k]].val}); err != nil {
				return err
			}
			at++
		}
		for _, x := range dels[k:] {
			if err := d.remove(p.Child(strconv.FormatUint(at, 10)).String(), Value{qa[x].val}); err != nil {
				return err
			}
		}
		for _, y := range ins[k:] {
			if err := d.add(p.Child(strconv.FormatUint(at, 10)).String(), Value{qb[y].val}); err != nil {
				return err
			}
			at++
		}
	}
	return nil
}

type edit struct {
	kind byte // '=', 'd' (delete qa[a]), 'i' (insert qb[b])
	a, b int
}

// myers computes a shortest edit script between two runs of elements, or reports false when it would take more
// than maxWork steps.
func myers(qa, qb []item, maxWork int) ([]edit, bool) {
	n, m := len(qa), len(qb)
	maxD := n + m
	if maxD > 0 && maxD*maxD > maxWork {
		maxD = max(1, maxWork/maxD)
	}
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int // trace[d] holds v[-(d+1) .. d+1] as it was before step d
	for dd := 0; dd <= maxD; dd++ {
		trace = append(trace, append([]int(nil), v[off-dd-1:off+dd+2]...))
		for k := -dd; k <= dd; k += 2 {
			var x int
			if k == -dd || (k != dd && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && qa[x].val == qb[y].val {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, dd, n, m), true
			}
		}
	}
	return nil, false
}

func backtrack(trace [][]int, dd, n, m int) []edit {
	var out []edit
	x, y := n, m
	for d := dd; d > 0; d-- {
		at := func(k int) int { return trace[d][k+d+1] }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		for x > px && y > py {
			x--
			y--
			out = append(out, edit{kind: '=', a: x, b: y})
		}
		if x == px {
			y--
			out = append(out, edit{kind: 'i', b: y})
		} else {
			x--
			out = append(out, edit{kind: 'd', a: x})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		out = append(out, edit{kind: '=', a: x, b: y})
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

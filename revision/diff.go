package revision

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/strata-db/strata/revision/internal/codec"
	"github.com/wI2L/jsondiff"
)

// DiffOptions bounds a diff. The zero value means no limit on operations and the default work cap.
type DiffOptions struct {
	// MaxOps stops the diff after this many operations, with Truncated set. 0 means no limit.
	MaxOps int
	// MaxWork caps the edit-script search on one run of changed array elements (Myers' D·(N+M)); beyond it the run
	// is reported as replaced element by element. 0 means 1,000,000.
	MaxWork int
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
}

// DiffResult is a structural diff: applying Operations in order to the first value gives the second.
type DiffResult struct {
	Counts     Counts   `json:"counts"`
	Operations []DiffOp `json:"operations"`
	Truncated  bool     `json:"truncated"`
	// Visited is how many nodes the diff read: a measure of its cost, which grows with the change, not the document.
	Visited int `json:"-"`
}

// Patch returns the operations as a JSON Patch (without old values).
func (d *DiffResult) Patch() []Operation {
	ops := make([]Operation, len(d.Operations))
	for i, o := range d.Operations {
		ops[i] = Operation{Op: o.Op, Path: o.Path, From: o.From, Value: o.Value, HasValue: o.Value != nil}
	}
	return ops
}

type differ struct {
	r       *reader
	opts    DiffOptions
	res     *DiffResult
	visited map[[32]byte]bool
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

func (d *differ) json(v Value) (json.RawMessage, error) {
	return d.r.f.AppendJSON(d.r.ctx, nil, v)
}

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
	old, err := d.json(a)
	if err != nil {
		return err
	}
	nv, err := d.json(b)
	if err != nil {
		return err
	}
	return d.emit(DiffOp{Op: "replace", Path: p.String(), Value: nv, OldValue: old})
}

func (d *differ) add(path string, b Value) error {
	nv, err := d.json(b)
	if err != nil {
		return err
	}
	return d.emit(DiffOp{Op: "add", Path: path, Value: nv})
}

func (d *differ) remove(path string, a Value) error {
	old, err := d.json(a)
	if err != nil {
		return err
	}
	return d.emit(DiffOp{Op: "remove", Path: path, OldValue: old})
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

// small diffs two inline arrays (at most 1 KiB each) with jsondiff, which finds moved and copied elements too.
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
	patch, err := jsondiff.CompareWithoutMarshal(x, y, jsondiff.Factorize(), jsondiff.LCS())
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
type item struct {
	isEntry bool
	level   int // level of the referenced node (children only)
	child   codec.Child
	key     string // entries of objects
	val     string // entries
}

func (it item) count() uint64 {
	if it.isEntry {
		return 1
	}
	return it.child.Count
}

func (it item) rank() int {
	if it.isEntry {
		return -1
	}
	return it.level
}

func (it item) same(o item) bool {
	if it.isEntry != o.isEntry {
		return false
	}
	if it.isEntry {
		return it.key == o.key && it.val == o.val
	}
	return it.child.Hash == o.child.Hash
}

// items returns the top-level pieces of a container.
func (d *differ) items(v Value) ([]item, error) {
	if !v.IsTree() {
		es, err := inlineEntries(v)
		if err != nil {
			return nil, err
		}
		return entryItems(es), nil
	}
	n, err := d.r.root(v)
	if err != nil {
		return nil, err
	}
	ref, _ := v.ref()
	d.visited[ref.Hash] = true
	return nodeItems(n), nil
}

func entryItems(es []codec.Entry) []item {
	out := make([]item, len(es))
	for i, e := range es {
		out[i] = item{isEntry: true, key: e.Key, val: e.Val}
	}
	return out
}

func nodeItems(n *codec.Node) []item {
	if n.Level == 0 {
		return entryItems(n.Entries)
	}
	out := make([]item, len(n.Children))
	for i, c := range n.Children {
		out[i] = item{level: n.Level - 1, child: c}
	}
	return out
}

// expand replaces a child item by the pieces of its node.
func (d *differ) expand(it item) ([]item, error) {
	n, err := d.r.node(it.child.Hash)
	if err != nil {
		return nil, err
	}
	if n.Level != it.level {
		return nil, fmt.Errorf("corrupt tree: node at level %d where %d was expected", n.Level, it.level)
	}
	d.visited[it.child.Hash] = true
	return nodeItems(n), nil
}

// members walks two objects in key order and calls fn for each member whose value differs (absent = ""), skipping
// subtrees whose hashes are equal without reading them.
func (d *differ) members(a, b Value, fn func(key, va, vb string) error) error {
	qa, err := d.items(a)
	if err != nil {
		return err
	}
	qb, err := d.items(b)
	if err != nil {
		return err
	}
	for len(qa) > 0 || len(qb) > 0 {
		switch {
		case len(qa) > 0 && len(qb) > 0 && !qa[0].isEntry && !qb[0].isEntry && qa[0].same(qb[0]):
			qa, qb = qa[1:], qb[1:]
			continue
		case len(qa) > 0 && !qa[0].isEntry && (len(qb) == 0 || qa[0].rank() >= qb[0].rank()):
			ex, err := d.expand(qa[0])
			if err != nil {
				return err
			}
			qa = append(ex, qa[1:]...)
			continue
		case len(qb) > 0 && !qb[0].isEntry:
			ex, err := d.expand(qb[0])
			if err != nil {
				return err
			}
			qb = append(ex, qb[1:]...)
			continue
		}
		// Both fronts are entries (or one side is exhausted).
		switch {
		case len(qb) == 0 || (len(qa) > 0 && qa[0].key < qb[0].key):
			err = fn(qa[0].key, qa[0].val, "")
			qa = qa[1:]
		case len(qa) == 0 || qb[0].key < qa[0].key:
			err = fn(qb[0].key, "", qb[0].val)
			qb = qb[1:]
		default:
			if qa[0].val != qb[0].val {
				err = fn(qa[0].key, qa[0].val, qb[0].val)
			}
			qa, qb = qa[1:], qb[1:]
		}
		if err != nil {
			return err
		}
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
	var i uint64
	for len(qa) > 0 && len(qb) > 0 {
		x, y := qa[0], qb[0]
		switch {
		case x.same(y):
			i += x.count()
			qa, qb = qa[1:], qb[1:]
		case x.isEntry && y.isEntry:
			if err := fn(i, x.val, y.val); err != nil {
				return err
			}
			i++
			qa, qb = qa[1:], qb[1:]
		default:
			var err error
			if qa, qb, err = d.openLarger(qa, qb, 0, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// object diffs two objects member by member, skipping subtrees whose hashes are equal.
func (d *differ) object(p Pointer, a, b Value) error {
	var removed, added []item
	err := d.members(a, b, func(key, va, vb string) error {
		switch {
		case vb == "":
			removed = append(removed, item{isEntry: true, key: key, val: va})
		case va == "":
			added = append(added, item{isEntry: true, key: key, val: vb})
		default:
			return d.diff(p.Child(key), Value{va}, Value{vb})
		}
		return nil
	})
	if err != nil {
		return err
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
	return d.run(p, qa, qb, 0)
}

// run diffs two runs of array pieces; at is the index, in the array as the previous operations left it, where the
// runs begin.
func (d *differ) run(p Pointer, qa, qb []item, at uint64) error {
	for {
		// Trim the common prefix, opening subtrees until the first difference.
		for len(qa) > 0 && len(qb) > 0 {
			x, y := qa[0], qb[0]
			if x.same(y) {
				at += x.count()
				qa, qb = qa[1:], qb[1:]
				continue
			}
			if x.isEntry && y.isEntry {
				break
			}
			var err error
			if qa, qb, err = d.openLarger(qa, qb, 0, 0); err != nil {
				return err
			}
		}
		// Trim the common suffix the same way.
		for len(qa) > 0 && len(qb) > 0 {
			x, y := qa[len(qa)-1], qb[len(qb)-1]
			if x.same(y) {
				qa, qb = qa[:len(qa)-1], qb[:len(qb)-1]
				continue
			}
			if x.isEntry && y.isEntry {
				break
			}
			var err error
			if qa, qb, err = d.openLarger(qa, qb, len(qa)-1, len(qb)-1); err != nil {
				return err
			}
		}
		if len(qa) == 0 || len(qb) == 0 {
			return d.removeAdd(p, qa, qb, at)
		}
		allEntries := true
		for _, it := range qa {
			allEntries = allEntries && it.isEntry
		}
		for _, it := range qb {
			allEntries = allEntries && it.isEntry
		}
		if allEntries {
			return d.elements(p, qa, qb, at)
		}
		// Split at anchors: pieces found exactly once on each side, in the same order.
		if anchors := anchorsOf(qa, qb); len(anchors) > 0 {
			ia, ib := 0, 0
			for _, an := range anchors {
				if err := d.run(p, qa[ia:an[0]], qb[ib:an[1]], at); err != nil {
					return err
				}
				at += sumCount(qb[ib:an[1]]) + qb[an[1]].count()
				ia, ib = an[0]+1, an[1]+1
			}
			return d.run(p, qa[ia:], qb[ib:], at)
		}
		// No anchors at this granularity: open the largest pieces on both sides and try again.
		var err error
		if qa, err = d.expandTop(qa); err != nil {
			return err
		}
		if qb, err = d.expandTop(qb); err != nil {
			return err
		}
	}
}

// openLarger replaces the piece at qa[i] or qb[j], whichever is the larger subtree (both when they are alike), by
// the pieces of its node, so that the two runs can be compared one level further down.
func (d *differ) openLarger(qa, qb []item, i, j int) ([]item, []item, error) {
	rx, ry := qa[i].rank(), qb[j].rank()
	var err error
	if rx >= ry {
		if qa, err = d.openAt(qa, i); err != nil {
			return nil, nil, err
		}
	}
	if ry >= rx {
		if qb, err = d.openAt(qb, j); err != nil {
			return nil, nil, err
		}
	}
	return qa, qb, nil
}

// openAt replaces q[i] by the pieces of its node.
func (d *differ) openAt(q []item, i int) ([]item, error) {
	ex, err := d.expand(q[i])
	if err != nil {
		return nil, err
	}
	out := make([]item, 0, len(q)-1+len(ex))
	out = append(out, q[:i]...)
	out = append(out, ex...)
	return append(out, q[i+1:]...), nil
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
	out := make([]item, 0, len(q)*4)
	for _, it := range q {
		if it.rank() == top {
			ex, err := d.expand(it)
			if err != nil {
				return nil, err
			}
			out = append(out, ex...)
		} else {
			out = append(out, it)
		}
	}
	return out, nil
}

// anchorsOf returns index pairs (in qa, in qb) of pieces unique on both sides, forming the longest increasing
// sequence (patience alignment).
func anchorsOf(qa, qb []item) [][2]int {
	type seen struct{ a, b, na, nb int }
	children := map[[32]byte]*seen{}
	entries := map[string]*seen{}
	lookup := func(it item, create bool) *seen {
		var s *seen
		if it.isEntry {
			s = entries[it.val]
		} else {
			s = children[it.child.Hash]
		}
		if s == nil && create {
			s = &seen{}
			if it.isEntry {
				entries[it.val] = s
			} else {
				children[it.child.Hash] = s
			}
		}
		return s
	}
	for i, it := range qa {
		s := lookup(it, true)
		s.a, s.na = i, s.na+1
	}
	var pairs [][2]int
	for j, it := range qb {
		if s := lookup(it, false); s != nil {
			s.b, s.nb = j, s.nb+1
		}
	}
	for j, it := range qb {
		if s := lookup(it, false); s != nil && s.na == 1 && s.nb == 1 && s.b == j {
			pairs = append(pairs, [2]int{s.a, j})
		}
	}
	return longestIncreasing(pairs)
}

// longestIncreasing keeps the longest subsequence of pairs (ordered by the second index) whose first indexes rise.
func longestIncreasing(pairs [][2]int) [][2]int {
	if len(pairs) == 0 {
		return nil
	}
	tails := []int{} // index into pairs of the smallest tail of each length
	prev := make([]int, len(pairs))
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
	out := make([][2]int, len(tails))
	for k, i := len(tails)-1, tails[len(tails)-1]; k >= 0; k, i = k-1, prev[i] {
		out[k] = pairs[i]
	}
	return out
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
	if it.isEntry {
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

package revision

import (
	"context"
	"fmt"
	"sync"

	"github.com/strata-db/strata/revision/internal/codec"
	"github.com/strata-db/strata/store"
)

// txn is one write in progress: the nodes it builds live in an overlay until the caller takes the ones the final
// root still reaches. Intermediate versions (between the operations of one patch) are never written.
type txn struct {
	reader
	prep *preparer // the nodes handed to the forest's prepare function, when it has one
}

func (f *Forest) newTxn(ctx context.Context) *txn {
	return &txn{reader: reader{f: f, ctx: ctx, overlay: make(map[store.Hash]*codec.Node)}}
}

// emit records a node built by this write.
func (t *txn) emit(c codec.Child, raw string) error {
	if _, ok := t.overlay[c.Hash]; ok {
		return nil
	}
	n, err := codec.ParseNode(raw)
	if err != nil {
		return fmt.Errorf("internal error: built a node that does not decode: %v", err)
	}
	t.overlay[c.Hash] = n
	if t.f.prepare != nil {
		if t.prep == nil {
			t.prep = &preparer{ctx: t.ctx, fn: t.f.prepare}
		}
		t.prep.add(c.Hash, raw)
	}
	return nil
}

// newNodes returns the nodes built by this write that root reaches, in no particular order.
func (t *txn) newNodes(root Value) ([]store.Node, error) {
	prepared := t.prep.wait()
	var out []store.Node
	err := t.reachable(root, func(h store.Hash, n *codec.Node) {
		if pn, ok := prepared[h]; ok {
			out = append(out, pn)
		} else {
			out = append(out, storeNode(h, n.Raw))
		}
	})
	return out, err
}

// reachable calls fn once for each node of the overlay (built by this write) that root reaches.
func (t *txn) reachable(root Value, fn func(h store.Hash, n *codec.Node)) error {
	seen := make(map[store.Hash]bool)
	var visit func(enc string) error
	var visitNode func(h store.Hash) error
	visit = func(enc string) error {
		return codec.WalkRefs(enc, func(ref codec.Ref) error { return visitNode(ref.Hash) })
	}
	// Most children are old nodes: a bitmap of the first bytes of the overlay's hashes turns them away before the
	// map lookup.
	var first [4]uint64
	for h := range t.overlay {
		first[h[0]>>6] |= 1 << (h[0] & 63)
	}
	visitNode = func(h store.Hash) error {
		if first[h[0]>>6]&(1<<(h[0]&63)) == 0 {
			return nil
		}
		n, ok := t.overlay[h]
		if !ok || seen[h] {
			return nil
		}
		seen[h] = true
		fn(h, n)
		for _, c := range n.Children {
			if err := visitNode(c.Hash); err != nil {
				return err
			}
		}
		if n.NoRefs {
			return nil
		}
		for _, e := range n.Entries {
			if err := visit(e.Val); err != nil {
				return err
			}
		}
		return nil
	}
	return visit(root.enc)
}

// buildEntries builds a container afresh from its entries (inline containers, and anything small).
func (t *txn) buildEntries(leafKind byte, entries []codec.Entry) (Value, error) {
	b := newBuilder(leafKind, t.emit)
	for _, e := range entries {
		if err := b.addEntry(e.Key, e.Val); err != nil {
			return Value{}, err
		}
	}
	return b.finish()
}

// replaceLeaf gives the leaf at loc.path[0] the entries newEntries and rebuilds the tree above it. Re-chunking starts
// at the edited leaf (an old boundary, so the chunker starts fresh there) and runs until a new boundary falls on an
// old one; then the same is done one level up with the new nodes in place of the ones consumed, up to the root. Every
// node outside that path is shared with the old tree.
func (t *txn) replaceLeaf(loc located, newEntries []codec.Entry) (Value, error) {
	if !loc.tree {
		return t.buildEntries(loc.leafKind, newEntries)
	}
	start := loc.path
	end := append([]pos(nil), loc.path...)
	end[0].idx = len(end[0].node.Entries) - 1 // the whole old leaf is replaced
	h := len(start) - 1
	var repl []codec.Child
	scratch := chunkBufs.Get().(*chunkBuf)
	defer func() {
		if cap(scratch.b) <= 1<<20 { // an outsized entry grew it: let it go
			chunkBufs.Put(scratch)
		}
	}()
	for l := 0; l <= h; l++ {
		kind := loc.leafKind
		if l > 0 {
			kind = codec.InnerKind(loc.leafKind)
		}
		var out []codec.Child
		ch := newNodeChunker(kind, l, scratch.b, func(c codec.Child, n *codec.Node) error {
			out = append(out, c)
			if _, ok := t.overlay[c.Hash]; !ok {
				t.overlay[c.Hash] = n
			}
			return nil
		})
		ch.children = scratch.children[:0]
		feedFrom := func(n *codec.Node, from int) error {
			if l == 0 {
				for _, e := range n.Entries[from:] {
					if err := ch.addEntry(e.Key, e.Val); err != nil {
						return err
					}
				}
				return nil
			}
			for _, c := range n.Children[from:] {
				if err := ch.addChild(c); err != nil {
					return err
				}
			}
			return nil
		}
		if l == 0 {
			// The entries before the first one that changed start the old leaf: they go in as one block.
			old := start[0].node
			k := 0
			for k < len(newEntries) && k < len(old.Entries)-1 && newEntries[k] == old.Entries[k] {
				k++
			}
			ch.addPrefix(old, k)
			for _, e := range newEntries[k:] {
				if err := ch.addEntry(e.Key, e.Val); err != nil {
					return Value{}, err
				}
			}
		} else {
			p := start[l]
			ch.addPrefix(p.node, p.idx)
			for _, c := range repl {
				if err := ch.addChild(c); err != nil {
					return Value{}, err
				}
			}
			if err := feedFrom(end[l].node, end[l].idx+1); err != nil {
				return Value{}, err
			}
		}
		// Continue through the following old nodes of this level until a new boundary meets an old one.
		for ch.pending() {
			next, err := t.advance(end, l)
			if err != nil {
				return Value{}, err
			}
			if next == nil {
				break
			}
			end[l] = pos{next, next.Len() - 1}
			if err := feedFrom(next, 0); err != nil {
				return Value{}, err
			}
		}
		if err := ch.cut(); err != nil {
			return Value{}, err
		}
		scratch.b, scratch.children = ch.buf[:0], ch.children[:0]
		repl = out
	}
	return t.topValue(loc.leafKind, h, repl)
}

// chunkBuf is the scratch space of a chunker in replaceLeaf: every node is copied out of it when cut.
type chunkBuf struct {
	b        []byte
	children []codec.Child
}

var chunkBufs = sync.Pool{New: func() any {
	return &chunkBuf{b: make([]byte, 0, maxChunk+maxInlineS), children: make([]codec.Child, 0, 256)}
}}

// advance moves end[l] to the next node of level l and returns it, or nil at the end of the sequence. It moves the
// positions above as needed; end[l+1] then names the parent entry of the returned node.
func (t *txn) advance(end []pos, l int) (*codec.Node, error) {
	if l+1 >= len(end) {
		return nil, nil
	}
	p := end[l+1]
	if p.idx+1 < len(p.node.Children) {
		p.idx++
	} else {
		nn, err := t.advance(end, l+1)
		if err != nil || nn == nil {
			return nil, err
		}
		p = pos{nn, 0}
	}
	end[l+1] = p
	return t.child(p.node.Children[p.idx].Hash, p.node)
}

// topValue makes a container value from the nodes of its highest rebuilt level.
func (t *txn) topValue(leafKind byte, level int, top []codec.Child) (Value, error) {
	switch len(top) {
	case 0:
		return emptyContainer(leafKind), nil
	case 1:
		c := top[0]
		n := t.overlay[c.Hash]
		// A root with a single child is not canonical: the tree built from scratch would stop one level lower.
		for n.Level > 0 && len(n.Children) == 1 {
			c = n.Children[0]
			var err error
			if n, err = t.node(c.Hash); err != nil {
				return Value{}, err
			}
		}
		if n.Level == 0 && len(n.Raw) <= maxInline {
			return Value{string(codec.InlineTag(leafKind)) + n.Raw[1:]}, nil
		}
		return refValue(leafKind, c), nil
	}
	b := newBuilderAt(leafKind, level+1, t.emit)
	for _, c := range top {
		if err := b.addChild(c); err != nil {
			return Value{}, err
		}
	}
	return b.finish()
}

// editKind says what to do at the last step of a path.
type editKind int

const (
	editReplace editKind = iota // the member or element must exist; it becomes nv
	editAdd                     // objects: insert or replace; arrays: insert before the index ("-" appends)
	editRemove                  // the member or element must exist; it goes
)

var editOpNames = [...]string{"replace", "add", "remove"}

// setIn applies an edit at ptr inside v and returns the new v and the value that was there before (zero if none).
func (t *txn) setIn(v Value, ptr Pointer, k int, kind editKind, nv Value) (Value, Value, error) {
	if k == len(ptr)-1 {
		return t.editChild(v, ptr, kind, nv)
	}
	child, err := t.step(v, ptr, k, editOpNames[kind])
	if err != nil {
		return Value{}, Value{}, err
	}
	newChild, old, err := t.setIn(child, ptr, k+1, kind, nv)
	if err != nil {
		return Value{}, Value{}, err
	}
	if newChild == child {
		return v, old, nil
	}
	sub := ptr[:k+1]
	nv2, _, err := t.editChild(v, sub, editReplace, newChild)
	return nv2, old, err
}

// editChild applies an edit to the member or element ptr[len-1] of container v (the value at ptr[:len-1]).
func (t *txn) editChild(v Value, ptr Pointer, kind editKind, nv Value) (Value, Value, error) {
	k := len(ptr) - 1
	tok := ptr[k]
	op := editOpNames[kind]
	parent := ptr[:k] // formatted only for an error
	switch v.Kind() {
	case Object:
		loc, err := t.locateKey(v, tok)
		if err != nil {
			return Value{}, Value{}, err
		}
		var old Value
		es := loc.entries
		switch {
		case loc.found:
			old = loc.val()
			if kind == editRemove {
				es = splice(es, loc.idx, 1)
			} else {
				if old == nv {
					return v, old, nil
				}
				es = replaceAt(es, loc.idx, codec.Entry{Key: tok, Val: nv.enc})
			}
		case kind == editAdd:
			es = insertAt(es, loc.idx, codec.Entry{Key: tok, Val: nv.enc})
		default:
			return Value{}, Value{}, &PathError{Op: op, Path: ptr.String(), At: ptr.String(), Err: ErrNotFound,
				Msg: fmt.Sprintf("no member %q in the object at %q", tok, parent.String()), DidYouMean: closestKeys(tok, loc.entries)}
		}
		nv2, err := t.replaceLeaf(loc, es)
		return nv2, old, err
	case Array:
		n := v.Len()
		var i uint64
		if tok == "-" && kind == editAdd {
			i = n
		} else {
			var ok bool
			if i, ok = parseIndex(tok); !ok {
				return Value{}, Value{}, &PathError{Op: op, Path: ptr.String(), At: ptr.String(), Err: ErrInvalidPath,
					Msg: fmt.Sprintf("%q is not an array index (the array at %q has %d elements%s)", tok, parent.String(), n, appendHint(kind))}
			}
			limit := n
			if kind == editAdd {
				limit = n + 1
			}
			if i >= limit {
				return Value{}, Value{}, &PathError{Op: op, Path: ptr.String(), At: ptr.String(), Err: ErrNotFound,
					Msg: fmt.Sprintf("index %d is out of range: the array at %q has %d elements%s", i, parent.String(), n, appendHint(kind))}
			}
		}
		loc, err := t.locateIndex(v, i)
		if err != nil {
			return Value{}, Value{}, err
		}
		var old Value
		es := loc.entries
		switch kind {
		case editAdd:
			es = insertAt(es, loc.idx, codec.Entry{Val: nv.enc})
		case editRemove:
			old = loc.val()
			es = splice(es, loc.idx, 1)
		case editReplace:
			old = loc.val()
			if old == nv {
				return v, old, nil
			}
			es = replaceAt(es, loc.idx, codec.Entry{Val: nv.enc})
		}
		nv2, err := t.replaceLeaf(loc, es)
		return nv2, old, err
	default:
		return Value{}, Value{}, &PathError{Op: op, Path: ptr.String(), At: ptr.String(), Err: ErrInvalidPath,
			Msg: fmt.Sprintf("the value at %q is a %s, not an object or array", parent.String(), v.Kind())}
	}
}

func appendHint(kind editKind) string {
	if kind == editAdd {
		return `; "-" appends`
	}
	return ""
}

func splice(es []codec.Entry, i, n int) []codec.Entry {
	out := make([]codec.Entry, 0, len(es)-n)
	out = append(out, es[:i]...)
	return append(out, es[i+n:]...)
}

func insertAt(es []codec.Entry, i int, e codec.Entry) []codec.Entry {
	out := make([]codec.Entry, 0, len(es)+1)
	out = append(out, es[:i]...)
	out = append(out, e)
	return append(out, es[i:]...)
}

func replaceAt(es []codec.Entry, i int, e codec.Entry) []codec.Entry {
	out := append([]codec.Entry(nil), es...)
	out[i] = e
	return out
}

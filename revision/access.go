package revision

import (
	"context"
	"fmt"
	"sort"

	"github.com/strata-db/strata/internal/suggest"
	"github.com/strata-db/strata/revision/internal/codec"
	"github.com/strata-db/strata/store"
)

// pos is a position in one node on the way down a tree.
type pos struct {
	node *codec.Node
	idx  int
}

// located is where a member or element is, or would be inserted, in a container.
type located struct {
	tree     bool
	leafKind byte
	path     []pos         // trees only: path[level], path[0] is the leaf
	entries  []codec.Entry // the inline container's entries, or the leaf's
	idx      int           // position in entries (insertion point when !found)
	found    bool
}

func (l *located) val() Value { return Value{l.entries[l.idx].Val} }

// inlineEntries decodes the entries of an inline container.
func inlineEntries(v Value) ([]codec.Entry, error) {
	n, err := codec.ParseNode(string(codec.LeafKind(v.enc[0])) + v.enc[1:])
	if err != nil {
		return nil, fmt.Errorf("%w: inline container: %v", store.ErrCorruptNode, err)
	}
	return n.Entries, nil
}

func (r *reader) child(h [codec.HashLen]byte, parent *codec.Node) (*codec.Node, error) {
	n, err := r.node(h)
	if err != nil {
		return nil, err
	}
	if n.Level != parent.Level-1 || codec.InnerKind(n.Kind) != parent.Kind {
		return nil, fmt.Errorf("%w: node %s (kind %d, level %d) under a kind %d node at level %d", store.ErrCorruptNode,
			store.Hash(h).Short(), n.Kind, n.Level, parent.Kind, parent.Level)
	}
	return n, nil
}

func (r *reader) root(v Value) (*codec.Node, error) {
	ref, _ := v.ref()
	n, err := r.node(ref.Hash)
	if err != nil {
		return nil, err
	}
	if codec.RefTag(n.Kind) != ref.Tag {
		return nil, fmt.Errorf("%w: root node %s has kind %d, not a %d tree", store.ErrCorruptNode, store.Hash(ref.Hash).Short(), n.Kind, ref.Tag)
	}
	return n, nil
}

// locateKey finds key in object v.
func (r *reader) locateKey(v Value, key string) (located, error) {
	loc := located{leafKind: codec.NodeObjLeaf}
	if !v.IsTree() {
		es, err := inlineEntries(v)
		if err != nil {
			return loc, err
		}
		loc.entries = es
		loc.idx = sort.Search(len(es), func(i int) bool { return es[i].Key >= key })
		loc.found = loc.idx < len(es) && es[loc.idx].Key == key
		return loc, nil
	}
	n, err := r.root(v)
	if err != nil {
		return loc, err
	}
	loc.tree = true
	loc.path = make([]pos, n.Level+1)
	for n.Level > 0 {
		cs := n.Children
		i := sort.Search(len(cs), func(i int) bool { return cs[i].Key > key }) - 1
		if i < 0 {
			i = 0
		}
		loc.path[n.Level] = pos{n, i}
		if n, err = r.child(cs[i].Hash, n); err != nil {
			return loc, err
		}
	}
	es := n.Entries
	loc.entries = es
	loc.idx = sort.Search(len(es), func(i int) bool { return es[i].Key >= key })
	loc.found = loc.idx < len(es) && es[loc.idx].Key == key
	loc.path[0] = pos{n, loc.idx}
	return loc, nil
}

// locateIndex finds element i of array v; i == Len() gives the append position.
func (r *reader) locateIndex(v Value, i uint64) (located, error) {
	loc := located{leafKind: codec.NodeArrLeaf}
	if !v.IsTree() {
		es, err := inlineEntries(v)
		if err != nil {
			return loc, err
		}
		loc.entries = es
		loc.idx = int(i)
		loc.found = i < uint64(len(es))
		return loc, nil
	}
	n, err := r.root(v)
	if err != nil {
		return loc, err
	}
	loc.tree = true
	loc.path = make([]pos, n.Level+1)
	for n.Level > 0 {
		cs := n.Children
		j := 0
		for j < len(cs)-1 && i >= cs[j].Count {
			i -= cs[j].Count
			j++
		}
		loc.path[n.Level] = pos{n, j}
		if n, err = r.child(cs[j].Hash, n); err != nil {
			return loc, err
		}
	}
	loc.entries = n.Entries
	loc.idx = int(i)
	loc.found = i < uint64(len(n.Entries))
	if i > uint64(len(n.Entries)) {
		return loc, fmt.Errorf("%w: element counts in array tree do not add up", store.ErrCorruptNode)
	}
	loc.path[0] = pos{n, loc.idx}
	return loc, nil
}

// Get returns the value at ptr inside root.
func (f *Forest) Get(ctx context.Context, root Value, ptr Pointer) (Value, error) {
	return f.reader(ctx).get(root, ptr, "get")
}

func (r *reader) get(v Value, ptr Pointer, op string) (Value, error) {
	for k := range ptr {
		next, err := r.step(v, ptr, k, op)
		if err != nil {
			return Value{}, err
		}
		v = next
	}
	return v, nil
}

// step returns the member or element ptr[k] of v, which is the value at ptr[:k].
func (r *reader) step(v Value, ptr Pointer, k int, op string) (Value, error) {
	tok := ptr[k]
	switch v.Kind() {
	case Object:
		loc, err := r.locateKey(v, tok)
		if err != nil {
			return Value{}, err
		}
		if !loc.found {
			return Value{}, &PathError{Op: op, Path: ptr.String(), At: ptr[:k+1].String(), Err: ErrNotFound,
				Msg:        fmt.Sprintf("no member %q in the object at %q", tok, ptr[:k].String()),
				DidYouMean: closestKeys(tok, loc.entries)}
		}
		return loc.val(), nil
	case Array:
		i, ok := parseIndex(tok)
		if !ok {
			return Value{}, &PathError{Op: op, Path: ptr.String(), At: ptr[:k+1].String(), Err: ErrInvalidPath,
				Msg: fmt.Sprintf("%q is not an array index (the array at %q has %d elements; use 0 to %d)", tok, ptr[:k].String(), v.Len(), int64(v.Len())-1)}
		}
		if i >= v.Len() {
			return Value{}, &PathError{Op: op, Path: ptr.String(), At: ptr[:k+1].String(), Err: ErrNotFound,
				Msg: fmt.Sprintf("index %d is out of range: the array at %q has %d elements", i, ptr[:k].String(), v.Len())}
		}
		loc, err := r.locateIndex(v, i)
		if err != nil {
			return Value{}, err
		}
		return loc.val(), nil
	default:
		return Value{}, &PathError{Op: op, Path: ptr.String(), At: ptr[:k+1].String(), Err: ErrInvalidPath,
			Msg: fmt.Sprintf("the value at %q is a %s, not an object or array", ptr[:k].String(), v.Kind())}
	}
}

// closestKeys suggests existing member names near a missing one (from the entries at hand: the inline object, or
// the leaf where the name would be).
func closestKeys(name string, entries []codec.Entry) []string {
	keys := make([]string, len(entries))
	for i, e := range entries {
		keys[i] = e.Key
	}
	return suggest.Closest(name, keys)
}

package revision

import (
	"context"
	"fmt"

	"github.com/strata-db/strata/revision/internal/codec"
	"github.com/strata-db/strata/store"
)

// NodeVisit describes one node met by Walk.
type NodeVisit struct {
	Hash  store.Hash
	Bytes int // canonical size
	Level int
}

// Walk visits every node reachable from v once, checking the tree's structure on the way: each child sits one
// level below its parent, is of the matching kind, and holds exactly the element count and JSON size its parent
// records. skip(h) returning true prunes a subtree already visited (by a walk of another root). Reading a node also
// verifies its hash (every store does as it decodes one), unless it is already in the forest's cache: use a forest without a cache
// (Options.CacheBytes < 0) to verify everything.
func (f *Forest) Walk(ctx context.Context, v Value, skip func(store.Hash) bool, fn func(NodeVisit) error) error {
	r := f.reader(ctx)
	return codec.WalkRefs(v.enc, func(ref codec.Ref) error {
		if skip(ref.Hash) {
			return nil
		}
		n, err := r.root(Value{string(codec.AppendRef(nil, ref.Tag, ref.Hash, ref.Count, ref.Size))})
		if err != nil {
			return err
		}
		c := codec.Child{Hash: ref.Hash, Count: ref.Count, CSize: ref.Size - 2}
		return r.walkNode(n, c, skip, fn)
	})
}

func (r *reader) walkNode(n *codec.Node, want codec.Child, skip func(store.Hash) bool, fn func(NodeVisit) error) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	if err := fn(NodeVisit{Hash: want.Hash, Bytes: len(n.Raw), Level: n.Level}); err != nil {
		return err
	}
	count, csize := nodeTotals(n)
	if count != want.Count || csize != want.CSize {
		return fmt.Errorf("%w: node %s holds %d elements and %d bytes of JSON, its parent says %d and %d",
			store.ErrCorruptNode, store.Hash(want.Hash).Short(), count, csize, want.Count, want.CSize)
	}
	for _, e := range n.Entries {
		if err := codec.WalkRefs(e.Val, func(ref codec.Ref) error {
			return r.Walk(ref, skip, fn)
		}); err != nil {
			return err
		}
	}
	for _, c := range n.Children {
		if skip(c.Hash) {
			continue
		}
		kid, err := r.child(c.Hash, n)
		if err != nil {
			return err
		}
		if err := r.walkNode(kid, c, skip, fn); err != nil {
			return err
		}
	}
	return nil
}

// Walk is Forest.Walk from a reference met inside a leaf.
func (r *reader) Walk(ref codec.Ref, skip func(store.Hash) bool, fn func(NodeVisit) error) error {
	if skip(ref.Hash) {
		return nil
	}
	n, err := r.root(Value{string(codec.AppendRef(nil, ref.Tag, ref.Hash, ref.Count, ref.Size))})
	if err != nil {
		return err
	}
	return r.walkNode(n, codec.Child{Hash: ref.Hash, Count: ref.Count, CSize: ref.Size - 2}, skip, fn)
}

// nodeTotals recomputes what a parent records about a node: its element count and the JSON size of its content.
func nodeTotals(n *codec.Node) (count, csize uint64) {
	switch {
	case n.Kind == codec.NodeStrLeaf:
		return uint64(len(n.Frag)), codec.EscapedLen(n.Frag)
	case n.Level > 0:
		for i, c := range n.Children {
			count += c.Count
			csize += c.CSize
			if i > 0 && n.Kind != codec.NodeStrInner {
				csize++
			}
		}
	default:
		for i, e := range n.Entries {
			count++
			csize += codec.ValueSize(e.Val)
			if n.Kind == codec.NodeObjLeaf {
				csize += 3 + codec.EscapedLen(e.Key)
			}
			if i > 0 {
				csize++
			}
		}
	}
	return count, csize
}

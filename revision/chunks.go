package revision

import (
	"context"
	"fmt"

	"github.com/strata-db/strata/revision/internal/codec"
	"github.com/strata-db/strata/store"
)

// A Chunk is a piece of an array as it is stored: the whole array when it is held inline, else one node of its tree —
// a leaf holding elements, or an inner node holding chunks one level down. Nodes are addressed by content, so two
// chunks with one Hash hold the same elements in the same order wherever they are met (in any revision, any
// database): a result computed over a chunk's elements holds for every chunk with its hash. A single-field commit
// to a large array makes new chunks only on the path from the root to the changed element.
type Chunk struct {
	Hash  store.Hash
	Count uint64 // elements under the chunk
	level int    // -1 until the node is read (a tree's root)
	enc   string // the array's encoding, when it is inline
}

// IsLeaf reports whether the chunk holds elements rather than chunks, when that is known without reading it (every
// chunk but the root of a tree: ReadChunks tells).
func (c Chunk) IsLeaf() bool { return c.enc != "" || c.level == 0 }

// ArrayChunk returns the chunk that is the whole of array v: the root of its tree, or the inline array itself
// (hashed as Value.Hash does). It reads nothing.
func ArrayChunk(v Value) (Chunk, error) {
	if v.Kind() != Array {
		return Chunk{}, fmt.Errorf("%w: chunks are pieces of an array, and this value is %s", ErrInvalidPath, KindPhrase(v.Kind()))
	}
	if !v.IsTree() {
		return Chunk{Hash: v.Hash(), Count: v.Len(), level: 0, enc: v.enc}, nil
	}
	ref, _ := v.ref()
	return Chunk{Hash: ref.Hash, Count: ref.Count, level: -1}, nil
}

// ChunkContent is what a chunk holds: the chunks one level down (an inner node), or its elements (a leaf).
type ChunkContent struct {
	Children []Chunk
	Elements []Value // they share the node's memory
}

// ReadChunks reads the nodes of chunks of one array (with one store call for those not in the node cache) and
// returns what each holds, checking that each node is an array node at the level its parent put it and holds the
// element count its parent records.
func (f *Forest) ReadChunks(ctx context.Context, cs []Chunk) ([]ChunkContent, error) {
	out := make([]ChunkContent, len(cs))
	var children []codec.Child
	var at []int
	for i, c := range cs {
		if c.enc != "" {
			err := eachInline(c.enc, 0, func(_, val string) error {
				out[i].Elements = append(out[i].Elements, Value{val})
				return nil
			})
			if err != nil {
				return nil, err
			}
			continue
		}
		children = append(children, codec.Child{Hash: c.Hash, Count: c.Count})
		at = append(at, i)
	}
	if len(children) == 0 {
		return out, nil
	}
	r := f.reader(ctx)
	nodes, err := r.nodes(children)
	if err != nil {
		return nil, err
	}
	for k, n := range nodes {
		c := cs[at[k]]
		okKind := n.Kind == codec.NodeArrLeaf || n.Kind == codec.NodeArrInner
		if !okKind || c.level >= 0 && n.Level != c.level {
			return nil, fmt.Errorf("%w: node %s (kind %d, level %d) is not the array node expected there", store.ErrCorruptNode,
				c.Hash.Short(), n.Kind, n.Level)
		}
		cc := &out[at[k]]
		var count uint64
		if n.Level == 0 {
			cc.Elements = make([]Value, len(n.Entries))
			for j, e := range n.Entries {
				cc.Elements[j] = Value{e.Val}
			}
			count = uint64(len(n.Entries))
		} else {
			cc.Children = make([]Chunk, len(n.Children))
			for j, ch := range n.Children {
				cc.Children[j] = Chunk{Hash: ch.Hash, Count: ch.Count, level: n.Level - 1}
				count += ch.Count
			}
		}
		if count != c.Count {
			return nil, fmt.Errorf("%w: node %s holds %d elements, its parent says %d", store.ErrCorruptNode, c.Hash.Short(), count, c.Count)
		}
	}
	return out, nil
}

// MaterializeMembers is Materialize for an object of which only some members will be read: the map holds the members
// named in keys that v has (each materialised whole), and no others. A value that is not an object is materialised
// whole. Reading a few members of many small objects this way costs a fraction of materialising them.
func (f *Forest) MaterializeMembers(ctx context.Context, v Value, keys []string) (any, error) {
	r := f.reader(ctx)
	if v.Kind() != Object {
		return r.materialize(v.enc)
	}
	m := make(map[string]any, len(keys)+1)
	if !v.IsTree() {
		// Walk the inline encoding once; it stops when every key wanted has been met.
		left := len(keys)
		err := eachInline(v.enc, 0, func(key, val string) error {
			for _, k := range keys {
				if k == key {
					x, err := r.materialize(val)
					if err != nil {
						return err
					}
					m[key] = x
					if left--; left == 0 {
						return errStop
					}
					return nil
				}
			}
			return nil
		})
		return m, ignoreStop(err)
	}
	for _, k := range keys {
		loc, err := r.locateKey(v, k)
		if err != nil {
			return nil, err
		}
		if !loc.found {
			continue
		}
		x, err := r.materialize(loc.val().enc)
		if err != nil {
			return nil, err
		}
		m[k] = x
	}
	return m, nil
}

// MaterializeMember materialises one member of object v, as Materialize would within v; found is false when v has
// no such member.
func (f *Forest) MaterializeMember(ctx context.Context, v Value, key string) (x any, found bool, err error) {
	r := f.reader(ctx)
	if v.Kind() != Object {
		return nil, false, fmt.Errorf("%w: %s has no members", ErrInvalidPath, KindPhrase(v.Kind()))
	}
	if !v.IsTree() {
		err := eachInline(v.enc, 0, func(k, val string) error {
			switch {
			case k < key:
				return nil
			case k > key:
				return errStop // members are in key order
			}
			found = true
			x, err = r.materialize(val)
			if err != nil {
				return err
			}
			return errStop
		})
		return x, found, ignoreStop(err)
	}
	loc, err := r.locateKey(v, key)
	if err != nil || !loc.found {
		return nil, false, err
	}
	x, err = r.materialize(loc.val().enc)
	return x, err == nil, err
}

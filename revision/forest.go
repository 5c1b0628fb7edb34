// Package revision stores JSON documents as trees of immutable, content-addressed nodes and works on them: import,
// pointer reads, RFC 6902 patches, materialisation, streaming, structural diff and three-way merge.
//
// A Value is an immutable JSON value. Scalars and containers whose encoding fits in 1 KiB are held inline; larger
// containers and long strings are referenced by the SHA-256 of their root node. A change builds a new root that
// shares every unchanged node with the old one, so one edit in a million-element array writes a handful of nodes.
package revision

import (
	"context"
	"fmt"

	"github.com/strata-db/strata/revision/internal/codec"
	"github.com/strata-db/strata/store"
)

// Forest is the set of trees in one node store. It is safe for concurrent use.
type Forest struct {
	ns      store.NodeStore
	cache   *nodeCache
	prepare func([]store.Node) // see WithPrepare
}

// DefaultCacheBytes is the decoded-node cache's size when none is given (Options.CacheBytes 0).
const DefaultCacheBytes = 256 << 20

// Options configures a Forest. The zero value gives sensible defaults.
type Options struct {
	// CacheBytes bounds the decoded-node cache. Zero means DefaultCacheBytes; negative disables the cache.
	CacheBytes int64
	// Cache, when set, is the decoded-node cache, shared with other forests (CacheBytes is then ignored).
	Cache *NodeCache
}

// New returns a Forest over a node store. opts may be nil.
func New(ns store.NodeStore, opts *Options) *Forest {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Cache != nil {
		return &Forest{ns: ns, cache: o.Cache}
	}
	if o.CacheBytes == 0 {
		o.CacheBytes = DefaultCacheBytes
	}
	return &Forest{ns: ns, cache: newNodeCache(o.CacheBytes)}
}

// Store returns the node store behind the forest.
func (f *Forest) Store() store.NodeStore { return f.ns }

// reader fetches decoded nodes, looking first in an overlay of nodes built by the current write.
type reader struct {
	f       *Forest
	ctx     context.Context
	overlay map[store.Hash]*codec.Node
	reads   int // nodes read (from the overlay, the cache or the store): the cost of what the reader did
}

func (f *Forest) reader(ctx context.Context) *reader { return &reader{f: f, ctx: ctx} }

func (r *reader) node(h store.Hash) (*codec.Node, error) {
	r.reads++
	if n, ok := r.overlay[h]; ok {
		return n, nil
	}
	if n := r.f.cache.get(h); n != nil {
		return n, nil
	}
	if err := r.ctx.Err(); err != nil {
		return nil, err
	}
	raws, err := r.f.ns.GetNodes(r.ctx, []store.Hash{h})
	if err != nil {
		return nil, err
	}
	return r.decode(h, raws[0])
}

func (r *reader) decode(h store.Hash, raw []byte) (*codec.Node, error) {
	n, err := codec.ParseNode(string(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: node %s: %v", store.ErrCorruptNode, h.Short(), err)
	}
	r.f.cache.put(h, n)
	return n, nil
}

// nodes loads the nodes behind a list of children with one store call, so that a scan of many siblings does not
// pay one round trip each.
func (r *reader) nodes(children []codec.Child) ([]*codec.Node, error) {
	r.reads += len(children)
	out := make([]*codec.Node, len(children))
	var missing []store.Hash
	var at []int
	for i, c := range children {
		h := store.Hash(c.Hash)
		if n, ok := r.overlay[h]; ok {
			out[i] = n
		} else if n := r.f.cache.get(h); n != nil {
			out[i] = n
		} else {
			missing = append(missing, h)
			at = append(at, i)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	if err := r.ctx.Err(); err != nil {
		return nil, err
	}
	raws, err := r.f.ns.GetNodes(r.ctx, missing)
	if err != nil {
		return nil, err
	}
	for k, h := range missing {
		n, err := r.decode(h, raws[k])
		if err != nil {
			return nil, err
		}
		out[at[k]] = n
	}
	return out, nil
}

// WithStore returns a forest over another node store that shares this forest's cache. Use it for a view that adds
// pending nodes in front of the real store: content addressing makes sharing the cache safe.
func (f *Forest) WithStore(ns store.NodeStore) *Forest {
	return &Forest{ns: ns, cache: f.cache, prepare: f.prepare}
}

// WithPrepare returns a forest whose writes hand the nodes they build to fn, in batches of about prepareBatchBytes,
// while they go on building, so that fn (store.PrepareNodes: hashing and compressing) runs beside the build instead
// of after it. A change's Nodes are the batches' nodes as fn left them (and fresh copies of the rest). fn runs on
// goroutines of its own, one batch at a time, and must only fill in the nodes it is given.
func (f *Forest) WithPrepare(fn func([]store.Node)) *Forest {
	return &Forest{ns: f.ns, cache: f.cache, prepare: fn}
}

// ChangedMembers lists, in key order, the members of two objects whose values differ (added, removed or changed),
// skipping subtrees whose hashes are equal. Either value may be the zero Value, meaning an empty object.
func (f *Forest) ChangedMembers(ctx context.Context, a, b Value) ([]string, error) {
	if !a.IsValid() {
		a = emptyContainer(codec.NodeObjLeaf)
	}
	if !b.IsValid() {
		b = emptyContainer(codec.NodeObjLeaf)
	}
	if a.Kind() != Object || b.Kind() != Object {
		return nil, fmt.Errorf("%w: ChangedMembers compares objects, not %s and %s", ErrInvalidPath, a.Kind(), b.Kind())
	}
	d := &differ{r: f.reader(ctx), res: &DiffResult{}, visited: map[[32]byte]bool{}}
	var out []string
	err := d.members(a, b, func(key, _, _ string) error { out = append(out, key); return nil })
	return out, err
}

// EmptyObject is the value {}.
var EmptyObject = emptyContainer(codec.NodeObjLeaf)

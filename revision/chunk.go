package revision

import (
	"crypto/sha256"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/strata-db/strata/revision/internal/codec"
	"github.com/zeebo/xxh3"
)

// Chunking parameters (docs/storage.md §3). They are part of the format: changing one changes every address.
const (
	minChunk    = 1 << 10  // never cut a node smaller than this
	targetChunk = 4 << 10  // the typical node size
	maxChunk    = 16 << 10 // always cut a node that reaches this
	maxInline   = 1 << 10  // a container whose single leaf is at most this big lives inside its parent
	maxInlineS  = 4 << 10  // a string longer than this is split into fragment nodes
	weibullK    = 4.0      // shape of the cut-probability curve (Dolt's splitter)
)

// weibullLambda sets the scale so that nodes average close to targetChunk once min and max are applied.
var weibullLambda = float64(targetChunk) * 1.05

// cutAt decides whether a boundary falls after an entry whose identity is id, when the node grows from start to end
// bytes. The decision is content-defined: it depends only on the entry and the node's size so far, never on the
// entry's position in the sequence, so an edit moves boundaries only near itself.
func cutAt(id string, level int, start, end int) bool {
	if end < minChunk {
		return false
	}
	if end >= maxChunk {
		return true
	}
	return cutDecision(xxh3.HashStringSeed(id, 0x5bd1e995+uint64(level)*0x9e3779b97f4a7c15), start, end)
}

// cutDecision is cutAt's draw for an entry whose hash is h, once the size limits have been applied. It first tries to
// decide without math.Pow and math.Exp: the cut probability p = 1 - exp(a-b) is at most b-a (a, b the Weibull terms
// of start and end), so a hash at or above (b-a)·2^64, with a margin far wider than the rounding errors of either
// computation, never cuts. Only the hashes below that bound (about p of them) take the exact formula, so every
// decision is the formula's own.
func cutDecision(h uint64, start, end int) bool {
	if weibullK != 4 {
		return cutFormula(h, start, end)
	}
	x0 := float64(start) / weibullLambda
	x1 := float64(end) / weibullLambda
	// b-a = x1^4 - x0^4, factored to avoid cancellation.
	d := (x1 - x0) * (x1 + x0) * (x1*x1 + x0*x0)
	if float64(h) >= (d*(1+1e-9)+1e-9)*(1<<64) {
		return false
	}
	return cutFormula(h, start, end)
}

// cutFormula is the cut probability as the format defines it, compared with the hash.
func cutFormula(h uint64, start, end int) bool {
	a := math.Pow(float64(start)/weibullLambda, weibullK)
	b := math.Pow(float64(end)/weibullLambda, weibullK)
	p := 1 - math.Exp(a-b) // P(cut in (start, end] | no cut before start)
	return float64(h) < p*(1<<64)
}

// chunker accumulates the entries of one level of one tree and cuts them into nodes.
type chunker struct {
	kind     byte // kind of node emitted
	level    int
	buf      []byte
	n        int
	count    uint64
	csize    uint64 // in node mode, leaves' sizes are computed when the node is cut
	firstKey string
	children []codec.Child // node mode, inner levels: the children of the node being built
	// onCut receives each node as it is cut.
	onCut func(c codec.Child, raw string) error
	// onNode, when set instead of onCut (node mode), receives each node decoded, without parsing it again.
	onNode func(c codec.Child, n *codec.Node) error
}

func newChunker(kind byte, level int, onCut func(codec.Child, string) error) *chunker {
	return &chunker{kind: kind, level: level, onCut: onCut}
}

// newNodeChunker returns a chunker in node mode whose entries are encoded in buf (an empty buffer to reuse).
func newNodeChunker(kind byte, level int, buf []byte, onNode func(codec.Child, *codec.Node) error) *chunker {
	return &chunker{kind: kind, level: level, buf: buf[:0], onNode: onNode}
}

func (c *chunker) size() int {
	s := 1 + codec.UvarintLen(uint64(c.n)) + len(c.buf)
	if c.level > 0 {
		s++
	}
	return s
}

// addEntry appends a leaf entry (key is ignored for arrays).
func (c *chunker) addEntry(key, val string) error {
	var size uint64
	if c.onNode == nil { // in node mode, leaves are sized when cut
		size = entrySize(c.kind, key, val)
	}
	return c.add(key, val, size, false)
}

// addSized is addEntry for an importer that knows the entry's compact JSON size (for an object member, with its
// quoted key and colon). The key and value may be views of a buffer the caller reuses: the chunker copies both.
func (c *chunker) addSized(key, val string, size uint64) error {
	if checkSizes {
		if want := entrySize(c.kind, key, val); want != size {
			panic(fmt.Sprintf("internal error: entry size %d, addEntry would count %d", size, want))
		}
	}
	return c.add(key, val, size, true)
}

// entrySize is a leaf entry's compact JSON size: the value's, and for an object member its quoted key and colon.
func entrySize(kind byte, key, val string) uint64 {
	size := codec.ValueSize(val)
	if kind == codec.NodeObjLeaf {
		size += 3 + codec.EscapedLen(key)
	}
	return size
}

func (c *chunker) add(key, val string, size uint64, cloneKey bool) error {
	start := c.size()
	if c.n == 0 {
		c.firstKey = key
		if cloneKey {
			c.firstKey = strings.Clone(key)
		}
	}
	c.buf = codec.AppendEntry(c.buf, c.kind, key, val)
	c.n++
	c.count++
	id := val
	if c.kind == codec.NodeObjLeaf {
		id = key
	}
	if c.onNode == nil {
		if c.n > 1 {
			size++ // the comma
		}
		c.csize += size
	}
	if cutAt(id, c.level, start, c.size()) {
		return c.cut()
	}
	return nil
}

// addChild appends an inner entry.
func (c *chunker) addChild(ch codec.Child) error {
	start := c.size()
	if c.n == 0 {
		c.firstKey = ch.Key
	}
	c.buf = codec.AppendChild(c.buf, c.kind, ch)
	c.n++
	c.count += ch.Count
	c.csize += ch.CSize
	if c.n > 1 && c.kind != codec.NodeStrInner {
		c.csize++
	}
	if c.onNode != nil {
		c.children = append(c.children, ch)
	}
	// An inner node is never cut after its first child: a child whose entry alone reaches the cut point (an object
	// node whose first key is longer than a node) would otherwise get a parent of its own at every level, and the
	// tree would grow levels without end (found in review: a 17 KB key beside any other member).
	if c.n > 1 && cutAt(string(ch.Hash[:]), c.level, start, c.size()) {
		return c.cut()
	}
	return nil
}

// addPrefix appends the first k entries or children of old, a node of this chunker's kind and level, to an empty
// chunker in node mode, as one block of old's bytes. This is only valid because the chunker starts where old starts
// (an old boundary) and old is canonical: fed one by one, the same entries would meet the same sizes and hashes, so
// no cut falls among them (old continues past them). k must be less than old.Len().
func (c *chunker) addPrefix(old *codec.Node, k int) {
	if k == 0 {
		return
	}
	if c.n != 0 || c.onNode == nil || old.Kind != c.kind || old.Level != c.level || k >= old.Len() {
		panic("internal error: addPrefix on a chunker that is not fresh, or past the node")
	}
	off := 1 + codec.UvarintLen(uint64(old.Len()))
	if old.Level > 0 {
		off++
	}
	end := off
	if old.Level == 0 {
		for _, e := range old.Entries[:k] {
			end += len(e.Val)
			if c.kind == codec.NodeObjLeaf {
				end += codec.UvarintLen(uint64(len(e.Key))) + len(e.Key)
			}
		}
		c.count = uint64(k)
		c.firstKey = old.Entries[0].Key
	} else {
		for _, ch := range old.Children[:k] {
			end += codec.HashLen + codec.UvarintLen(ch.Count) + codec.UvarintLen(ch.CSize)
			if c.kind == codec.NodeObjInner {
				end += codec.UvarintLen(uint64(len(ch.Key))) + len(ch.Key)
			}
			c.count += ch.Count
			c.csize += ch.CSize
		}
		if c.kind != codec.NodeStrInner {
			c.csize += uint64(k - 1)
		}
		c.children = append(c.children, old.Children[:k]...)
		c.firstKey = old.Children[0].Key
	}
	c.buf = append(c.buf, old.Raw[off:end]...)
	c.n = k
}

// pending reports whether entries wait for a boundary.
func (c *chunker) pending() bool { return c.n > 0 }

// cut closes the current node, if it has entries.
func (c *chunker) cut() error {
	if c.n == 0 {
		return nil
	}
	raw := make([]byte, 0, c.size())
	raw = append(raw, c.kind)
	if c.level > 0 {
		raw = append(raw, byte(c.level))
	}
	raw = codec.AppendUvarint(raw, uint64(c.n))
	raw = append(raw, c.buf...)
	s := unsafeString(raw) // raw is never written again
	ch := codec.Child{Key: c.firstKey, Hash: sha256.Sum256(raw), Count: c.count, CSize: c.csize}
	c.buf = c.buf[:0]
	c.n, c.count, c.csize, c.firstKey = 0, 0, 0, ""
	if c.onNode == nil {
		return c.onCut(ch, s)
	}
	var n *codec.Node
	if c.level == 0 {
		var err error
		if n, ch.CSize, err = codec.ParseLeafSized(s); err != nil {
			return fmt.Errorf("internal error: built a node that does not decode: %v", err)
		}
	} else {
		n = &codec.Node{Kind: c.kind, Level: c.level, Children: slices.Clone(c.children), Raw: s}
		clear(c.children) // do not hold on to the keys
		c.children = c.children[:0]
	}
	return c.onNode(ch, n)
}

// builder builds one new tree from its entries in order. It holds back the first node of each level until a second
// one appears, so that a container that fits in one small leaf is inlined without ever being written as a node, and
// a level with one node becomes the root instead of getting a parent with a single child.
type builder struct {
	leafKind byte
	base     int // level of the first chunker: 0, or 1 for strings (whose leaves are fragments)
	levels   []*chunker
	held     []heldNode
	produced []int
	emit     func(codec.Child, string) error // writes a finished node
}

type heldNode struct {
	child codec.Child
	raw   string
}

func newBuilder(leafKind byte, emit func(codec.Child, string) error) *builder {
	base := 0
	if leafKind == codec.NodeStrLeaf {
		base = 1
	}
	return newBuilderAt(leafKind, base, emit)
}

// newBuilderAt returns a builder whose first chunker takes children at level base (> 0), for growing an existing
// tree upwards, or entries when base is 0.
func newBuilderAt(leafKind byte, base int, emit func(codec.Child, string) error) *builder {
	b := &builder{leafKind: leafKind, base: base, emit: emit}
	b.addLevel()
	return b
}

func (b *builder) addLevel() {
	i := len(b.levels)
	level := b.base + i
	kind := b.leafKind
	if level > 0 {
		kind = codec.InnerKind(b.leafKind)
	}
	b.levels = append(b.levels, newChunker(kind, level, func(c codec.Child, raw string) error { return b.onCut(i, c, raw) }))
	b.held = append(b.held, heldNode{})
	b.produced = append(b.produced, 0)
}

func (b *builder) onCut(i int, c codec.Child, raw string) error {
	b.produced[i]++
	switch b.produced[i] {
	case 1:
		b.held[i] = heldNode{c, raw}
		return nil
	case 2:
		b.addLevel()
		h := b.held[i]
		b.held[i] = heldNode{}
		if err := b.emit(h.child, h.raw); err != nil {
			return err
		}
		if err := b.levels[i+1].addChild(h.child); err != nil {
			return err
		}
	}
	if err := b.emit(c, raw); err != nil {
		return err
	}
	return b.levels[i+1].addChild(c)
}

func (b *builder) addEntry(key, val string) error { return b.levels[0].addEntry(key, val) }
func (b *builder) addChild(c codec.Child) error   { return b.levels[0].addChild(c) }

// addSized is addEntry with the entry's compact JSON size given (chunker.addSized).
func (b *builder) addSized(key, val string, size uint64) error {
	return b.levels[0].addSized(key, val, size)
}

// finish closes every level and returns the tree as a value: inline when it is one small leaf, else a reference to
// the root node (which it emits).
func (b *builder) finish() (Value, error) {
	v, _, err := b.finishSized()
	return v, err
}

// finishSized is finish that also returns the tree's length as compact JSON.
func (b *builder) finishSized() (Value, uint64, error) {
	for i := 0; i < len(b.levels); i++ {
		if err := b.levels[i].cut(); err != nil {
			return Value{}, 0, err
		}
		if i < len(b.levels)-1 {
			continue
		}
		if b.produced[i] == 0 {
			return emptyContainer(b.leafKind), 2, nil
		}
		c := b.held[i].child
		v, err := b.rootValue(c, b.held[i].raw, b.base+i)
		return v, c.CSize + 2, err
	}
	panic("unreachable")
}

// rootValue turns a tree's root node into a value, emitting the node unless it is inlined.
func (b *builder) rootValue(c codec.Child, raw string, level int) (Value, error) {
	if level == 0 && len(raw) <= maxInline && b.leafKind != codec.NodeStrLeaf {
		return Value{string(codec.InlineTag(b.leafKind)) + raw[1:]}, nil
	}
	if err := b.emit(c, raw); err != nil {
		return Value{}, err
	}
	return refValue(b.leafKind, c), nil
}

func refValue(kind byte, c codec.Child) Value {
	size := c.CSize + 2
	return Value{string(codec.AppendRef(nil, codec.RefTag(kind), c.Hash, c.Count, size))}
}

func emptyContainer(leafKind byte) Value {
	if leafKind == codec.NodeObjLeaf {
		return Value{string([]byte{codec.TagObj, 0})}
	}
	return Value{string([]byte{codec.TagArr, 0})}
}

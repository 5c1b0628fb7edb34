package codec

import "fmt"

// Entry is one member of an object leaf (Key set) or one element of an array leaf. Val is an encoded value.
type Entry struct {
	Key string
	Val string
}

// Child is one entry of an inner node: a reference to the node one level down.
type Child struct {
	Key   string        // first key under the child (object trees only)
	Hash  [HashLen]byte // the child's address
	Count uint64        // members, elements or string bytes under the child
	CSize uint64        // compact JSON length of the child's content (entries joined by commas, no brackets)
}

// Node is a decoded node. Its strings alias Raw.
type Node struct {
	Kind     byte
	Level    int // 0 for leaves and string fragments
	Entries  []Entry
	Children []Child
	Frag     string // NodeStrLeaf only
	Raw      string // the canonical bytes
	// NoRefs is set on leaves (NodeObjLeaf, NodeArrLeaf) when no entry holds a tree reference at any depth.
	NoRefs bool
}

// IsLeaf reports whether the node holds entries rather than children.
func (n *Node) IsLeaf() bool { return n.Level == 0 }

// Len is the number of entries or children.
func (n *Node) Len() int {
	if n.Level == 0 {
		return len(n.Entries)
	}
	return len(n.Children)
}

// MemSize estimates the memory a decoded node holds, for cache accounting.
func (n *Node) MemSize() int64 {
	return int64(len(n.Raw)) + int64(len(n.Entries))*32 + int64(len(n.Children))*80 + 96
}

// ParseNode decodes canonical node bytes. It never panics; malformed bytes give an error wrapping ErrMalformed.
func ParseNode(raw string) (*Node, error) {
	r := Reader{S: raw}
	n := &Node{Raw: raw, Kind: r.Byte()}
	switch n.Kind {
	case NodeObjLeaf, NodeArrLeaf:
		cnt := r.Uvarint()
		if cnt > uint64(len(raw)) {
			return nil, fmt.Errorf("%w: entry count %d exceeds node size", ErrMalformed, cnt)
		}
		n.Entries = make([]Entry, 0, cnt)
		for k := uint64(0); k < cnt && !r.Bad; k++ {
			var e Entry
			if n.Kind == NodeObjLeaf {
				e.Key = r.Str(r.Uvarint())
			}
			start := r.I
			skipValue(&r, 0)
			if r.Bad {
				break
			}
			e.Val = raw[start:r.I]
			n.Entries = append(n.Entries, e)
		}
		n.NoRefs = !r.Refs
	case NodeObjInner, NodeArrInner, NodeStrInner:
		n.Level = int(r.Byte())
		if n.Level == 0 && !r.Bad {
			return nil, fmt.Errorf("%w: inner node at level 0", ErrMalformed)
		}
		cnt := r.Uvarint()
		if cnt > uint64(len(raw)) {
			return nil, fmt.Errorf("%w: child count %d exceeds node size", ErrMalformed, cnt)
		}
		n.Children = make([]Child, 0, cnt)
		for k := uint64(0); k < cnt && !r.Bad; k++ {
			var c Child
			if n.Kind == NodeObjInner {
				c.Key = r.Str(r.Uvarint())
			}
			copy(c.Hash[:], r.Str(HashLen))
			c.Count = r.Uvarint()
			c.CSize = r.Uvarint()
			n.Children = append(n.Children, c)
		}
	case NodeStrLeaf:
		n.Frag = raw[1:]
		r.I = len(raw)
	default:
		return nil, fmt.Errorf("%w: unknown node kind %d", ErrMalformed, n.Kind)
	}
	if !r.Done() {
		return nil, fmt.Errorf("%w: kind %d node of %d bytes does not decode", ErrMalformed, n.Kind, len(raw))
	}
	return n, nil
}

// ParseLeafSized is ParseNode for a leaf node (NodeObjLeaf or NodeArrLeaf) that also returns the compact JSON size
// of its entries joined by commas (what an inner entry records as CSize), and sets NoRefs when no entry holds a tree
// reference at any depth. It is meant for nodes just built from well-formed values.
func ParseLeafSized(raw string) (*Node, uint64, error) {
	r := Reader{S: raw}
	n := &Node{Raw: raw, Kind: r.Byte()}
	if n.Kind != NodeObjLeaf && n.Kind != NodeArrLeaf {
		return nil, 0, fmt.Errorf("%w: kind %d is not a leaf with entries", ErrMalformed, n.Kind)
	}
	cnt := r.Uvarint()
	if cnt > uint64(len(raw)) {
		return nil, 0, fmt.Errorf("%w: entry count %d exceeds node size", ErrMalformed, cnt)
	}
	n.Entries = make([]Entry, 0, cnt)
	var size uint64
	for k := uint64(0); k < cnt && !r.Bad; k++ {
		var e Entry
		if n.Kind == NodeObjLeaf {
			e.Key = r.Str(r.Uvarint())
			size += 3 + EscapedLen(e.Key) // quotes and colon
		}
		start := r.I
		size += valueSize(&r)
		if r.Bad {
			break
		}
		e.Val = raw[start:r.I]
		n.Entries = append(n.Entries, e)
	}
	if !r.Done() {
		return nil, 0, fmt.Errorf("%w: kind %d node of %d bytes does not decode", ErrMalformed, n.Kind, len(raw))
	}
	if cnt > 0 {
		size += cnt - 1 // commas
	}
	n.NoRefs = !r.Refs
	return n, size, nil
}

// AppendChild appends the encoding of one inner entry for a node of the given kind.
func AppendChild(b []byte, kind byte, c Child) []byte {
	if kind == NodeObjInner {
		b = AppendUvarint(b, uint64(len(c.Key)))
		b = append(b, c.Key...)
	}
	b = append(b, c.Hash[:]...)
	b = AppendUvarint(b, c.Count)
	return AppendUvarint(b, c.CSize)
}

// AppendEntry appends the encoding of one leaf entry for a node of the given kind.
func AppendEntry(b []byte, kind byte, key, val string) []byte {
	if kind == NodeObjLeaf {
		b = AppendUvarint(b, uint64(len(key)))
		b = append(b, key...)
	}
	return append(b, val...)
}

// OfHashes reports whether the node raw is an array's or a long string's inner node: its children's hashes and
// sizes, which compress only where one child repeats. An object's inner nodes also hold each child's first key.
func OfHashes(raw string) bool {
	return len(raw) > 0 && (raw[0] == NodeArrInner || raw[0] == NodeStrInner)
}

// LeafKind, InnerKind and TagFor relate a tree's kinds.
func LeafKind(tag byte) byte {
	switch tag {
	case TagObj, TagObjRef:
		return NodeObjLeaf
	case TagArr, TagArrRef:
		return NodeArrLeaf
	}
	return NodeStrLeaf
}

// InnerKind returns the inner node kind for a leaf kind.
func InnerKind(leaf byte) byte {
	switch leaf {
	case NodeObjLeaf, NodeObjInner:
		return NodeObjInner
	case NodeArrLeaf, NodeArrInner:
		return NodeArrInner
	}
	return NodeStrInner
}

// RefTag returns the reference tag for trees of a node kind.
func RefTag(kind byte) byte {
	switch kind {
	case NodeObjLeaf, NodeObjInner:
		return TagObjRef
	case NodeArrLeaf, NodeArrInner:
		return TagArrRef
	}
	return TagStrRef
}

// InlineTag returns the inline container tag for a leaf kind.
func InlineTag(leaf byte) byte {
	if leaf == NodeObjLeaf {
		return TagObj
	}
	return TagArr
}

// WalkRefs calls fn for every tree reference inside the encoded value v, including those nested in inline
// containers. It stops at the first error fn returns.
func WalkRefs(v string, fn func(Ref) error) error {
	r := Reader{S: v}
	err := walkRefs(&r, fn)
	if err == nil && r.Bad {
		err = ErrMalformed
	}
	return err
}

func walkRefs(r *Reader, fn func(Ref) error) error {
	tag := r.Byte()
	switch tag {
	case TagNull, TagFalse, TagTrue:
	case TagInt:
		r.Uvarint()
	case TagNum, TagStr:
		r.Str(r.Uvarint())
	case TagObj:
		n := r.Uvarint()
		for k := uint64(0); k < n && !r.Bad; k++ {
			r.Str(r.Uvarint())
			if err := walkRefs(r, fn); err != nil {
				return err
			}
		}
	case TagArr:
		n := r.Uvarint()
		for k := uint64(0); k < n && !r.Bad; k++ {
			if err := walkRefs(r, fn); err != nil {
				return err
			}
		}
	case TagObjRef, TagArrRef, TagStrRef:
		ref := Ref{Tag: tag}
		copy(ref.Hash[:], r.Str(HashLen))
		ref.Count = r.Uvarint()
		ref.Size = r.Uvarint()
		if r.Bad {
			return nil
		}
		return fn(ref)
	default:
		r.Bad = true
	}
	return nil
}

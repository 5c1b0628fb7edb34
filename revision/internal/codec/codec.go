// Package codec is the on-disk encoding of Strata's JSON trees: how one JSON value is written inside a node, and how a
// node is laid out. Every function here is a pure function of its input; the canonical bytes it produces are what a
// node's SHA-256 address covers, so changing any of it changes every address (bump the format version if you must).
//
// Encoded values and node bytes are handled as Go strings: they are immutable, can be sliced without copying, and
// compare with ==. Two values are equal JSON exactly when their encodings are equal (objects keep keys sorted, large
// containers are referenced by the hash of their content, integers have one form, other numbers keep their text).
package codec

import (
	"encoding/binary"
	"errors"
	"strconv"
)

// Value tags: the first byte of an encoded value.
const (
	TagNull   byte = iota // nothing follows
	TagFalse              // nothing follows
	TagTrue               // nothing follows
	TagInt                // zig-zag uvarint; only for numbers whose text is the canonical form of an int64
	TagNum                // uvarint length, then the number's exact original text
	TagStr                // uvarint length, then UTF-8 bytes
	TagObj                // inline object: uvarint n, then n × (uvarint key length, key, value), keys ascending
	TagArr                // inline array: uvarint n, then n values
	TagObjRef             // object tree: hash[32], uvarint member count, uvarint JSON size
	TagArrRef             // array tree: hash[32], uvarint element count, uvarint JSON size
	TagStrRef             // long string: hash[32], uvarint byte length, uvarint JSON size
	tagLimit
)

// Node kinds: the first byte of a node.
const (
	NodeObjLeaf  byte = 1 + iota // kind, uvarint n, n × (uvarint key length, key, value)
	NodeObjInner                 // kind, level, uvarint n, n × (uvarint key length, first key, hash, count, csize)
	NodeArrLeaf                  // kind, uvarint n, n × value
	NodeArrInner                 // kind, level, uvarint n, n × (hash, count, csize)
	NodeStrLeaf                  // kind, UTF-8 bytes of one fragment of a long string
	NodeStrInner                 // kind, level, uvarint n, n × (hash, byte count, csize)
)

// HashLen is the length of a node address.
const HashLen = 32

// ErrMalformed is returned for bytes that are not a valid encoding. Nodes are hash-checked when read, so this means
// a bug or a foreign file, never a transient fault.
var ErrMalformed = errors.New("malformed node encoding")

// AppendUvarint appends x as a uvarint.
func AppendUvarint(b []byte, x uint64) []byte { return binary.AppendUvarint(b, x) }

// UvarintLen is the encoded length of x.
func UvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// Reader decodes from a string without ever panicking: past the end it sets Bad and returns zero values.
type Reader struct {
	S    string
	I    int
	Bad  bool
	Refs bool // a tree reference was read (by skipValue or valueSize)
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if r.I >= len(r.S) {
		r.Bad = true
		return 0
	}
	c := r.S[r.I]
	r.I++
	return c
}

// Uvarint reads a uvarint.
func (r *Reader) Uvarint() uint64 {
	var x uint64
	var s uint
	for k := 0; k < binary.MaxVarintLen64; k++ {
		if r.I >= len(r.S) {
			r.Bad = true
			return 0
		}
		c := r.S[r.I]
		r.I++
		if c < 0x80 {
			return x | uint64(c)<<s
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	r.Bad = true
	return 0
}

// Str reads n bytes.
func (r *Reader) Str(n uint64) string {
	if n > uint64(len(r.S)-r.I) {
		r.Bad = true
		r.I = len(r.S)
		return ""
	}
	s := r.S[r.I : r.I+int(n)]
	r.I += int(n)
	return s
}

// Done reports whether everything was read without fault.
func (r *Reader) Done() bool { return !r.Bad && r.I == len(r.S) }

// --- values ---------------------------------------------------------------------------------------------------

// AppendInt appends an integer value.
func AppendInt(b []byte, v int64) []byte {
	b = append(b, TagInt)
	return binary.AppendUvarint(b, uint64(v<<1)^uint64(v>>63))
}

// AppendNumber appends a number given by its exact JSON text, using the compact integer form when the text is the
// canonical form of an int64 (so "7" and "7" always encode alike, while "7.0", "1e3" and "-0" keep their text).
func AppendNumber(b []byte, text []byte) []byte {
	if n := len(text); n > 0 && n <= 20 {
		if v, ok := canonicalInt(text); ok {
			return AppendInt(b, v)
		}
	}
	b = append(b, TagNum)
	b = binary.AppendUvarint(b, uint64(len(text)))
	return append(b, text...)
}

// canonicalInt parses text as an int64 if and only if it is written exactly as strconv.FormatInt would write it.
func canonicalInt(t []byte) (int64, bool) {
	neg := false
	i := 0
	if t[0] == '-' {
		neg = true
		i = 1
		if len(t) == 1 {
			return 0, false
		}
	}
	if t[i] == '0' && len(t) > i+1 || (neg && t[i] == '0') {
		return 0, false // leading zero, or -0
	}
	var u uint64
	for ; i < len(t); i++ {
		c := t[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if u > (1<<63)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

// AppendString appends a short string value (callers chunk strings longer than MaxInlineString).
func AppendString(b []byte, s []byte) []byte {
	b = append(b, TagStr)
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendRef appends a reference to a tree: tag is TagObjRef, TagArrRef or TagStrRef.
func AppendRef(b []byte, tag byte, h [HashLen]byte, count, size uint64) []byte {
	b = append(b, tag)
	b = append(b, h[:]...)
	b = binary.AppendUvarint(b, count)
	return binary.AppendUvarint(b, size)
}

// Ref is a decoded reference to a tree.
type Ref struct {
	Tag   byte
	Hash  [HashLen]byte
	Count uint64 // members, elements, or bytes of a string
	Size  uint64 // length of the whole value as compact JSON text
}

// DecodeRef decodes a reference value; ok is false if v is not a well-formed reference.
func DecodeRef(v string) (Ref, bool) {
	r := Reader{S: v}
	var ref Ref
	ref.Tag = r.Byte()
	if ref.Tag != TagObjRef && ref.Tag != TagArrRef && ref.Tag != TagStrRef {
		return ref, false
	}
	copy(ref.Hash[:], r.Str(HashLen))
	ref.Count = r.Uvarint()
	ref.Size = r.Uvarint()
	return ref, r.Done()
}

// SkipValue returns the index just past the encoded value that starts at s[i].
func SkipValue(s string, i int) (int, error) {
	r := Reader{S: s, I: i}
	skipValue(&r, 0)
	if r.Bad {
		return 0, ErrMalformed
	}
	return r.I, nil
}

func skipValue(r *Reader, depth int) {
	if depth > 10000 {
		r.Bad = true
		return
	}
	switch r.Byte() {
	case TagNull, TagFalse, TagTrue:
	case TagInt:
		r.Uvarint()
	case TagNum, TagStr:
		r.Str(r.Uvarint())
	case TagObj:
		n := r.Uvarint()
		for k := uint64(0); k < n && !r.Bad; k++ {
			r.Str(r.Uvarint())
			skipValue(r, depth+1)
		}
	case TagArr:
		n := r.Uvarint()
		for k := uint64(0); k < n && !r.Bad; k++ {
			skipValue(r, depth+1)
		}
	case TagObjRef, TagArrRef, TagStrRef:
		r.Refs = true
		r.Str(HashLen)
		r.Uvarint()
		r.Uvarint()
	default:
		r.Bad = true
	}
}

// DecodeInt decodes the payload of a TagInt value.
func DecodeInt(v string) int64 {
	r := Reader{S: v, I: 1}
	u := r.Uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

// Payload returns the string payload of a TagStr or TagNum value.
func Payload(v string) string {
	r := Reader{S: v, I: 1}
	return r.Str(r.Uvarint())
}

// --- JSON sizes ------------------------------------------------------------------------------------------------

// escapeLen[c] is how many bytes the byte c takes inside a JSON string as Strata writes it.
var escapeLen [256]uint8

func init() {
	for c := 0; c < 256; c++ {
		escapeLen[c] = 1
	}
	for c := 0; c < 0x20; c++ {
		escapeLen[c] = 6 // \u00XX
	}
	for _, c := range []byte{'\b', '\f', '\n', '\r', '\t', '"', '\\'} {
		escapeLen[c] = 2
	}
}

// EscapedLen is the length of s written inside a JSON string, without the quotes.
func EscapedLen(s string) uint64 {
	i := plainPrefix(s)
	n := uint64(i)
	for ; i < len(s); i++ {
		n += uint64(escapeLen[s[i]])
	}
	return n
}

// plainPrefix returns a multiple of 8 bytes at the start of s in which no byte needs escaping (a control
// character, '"' or '\\'), read eight bytes at a time: the fast path of EscapedLen and AppendEscaped.
func plainPrefix(s string) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		q := x ^ ('"' * ones)
		bs := x ^ ('\\' * ones)
		if ((x-0x20*ones)&^x|(q-ones)&^q|(bs-ones)&^bs)&highs != 0 {
			break
		}
	}
	return i
}

// AppendJSONString appends s as a JSON string literal: only '"', '\\' and control characters are escaped.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	b = AppendEscaped(b, s)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// AppendEscaped appends the inside of a JSON string literal.
func AppendEscaped(b []byte, s string) []byte {
	i := plainPrefix(s)
	start := 0
	for ; i < len(s); i++ {
		c := s[i]
		if escapeLen[c] == 1 {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	return append(b, s[start:]...)
}

// ValueSize returns the length of the encoded value v when written as compact JSON.
func ValueSize(v string) uint64 {
	r := Reader{S: v}
	n := valueSize(&r)
	if r.Bad {
		return 0
	}
	return n
}

// valueSize returns the compact JSON length of the value at r, and sets r.Refs if it holds a tree reference.
func valueSize(r *Reader) uint64 {
	switch r.Byte() {
	case TagNull, TagTrue:
		return 4
	case TagFalse:
		return 5
	case TagInt:
		u := r.Uvarint()
		var buf [24]byte
		return uint64(len(strconv.AppendInt(buf[:0], int64(u>>1)^-int64(u&1), 10)))
	case TagNum:
		return uint64(len(r.Str(r.Uvarint())))
	case TagStr:
		return 2 + EscapedLen(r.Str(r.Uvarint()))
	case TagObj:
		n := r.Uvarint()
		size := uint64(2)
		for k := uint64(0); k < n && !r.Bad; k++ {
			if k > 0 {
				size++
			}
			size += 3 + EscapedLen(r.Str(r.Uvarint())) // quotes and colon
			size += valueSize(r)
		}
		return size
	case TagArr:
		n := r.Uvarint()
		size := uint64(2)
		for k := uint64(0); k < n && !r.Bad; k++ {
			if k > 0 {
				size++
			}
			size += valueSize(r)
		}
		return size
	case TagObjRef, TagArrRef, TagStrRef:
		r.Refs = true
		r.Str(HashLen)
		r.Uvarint()
		return r.Uvarint()
	}
	r.Bad = true
	return 0
}

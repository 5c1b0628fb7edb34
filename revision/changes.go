package revision

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/strata-db/strata/revision/internal/codec"
	"github.com/zeebo/xxh3"
)

// What changed between two values, for a reader that works on changes rather than on operations (package snapshots
// checks a write against a JSON Schema with them, validating only what the write changed). Like Diff, each skips
// equal subtrees by hash without reading them, so the cost grows with the change, not with the documents.

// EachChangedMember calls fn, in key order, for each member whose value differs between objects a and b (a member
// absent on one side is the zero Value there). Either may be the zero Value, meaning an empty object.
func (f *Forest) EachChangedMember(ctx context.Context, a, b Value, fn func(key string, va, vb Value) error) error {
	if !a.IsValid() {
		a = EmptyObject
	}
	if !b.IsValid() {
		b = EmptyObject
	}
	if a.Kind() != Object || b.Kind() != Object {
		return fmt.Errorf("%w: EachChangedMember compares objects, not %s and %s", ErrInvalidPath, a.Kind(), b.Kind())
	}
	d := &differ{r: f.reader(ctx), res: &DiffResult{}, visited: map[[32]byte]bool{}}
	return d.members(a, b, func(key, va, vb string) error { return fn(key, Value{va}, Value{vb}) })
}

// ArrayChange is one run of elements where an array b differs from an array a: a's elements [A, A+len(Removed))
// became Added, which are b's elements [B, B+len(Added)). Every element outside the runs is carried over unchanged.
type ArrayChange struct {
	A, B    uint64
	Removed []Value
	Added   []Value
}

// ArrayChanges lists, in order, the runs of elements where array b differs from array a, aligned as Diff and Merge
// align them (anchors, then Myers' edit script over the elements). Only the elements of the runs are read.
func (f *Forest) ArrayChanges(ctx context.Context, a, b Value) ([]ArrayChange, error) {
	d := &differ{r: f.reader(ctx), res: &DiffResult{}, visited: map[[32]byte]bool{}, opts: DiffOptions{MaxWork: defaultMaxWork}}
	hs, err := d.hunks(a, b)
	if err != nil {
		return nil, err
	}
	out := make([]ArrayChange, 0, len(hs))
	var shift int64 // elements b has gained (lost) before the next run
	for _, h := range hs {
		c := ArrayChange{A: h.lo, B: uint64(int64(h.lo) + shift), Removed: make([]Value, len(h.del)), Added: make([]Value, len(h.ins))}
		for i, e := range h.del {
			c.Removed[i] = Value{e}
		}
		for i, e := range h.ins {
			c.Added[i] = Value{e}
		}
		shift += int64(len(h.ins)) - int64(len(h.del))
		out = append(out, c)
	}
	return out, nil
}

// EqualityHash returns a 64-bit hash of v under JSON Schema's equality (const, enum, uniqueItems): numbers are
// compared by value (1, 1.0 and 10e-1 are equal), objects whatever the order of their members. Equal values have
// equal hashes; unequal values almost always differ. It reads the whole value.
func (f *Forest) EqualityHash(ctx context.Context, v Value) (uint64, error) {
	if !v.IsValid() {
		return 0, errNoValue
	}
	r := f.reader(ctx)
	h := xxh3.New()
	if err := r.equalityHash(h, v.enc); err != nil {
		return 0, err
	}
	return h.Sum64(), nil
}

func (r *reader) equalityHash(h *xxh3.Hasher, enc string) error {
	var scratch [binary.MaxVarintLen64 + 1]byte
	tagged := func(tag byte, n uint64) {
		scratch[0] = tag
		_, _ = h.Write(binary.AppendUvarint(scratch[:1], n))
	}
	switch enc[0] {
	case codec.TagNull:
		_, _ = h.Write([]byte{'z'})
	case codec.TagTrue:
		_, _ = h.Write([]byte{'t'})
	case codec.TagFalse:
		_, _ = h.Write([]byte{'f'})
	case codec.TagInt, codec.TagNum:
		text := codec.Payload(enc)
		if enc[0] == codec.TagInt {
			text = strconv.FormatInt(codec.DecodeInt(enc), 10)
		}
		d, ok := normalizeNumber(text)
		if !ok {
			d = decimal{digits: text}
		}
		sign := byte('+')
		if d.neg {
			sign = '-'
		}
		tagged('n', uint64(len(d.digits)))
		_, _ = h.Write([]byte{sign})
		_, _ = h.WriteString(d.digits)
		_, _ = h.Write(binary.AppendVarint(scratch[:0], d.exp))
		_, _ = h.WriteString(d.big)
	case codec.TagStr:
		s := codec.Payload(enc)
		tagged('s', uint64(len(s)))
		_, _ = h.WriteString(s)
	case codec.TagStrRef:
		v := Value{enc}
		n, err := r.root(v)
		if err != nil {
			return err
		}
		tagged('s', v.Len())
		return r.eachFrag(n, func(s string) { _, _ = h.WriteString(s) })
	case codec.TagObj, codec.TagObjRef:
		tagged('o', Value{enc}.Len())
		return r.each(Value{enc}, 0, func(key, val string) error {
			tagged('k', uint64(len(key)))
			_, _ = h.WriteString(key)
			return r.equalityHash(h, val)
		})
	case codec.TagArr, codec.TagArrRef:
		tagged('a', Value{enc}.Len())
		return r.each(Value{enc}, 0, func(_, val string) error { return r.equalityHash(h, val) })
	default:
		return fmt.Errorf("%w: unknown value tag %d", codec.ErrMalformed, enc[0])
	}
	return nil
}

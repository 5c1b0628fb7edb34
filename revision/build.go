package revision

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"unicode/utf8"

	"github.com/strata-db/strata/revision/internal/codec"
	"github.com/strata-db/strata/revision/internal/jsonscan"
	"github.com/strata-db/strata/store"
)

// MaxDepth is the deepest nesting of objects and arrays Strata accepts.
const MaxDepth = 512

// spillBytes is how much of an array the importer buffers before streaming it into a tree builder.
const spillBytes = 64 << 10

// frame is one open container during a build. Entries are kept encoded, back to back, in buf (for objects: key
// length, key, value; for arrays: value), so that building allocates nothing per member.
type frame struct {
	obj  bool
	buf  []byte
	offs []int // start of each buffered entry in buf
	b    *builder
	n    int // entries so far, spilled ones included
}

// tokenBuilder turns a stream of JSON tokens into a Value, writing the nodes of large containers through emit.
type tokenBuilder struct {
	emit  func(codec.Child, string) error
	stack []frame
	depth int
	root  []byte
}

func newTokenBuilder(emit func(codec.Child, string) error) *tokenBuilder {
	return &tokenBuilder{emit: emit}
}

// out is the buffer the next value is appended to.
func (tb *tokenBuilder) out() *[]byte {
	if tb.depth == 0 {
		return &tb.root
	}
	return &tb.stack[tb.depth-1].buf
}

// startValue records where a new array element begins.
func (tb *tokenBuilder) startValue() {
	if tb.depth > 0 {
		f := &tb.stack[tb.depth-1]
		if !f.obj {
			f.offs = append(f.offs, len(f.buf))
			f.n++
		}
	}
}

// endValue spills a large array into its builder.
func (tb *tokenBuilder) endValue() error {
	if tb.depth > 0 {
		f := &tb.stack[tb.depth-1]
		if !f.obj && len(f.buf) > spillBytes {
			return tb.spill(f)
		}
	}
	return nil
}

func (tb *tokenBuilder) spill(f *frame) error {
	if f.b == nil {
		f.b = newBuilder(codec.NodeArrLeaf, tb.emit)
	}
	s := string(f.buf)
	for i, o := range f.offs {
		end := len(s)
		if i+1 < len(f.offs) {
			end = f.offs[i+1]
		}
		if err := f.b.addEntry("", s[o:end]); err != nil {
			return err
		}
	}
	f.buf, f.offs = f.buf[:0], f.offs[:0]
	return nil
}

func (tb *tokenBuilder) key(k []byte) {
	f := &tb.stack[tb.depth-1]
	f.offs = append(f.offs, len(f.buf))
	f.n++
	f.buf = codec.AppendUvarint(f.buf, uint64(len(k)))
	f.buf = append(f.buf, k...)
}

func (tb *tokenBuilder) open(obj bool) {
	tb.startValue()
	if tb.depth == len(tb.stack) {
		tb.stack = append(tb.stack, frame{})
	}
	f := &tb.stack[tb.depth]
	f.obj, f.buf, f.offs, f.b, f.n = obj, f.buf[:0], f.offs[:0], nil, 0
	tb.depth++
}

// close finishes the innermost container and appends its encoding to its parent.
func (tb *tokenBuilder) close() error {
	f := &tb.stack[tb.depth-1]
	tb.depth--
	out := tb.out()
	leafKind := codec.NodeArrLeaf
	if f.obj {
		leafKind = codec.NodeObjLeaf
		if err := tb.sortMembers(f); err != nil {
			return err
		}
	}
	if f.b == nil && 1+codec.UvarintLen(uint64(len(f.offs)))+len(f.buf) <= maxInline {
		// Small: inline, written straight into the parent.
		*out = append(*out, codec.InlineTag(leafKind))
		*out = codec.AppendUvarint(*out, uint64(len(f.offs)))
		if !f.obj {
			*out = append(*out, f.buf...)
		} else {
			for i, o := range f.offs {
				*out = append(*out, f.buf[o:entryEnd(f, i)]...)
			}
		}
		return tb.endValue()
	}
	if f.b == nil {
		f.b = newBuilder(leafKind, tb.emit)
	}
	if f.obj {
		s := string(f.buf)
		for i, o := range f.offs {
			r := codec.Reader{S: s, I: o}
			k := r.Str(r.Uvarint())
			if err := f.b.addEntry(k, s[r.I:entryEnd(f, i)]); err != nil {
				return err
			}
		}
	} else if err := tb.spill(f); err != nil {
		return err
	}
	v, err := f.b.finish()
	if err != nil {
		return err
	}
	f.b = nil
	*out = append(*out, v.enc...)
	return tb.endValue()
}

// entryEnd is the end of buffered entry i. Object entries are sorted by key, so their offsets are not in buffer
// order: the end is found by decoding the entry.
func entryEnd(f *frame, i int) int {
	if !f.obj {
		if i+1 < len(f.offs) {
			return f.offs[i+1]
		}
		return len(f.buf)
	}
	r := codec.Reader{S: unsafeString(f.buf), I: f.offs[i]}
	r.Str(r.Uvarint())
	end, _ := codec.SkipValue(r.S, r.I)
	return end
}

// sortMembers orders an object's buffered members by key bytes and refuses duplicate keys.
func (tb *tokenBuilder) sortMembers(f *frame) error {
	s := unsafeString(f.buf)
	keyAt := func(o int) string {
		r := codec.Reader{S: s, I: o}
		return r.Str(r.Uvarint())
	}
	offs := f.offs
	if len(offs) < 12 {
		for i := 1; i < len(offs); i++ {
			for j := i; j > 0 && keyAt(offs[j]) < keyAt(offs[j-1]); j-- {
				offs[j], offs[j-1] = offs[j-1], offs[j]
			}
		}
	} else {
		sort.Slice(offs, func(i, j int) bool { return keyAt(offs[i]) < keyAt(offs[j]) })
	}
	for i := 1; i < len(offs); i++ {
		if k := keyAt(offs[i]); k == keyAt(offs[i-1]) {
			return &JSONError{Path: tb.pathOf(tb.depth).String(), Msg: fmt.Sprintf("duplicate key %q: an object may name each member only once", k)}
		}
	}
	return nil
}

// path is the pointer of the innermost open container, for error messages.
func (tb *tokenBuilder) path() Pointer { return tb.pathOf(tb.depth - 1) }

// pathOf is the pointer of the container whose ancestors are the first n open frames.
func (tb *tokenBuilder) pathOf(n int) Pointer {
	p := Pointer{}
	for i := 0; i < n; i++ {
		f := &tb.stack[i]
		if f.obj {
			o := f.offs[len(f.offs)-1]
			r := codec.Reader{S: unsafeString(f.buf), I: o}
			p = append(p, r.Str(r.Uvarint()))
		} else {
			p = append(p, fmt.Sprint(f.n-1))
		}
	}
	return p
}

func (tb *tokenBuilder) scalar(k jsonscan.Kind, b []byte) error {
	tb.startValue()
	out := tb.out()
	switch k {
	case jsonscan.Null:
		*out = append(*out, codec.TagNull)
	case jsonscan.True:
		*out = append(*out, codec.TagTrue)
	case jsonscan.False:
		*out = append(*out, codec.TagFalse)
	case jsonscan.Number:
		*out = codec.AppendNumber(*out, b)
	case jsonscan.String:
		if len(b) <= maxInlineS {
			*out = codec.AppendString(*out, b)
		} else {
			v, err := buildString(b, tb.emit)
			if err != nil {
				return err
			}
			*out = append(*out, v.enc...)
		}
	}
	return tb.endValue()
}

// token feeds one token.
func (tb *tokenBuilder) token(k jsonscan.Kind, b []byte) error {
	switch k {
	case jsonscan.BeginObject:
		tb.open(true)
	case jsonscan.BeginArray:
		tb.open(false)
	case jsonscan.EndObject, jsonscan.EndArray:
		return tb.close()
	case jsonscan.Key:
		tb.key(b)
	default:
		return tb.scalar(k, b)
	}
	return nil
}

// result returns the finished value.
func (tb *tokenBuilder) result() Value { return Value{string(tb.root)} }

// buildString stores a long string as a tree of fragments cut at character boundaries.
func buildString(s []byte, emit func(codec.Child, string) error) (Value, error) {
	b := newBuilder(codec.NodeStrLeaf, emit)
	for len(s) > 0 {
		n := min(len(s), maxInlineS)
		for n < len(s) && n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		raw := make([]byte, 0, n+1)
		raw = append(raw, codec.NodeStrLeaf)
		raw = append(raw, s[:n]...)
		c := codec.Child{Hash: store.HashOf(raw), Count: uint64(n), CSize: codec.EscapedLen(string(s[:n]))}
		if err := emit(c, string(raw)); err != nil {
			return Value{}, err
		}
		if err := b.addChild(c); err != nil {
			return Value{}, err
		}
		s = s[n:]
	}
	return b.finish()
}

// scanInto runs a scanner to the end through a token builder.
func scanInto(ctx context.Context, sc *jsonscan.Scanner, tb *tokenBuilder) (Value, error) {
	for i := 0; ; i++ {
		if i&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return Value{}, err
			}
		}
		k, b, err := sc.Next()
		if err == io.EOF {
			return tb.result(), nil
		}
		if err != nil {
			var se *jsonscan.SyntaxError
			if errors.As(err, &se) {
				return Value{}, &JSONError{Offset: se.Offset, Line: se.Line, Column: se.Column, Path: tb.path().String(), Msg: se.Msg}
			}
			return Value{}, err
		}
		if err := tb.token(k, b); err != nil {
			var je *JSONError
			if errors.As(err, &je) && je.Line == 0 {
				je.Offset = sc.Offset()
			}
			return Value{}, err
		}
	}
}

// Import reads one JSON document from r and stores it, streaming: memory stays bounded by the widest object and the
// depth, never by the document. Nodes go to the store in batches as they are made; a failed import may leave
// unreferenced nodes behind, which garbage collection removes.
func (f *Forest) Import(ctx context.Context, r io.Reader) (Value, Stats, error) {
	w := &batchWriter{ctx: ctx, ns: f.ns}
	tb := newTokenBuilder(w.emit)
	v, err := scanInto(ctx, jsonscan.New(r, MaxDepth), tb)
	if err != nil {
		return Value{}, w.stats, err
	}
	if err := w.flush(); err != nil {
		return Value{}, w.stats, err
	}
	return v, w.stats, nil
}

// ImportBytes is Import for a document in memory.
func (f *Forest) ImportBytes(ctx context.Context, data []byte) (Value, Stats, error) {
	return f.Import(ctx, bytes.NewReader(data))
}

// parseDepth builds a value inside a write, nesting at most maxDepth deep: its nodes join the write's overlay.
func (t *txn) parseDepth(data []byte, maxDepth int) (Value, error) {
	if maxDepth <= 0 {
		// Only a scalar fits; the scanner's own limit (0 means its default) cannot say that.
		maxDepth = 1
		v, err := scanInto(t.ctx, jsonscan.NewBytes(data, maxDepth), newTokenBuilder(t.emit))
		if err == nil && (v.Kind() == Object || v.Kind() == Array) {
			return Value{}, &JSONError{Msg: "nesting deeper than the document allows"}
		}
		return v, err
	}
	return scanInto(t.ctx, jsonscan.NewBytes(data, maxDepth), newTokenBuilder(t.emit))
}

// batchWriter sends nodes to the store in batches.
type batchWriter struct {
	ctx   context.Context
	ns    store.NodeWriter
	batch []store.Node
	bytes int
	stats Stats
}

func (w *batchWriter) emit(c codec.Child, raw string) error {
	w.batch = append(w.batch, store.Node{Hash: c.Hash, Data: []byte(raw)})
	w.bytes += len(raw)
	if w.bytes >= 4<<20 {
		return w.flush()
	}
	return nil
}

func (w *batchWriter) flush() error {
	if len(w.batch) == 0 {
		return nil
	}
	st, err := w.ns.PutNodes(w.ctx, w.batch)
	w.stats.Add(st)
	w.batch, w.bytes = w.batch[:0], 0
	return err
}

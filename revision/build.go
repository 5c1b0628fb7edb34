package revision

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/strata-db/strata/revision/internal/codec"
	"github.com/strata-db/strata/revision/internal/jsonscan"
	"github.com/strata-db/strata/store"
)

// MaxDepth is the deepest nesting of objects and arrays a resource may have: a resource of 512 nested arrays is
// accepted, one of 513 is refused as invalid input (ErrInvalidJSON). It counts from the resource's own top; the
// database root, the object that holds the resources, adds a level above every resource and is not counted.
const MaxDepth = 512

// depthAt is how deep a value placed k levels below the database root may nest, so that its resource stays within
// MaxDepth: the root itself (k = 0) is one level more than a resource.
func depthAt(k int) int {
	if k == 0 {
		return MaxDepth + 1
	}
	return MaxDepth - (k - 1)
}

// spillBytes is how much of an array the importer buffers before streaming it into a tree builder.
const spillBytes = 64 << 10

// frame is one open container during a build. Entries are kept encoded, back to back, in buf (for objects: key
// length, key, value; for arrays: value), so that building allocates nothing per member.
type frame struct {
	obj  bool
	buf  []byte
	ents []entry // the buffered entries, in buf order until an object's are sorted
	b    *builder
	n    int // entries so far, spilled ones included
}

// entry is where one buffered entry lies in its frame's buf, and what the builder already knows about it, so that
// nothing has to decode it again.
type entry struct {
	val  int    // where the value begins; for objects, the key is buf[val-klen : val], after its length
	end  int    // just past the value
	klen int    // length of the key (objects)
	kpre uint64 // objects: the key's first 8 bytes, big-endian, zero-padded (ordered as the keys are, unless equal)
	size uint64 // the entry's length as compact JSON: for objects, with the quoted key and the colon
}

func (f *frame) key(e *entry) string { return unsafeString(f.buf[e.val-e.klen : e.val]) }

// start is where the entry begins in buf: at the key's length for objects.
func (f *frame) start(e *entry) int {
	if !f.obj {
		return e.val
	}
	return e.val - e.klen - codec.UvarintLen(uint64(e.klen))
}

// keyLess orders members by key bytes.
func (f *frame) keyLess(a, b *entry) bool {
	if a.kpre != b.kpre {
		return a.kpre < b.kpre
	}
	return f.key(a) < f.key(b)
}

// escLen is the length of the string b inside a JSON string, given whether the scanner decoded it from escapes:
// if not, b is a valid JSON string's text as written, where no byte needs escaping.
func escLen(b []byte, escaped bool) uint64 {
	if !escaped {
		return uint64(len(b))
	}
	return codec.EscapedLen(unsafeString(b))
}

// checkSizes makes every value's compact JSON size, as the builder carries it, be checked against a walk of its
// encoding (tests set it).
var checkSizes bool

// tokenBuilder turns a stream of JSON tokens into a Value, writing the nodes of large containers through emit.
type tokenBuilder struct {
	emit  func(codec.Child, string) error
	stack []frame
	depth int
	root  []byte
	// escaped says whether the string of the current String or Key token was decoded from escape sequences.
	escaped bool
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
			o := len(f.buf)
			f.ents = append(f.ents, entry{val: o, end: o})
			f.n++
		}
	}
}

// endValue records the end and compact JSON size of the value just appended, and spills a large array into its
// builder.
func (tb *tokenBuilder) endValue(size uint64) error {
	if tb.depth > 0 {
		f := &tb.stack[tb.depth-1]
		e := &f.ents[len(f.ents)-1]
		e.end = len(f.buf)
		e.size += size
		if checkSizes {
			if want := codec.ValueSize(unsafeString(f.buf[e.val:e.end])); want != size {
				panic(fmt.Sprintf("internal error: value size %d, its encoding says %d", size, want))
			}
		}
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
	// The chunker copies what it keeps, so the entries can be handed over as views of buf.
	s := unsafeString(f.buf)
	for i := range f.ents {
		e := &f.ents[i]
		if err := f.b.addSized("", s[e.val:e.end], e.size); err != nil {
			return err
		}
	}
	f.buf, f.ents = f.buf[:0], f.ents[:0]
	return nil
}

func (tb *tokenBuilder) key(k []byte) {
	f := &tb.stack[tb.depth-1]
	f.buf = codec.AppendUvarint(f.buf, uint64(len(k)))
	f.buf = append(f.buf, k...)
	var pre [8]byte
	copy(pre[:], k)
	size := 3 + escLen(k, tb.escaped) // quotes and colon
	if checkSizes && size != 3+codec.EscapedLen(string(k)) {
		panic(fmt.Sprintf("internal error: key %q size %d", k, size))
	}
	f.ents = append(f.ents, entry{val: len(f.buf), klen: len(k), kpre: binary.BigEndian.Uint64(pre[:]), size: size})
	f.n++
}

func (tb *tokenBuilder) open(obj bool) {
	tb.startValue()
	if tb.depth == len(tb.stack) {
		tb.stack = append(tb.stack, frame{})
	}
	f := &tb.stack[tb.depth]
	f.obj, f.buf, f.ents, f.b, f.n = obj, f.buf[:0], f.ents[:0], nil, 0
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
	if f.b == nil && 1+codec.UvarintLen(uint64(len(f.ents)))+len(f.buf) <= maxInline {
		// Small: inline, written straight into the parent.
		*out = append(*out, codec.InlineTag(leafKind))
		*out = codec.AppendUvarint(*out, uint64(len(f.ents)))
		size := uint64(2)
		if len(f.ents) > 0 {
			size += uint64(len(f.ents) - 1) // commas
		}
		for i := range f.ents {
			size += f.ents[i].size
		}
		if !f.obj {
			*out = append(*out, f.buf...)
		} else {
			for i := range f.ents {
				e := &f.ents[i]
				*out = append(*out, f.buf[f.start(e):e.end]...)
			}
		}
		return tb.endValue(size)
	}
	if f.b == nil {
		f.b = newBuilder(leafKind, tb.emit)
	}
	if f.obj {
		s := unsafeString(f.buf)
		for i := range f.ents {
			e := &f.ents[i]
			if err := f.b.addSized(s[e.val-e.klen:e.val], s[e.val:e.end], e.size); err != nil {
				return err
			}
		}
	} else if err := tb.spill(f); err != nil {
		return err
	}
	v, size, err := f.b.finishSized()
	if err != nil {
		return err
	}
	f.b = nil
	*out = append(*out, v.enc...)
	return tb.endValue(size)
}

// sortMembers orders an object's buffered members by key bytes and refuses duplicate keys.
func (tb *tokenBuilder) sortMembers(f *frame) error {
	ents := f.ents
	if len(ents) < 12 {
		for i := 1; i < len(ents); i++ {
			for j := i; j > 0 && f.keyLess(&ents[j], &ents[j-1]); j-- {
				ents[j], ents[j-1] = ents[j-1], ents[j]
			}
		}
	} else {
		slices.SortFunc(ents, func(a, b entry) int {
			if a.kpre != b.kpre {
				return cmp.Compare(a.kpre, b.kpre)
			}
			return strings.Compare(f.key(&a), f.key(&b))
		})
	}
	for i := 1; i < len(ents); i++ {
		if k := f.key(&ents[i]); ents[i].kpre == ents[i-1].kpre && k == f.key(&ents[i-1]) {
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
			p = append(p, strings.Clone(f.key(&f.ents[len(f.ents)-1])))
		} else {
			p = append(p, fmt.Sprint(f.n-1))
		}
	}
	return p
}

func (tb *tokenBuilder) scalar(k jsonscan.Kind, b []byte) error {
	tb.startValue()
	out := tb.out()
	var size uint64
	switch k {
	case jsonscan.Null:
		*out = append(*out, codec.TagNull)
		size = 4
	case jsonscan.True:
		*out = append(*out, codec.TagTrue)
		size = 4
	case jsonscan.False:
		*out = append(*out, codec.TagFalse)
		size = 5
	case jsonscan.Number:
		// Written back as its text: an integer in its compact form only when the text is that integer's canonical form.
		*out = codec.AppendNumber(*out, b)
		size = uint64(len(b))
	case jsonscan.String:
		if len(b) <= maxInlineS {
			*out = codec.AppendString(*out, b)
			size = 2 + escLen(b, tb.escaped)
		} else {
			v, err := buildString(b, tb.emit)
			if err != nil {
				return err
			}
			*out = append(*out, v.enc...)
			size = codec.ValueSize(v.enc) // a reference: it carries its size
		}
	}
	return tb.endValue(size)
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

// scanInto runs a scanner to the end through a token builder. With lines (JSON Lines), the values it reads become
// the elements of one array.
func scanInto(ctx context.Context, sc *jsonscan.Scanner, tb *tokenBuilder, lines bool) (Value, error) {
	if lines {
		tb.open(false)
	}
	for i := 0; ; i++ {
		if i&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return Value{}, err
			}
		}
		k, b, err := sc.Next()
		if err == io.EOF {
			if lines {
				if err := tb.close(); err != nil {
					return Value{}, err
				}
			}
			return tb.result(), nil
		}
		if err != nil {
			var se *jsonscan.SyntaxError
			if errors.As(err, &se) {
				return Value{}, &JSONError{Offset: se.Offset, Line: se.Line, Column: se.Column, Path: tb.path().String(), Msg: se.Msg}
			}
			return Value{}, err
		}
		tb.escaped = sc.Escaped(b)
		if err := tb.token(k, b); err != nil {
			var je *JSONError
			if errors.As(err, &je) && je.Line == 0 {
				// Found at the end of the object (a duplicate key): point at its closing brace, the byte just read,
				// and say so (found in review: the position was one past it, and read as the duplicate's).
				je.Offset, je.Line, je.Column = sc.Position()
				if je.Offset > 0 && je.Column > 1 {
					je.Offset, je.Column = je.Offset-1, je.Column-1
				}
				je.Msg += " (the position is the end of the object that holds it)"
			}
			return Value{}, err
		}
	}
}

// Import reads one JSON document from r and stores it, streaming: memory stays bounded by the widest object and the
// depth, never by the document. Nodes go to the store in batches as they are made; a failed import may leave
// unreferenced nodes behind, which garbage collection removes.
func (f *Forest) Import(ctx context.Context, r io.Reader) (Value, Stats, error) {
	return f.ImportWith(ctx, r, nil)
}

// ImportOptions tunes ImportWith. The zero value (or nil) reads one JSON document, as Import does.
type ImportOptions struct {
	// Lines reads JSON Lines: one JSON value per line (blank lines skipped), stored as the elements of one array,
	// in order. Empty input is an empty array.
	Lines bool
	// Depth is how many levels below the database root the value will be placed: 0 or 1 for a whole document (a
	// resource of the root), more for a value inside one, so that its resource nests at most MaxDepth deep.
	Depth int
	// BatchBytes is how many bytes of nodes go to the store in one PutNodes (default 4 MiB). One batch is in
	// flight while the next is built, so the import holds about two.
	BatchBytes int
}

// ImportWith is Import with options.
func (f *Forest) ImportWith(ctx context.Context, r io.Reader, opts *ImportOptions) (Value, Stats, error) {
	o, depth, err := importDepth(opts)
	if err != nil {
		return Value{}, Stats{}, err
	}
	if o.Lines {
		return f.importScan(ctx, jsonscan.NewLines(r, depth), o)
	}
	return f.importScan(ctx, jsonscan.New(r, depth), o)
}

// ImportBytesWith is ImportWith for a document in memory, scanned where it lies instead of through a reader's
// buffer. data must not change until it returns.
func (f *Forest) ImportBytesWith(ctx context.Context, data []byte, opts *ImportOptions) (Value, Stats, error) {
	o, depth, err := importDepth(opts)
	if err != nil {
		return Value{}, Stats{}, err
	}
	if o.Lines {
		return f.importScan(ctx, jsonscan.NewLines(bytes.NewReader(data), depth), o)
	}
	return f.importScan(ctx, jsonscan.NewBytes(data, depth), o)
}

// importDepth returns the options and the nesting the imported value may have.
func importDepth(opts *ImportOptions) (ImportOptions, int, error) {
	var o ImportOptions
	if opts != nil {
		o = *opts
	}
	depth := depthAt(max(o.Depth, 1))
	if o.Lines {
		depth-- // the array the lines make
	}
	if depth <= 0 {
		return o, 0, fmt.Errorf("%w: a value placed %d levels down cannot nest within the %d-level limit", ErrLimit, o.Depth, MaxDepth)
	}
	return o, depth, nil
}

func (f *Forest) importScan(ctx context.Context, sc *jsonscan.Scanner, o ImportOptions) (Value, Stats, error) {
	w := &batchWriter{ctx: ctx, ns: f.ns, max: o.BatchBytes}
	if w.max <= 0 {
		w.max = defaultBatchBytes
	}
	tb := newTokenBuilder(w.emit)
	v, err := scanInto(ctx, sc, tb, o.Lines)
	if err != nil {
		w.wait() // its error, if any, matters less than the one that stopped the import
		return Value{}, w.stats, err
	}
	if err := w.flush(); err != nil {
		return Value{}, w.stats, err
	}
	return v, w.stats, nil
}

// Place returns the change that puts v at ptr in root, as a JSON Patch "add" would (creating or replacing an
// object member; inserting into an array, or appending at "-"), where v is a value already stored, such as one
// Import returned. Only the nodes along ptr are built; v's own nodes are neither read nor copied, and are not in
// the change. v must fit the depth it lands at: import it with ImportOptions.Depth = len(ptr).
func (f *Forest) Place(ctx context.Context, root Value, ptr Pointer, v Value) (*Change, error) {
	if !v.IsValid() {
		return nil, errNoValue
	}
	t := f.newTxn(ctx)
	nv, err := t.put(root, ptr, editAdd, v)
	if err != nil {
		return nil, err
	}
	return t.change(nv)
}

// ImportBytes is Import for a document in memory.
func (f *Forest) ImportBytes(ctx context.Context, data []byte) (Value, Stats, error) {
	return f.ImportBytesWith(ctx, data, nil)
}

// parseDepth builds a value inside a write, nesting at most maxDepth deep: its nodes join the write's overlay.
func (t *txn) parseDepth(data []byte, maxDepth int) (Value, error) {
	if maxDepth <= 0 {
		// Only a scalar fits; the scanner's own limit (0 means its default) cannot say that.
		maxDepth = 1
		v, err := scanInto(t.ctx, jsonscan.NewBytes(data, maxDepth), newTokenBuilder(t.emit), false)
		if err == nil && (v.Kind() == Object || v.Kind() == Array) {
			return Value{}, &JSONError{Msg: "nesting deeper than the document allows"}
		}
		return v, err
	}
	return scanInto(t.ctx, jsonscan.NewBytes(data, maxDepth), newTokenBuilder(t.emit), false)
}

// defaultBatchBytes is ImportOptions.BatchBytes's default.
const defaultBatchBytes = 4 << 20

// batchWriter sends nodes to the store in batches. A full batch is written by a goroutine of its own while the
// import goes on (compressing and storing overlap parsing and chunking); at most one batch is in flight, so memory
// stays bounded by two batches.
type batchWriter struct {
	ctx      context.Context
	ns       store.NodeWriter
	batch    []store.Node
	bytes    int
	max      int // bytes of nodes in a full batch
	stats    Stats
	inFlight chan putResult // the batch being written, or nil
}

type putResult struct {
	st  Stats
	err error
}

func (w *batchWriter) emit(c codec.Child, raw string) error {
	w.batch = append(w.batch, storeNode(c.Hash, raw))
	w.bytes += len(raw)
	if w.bytes >= w.max {
		return w.send()
	}
	return nil
}

// send hands the batch to a goroutine that writes it, once the previous one is written.
func (w *batchWriter) send() error {
	if err := w.wait(); err != nil {
		return err
	}
	batch := w.batch
	w.batch, w.bytes = make([]store.Node, 0, len(batch)), 0
	done := make(chan putResult, 1)
	w.inFlight = done
	go func() {
		st, err := w.ns.PutNodes(w.ctx, batch)
		done <- putResult{st, err}
	}()
	return nil
}

// wait waits for the batch in flight, if any, and returns its error.
func (w *batchWriter) wait() error {
	if w.inFlight == nil {
		return nil
	}
	r := <-w.inFlight
	w.inFlight = nil
	w.stats.Add(r.st)
	return r.err
}

// flush writes what is left and waits for every write to finish. It must be called before the import returns,
// failed or not, so that no write goes on behind the caller's back.
func (w *batchWriter) flush() error {
	if err := w.wait(); err != nil {
		return err
	}
	if len(w.batch) == 0 {
		return nil
	}
	st, err := w.ns.PutNodes(w.ctx, w.batch)
	w.stats.Add(st)
	w.batch, w.bytes = w.batch[:0], 0
	return err
}

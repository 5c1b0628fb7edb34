package revision

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/strata-db/strata/revision/internal/codec"
	"github.com/strata-db/strata/store"
)

// jsonWriter streams JSON text straight from nodes into an io.Writer, in 64 KiB pieces.
type jsonWriter struct {
	r   *reader
	w   io.Writer
	buf []byte
	err error
}

func (jw *jsonWriter) flushIfFull() error {
	if len(jw.buf) >= 64<<10 {
		return jw.flush()
	}
	return nil
}

func (jw *jsonWriter) flush() error {
	if len(jw.buf) > 0 && jw.w != nil {
		if _, err := jw.w.Write(jw.buf); err != nil {
			return err
		}
		jw.buf = jw.buf[:0]
	}
	return nil
}

// WriteJSON streams v as compact JSON text (keys in byte order) to w.
func (f *Forest) WriteJSON(ctx context.Context, w io.Writer, v Value) error {
	jw := &jsonWriter{r: f.reader(ctx), w: w, buf: make([]byte, 0, 72<<10)}
	if err := jw.value(v.enc); err != nil {
		return err
	}
	return jw.flush()
}

// WriteJSONLines streams the elements of array v as JSON Lines to w: each element's compact JSON (keys in byte order)
// on a line of its own, ended by a newline. An empty array writes nothing.
func (f *Forest) WriteJSONLines(ctx context.Context, w io.Writer, v Value) error {
	if k := v.Kind(); k != Array {
		return fmt.Errorf("%w: JSON Lines holds the elements of an array, and this value is %s", ErrInvalidPath, KindPhrase(k))
	}
	jw := &jsonWriter{r: f.reader(ctx), w: w, buf: make([]byte, 0, 72<<10)}
	err := jw.r.each(v, 0, func(_, val string) error {
		if err := jw.value(val); err != nil {
			return err
		}
		jw.buf = append(jw.buf, '\n')
		return jw.flushIfFull()
	})
	if err != nil {
		return err
	}
	return jw.flush()
}

// KindPhrase names a kind in a sentence: "an object", "a string", "null".
func KindPhrase(k Kind) string {
	switch k {
	case Object, Array:
		return "an " + k.String()
	case Null:
		return "null"
	case Invalid:
		return "no value"
	}
	return "a " + k.String()
}

// Text returns the whole text of a string value, reading its nodes if it is long.
func (f *Forest) Text(ctx context.Context, v Value) (string, error) {
	if v.Kind() != String {
		return "", fmt.Errorf("%w: %s is not a string", ErrInvalidPath, v.Kind())
	}
	return f.reader(ctx).stringBytes(v)
}

// AppendJSON appends v as compact JSON text to b.
func (f *Forest) AppendJSON(ctx context.Context, b []byte, v Value) ([]byte, error) {
	jw := &jsonWriter{r: f.reader(ctx), buf: b}
	err := jw.value(v.enc)
	return jw.buf, err
}

// JSON returns v as compact JSON text.
func (f *Forest) JSON(ctx context.Context, v Value) ([]byte, error) { return f.AppendJSON(ctx, nil, v) }

func (jw *jsonWriter) value(enc string) error {
	if enc == "" {
		return errNoValue
	}
	switch enc[0] {
	case codec.TagNull:
		jw.buf = append(jw.buf, "null"...)
	case codec.TagTrue:
		jw.buf = append(jw.buf, "true"...)
	case codec.TagFalse:
		jw.buf = append(jw.buf, "false"...)
	case codec.TagInt:
		jw.buf = strconv.AppendInt(jw.buf, codec.DecodeInt(enc), 10)
	case codec.TagNum:
		jw.buf = append(jw.buf, codec.Payload(enc)...)
	case codec.TagStr:
		jw.buf = codec.AppendJSONString(jw.buf, codec.Payload(enc))
	case codec.TagStrRef:
		n, err := jw.r.root(Value{enc})
		if err != nil {
			return err
		}
		jw.buf = append(jw.buf, '"')
		err = jw.r.eachFrag(n, func(s string) {
			jw.buf = codec.AppendEscaped(jw.buf, s)
			if jw.err == nil {
				jw.err = jw.flushIfFull()
			}
		})
		if err != nil {
			return err
		}
		if jw.err != nil {
			return jw.err
		}
		jw.buf = append(jw.buf, '"')
	case codec.TagObj, codec.TagArr:
		r := codec.Reader{S: enc}
		if err := jw.inline(&r, 0); err != nil {
			return err
		}
		if r.Bad {
			return fmt.Errorf("%w: malformed inline container", store.ErrCorruptNode)
		}
	case codec.TagObjRef, codec.TagArrRef:
		obj := enc[0] == codec.TagObjRef
		open, close := byte('['), byte(']')
		if obj {
			open, close = '{', '}'
		}
		jw.buf = append(jw.buf, open)
		first := true
		err := jw.r.each(Value{enc}, 0, func(key, val string) error {
			if !first {
				jw.buf = append(jw.buf, ',')
			}
			first = false
			if obj {
				jw.buf = codec.AppendJSONString(jw.buf, key)
				jw.buf = append(jw.buf, ':')
			}
			if err := jw.value(val); err != nil {
				return err
			}
			return jw.flushIfFull()
		})
		if err != nil {
			return err
		}
		jw.buf = append(jw.buf, close)
	default:
		return fmt.Errorf("%w: unknown value tag %d", codec.ErrMalformed, enc[0])
	}
	return nil
}

// inline writes the inline value at r.I and moves r past it, in one pass: iterating an inline container with each
// would find every member's end first (codec.SkipValue, which walks nested containers once per level) and then
// decode the member again. A reference inside is written through value. A malformed encoding sets r.Bad.
func (jw *jsonWriter) inline(r *codec.Reader, depth int) error {
	if depth > 10000 {
		r.Bad = true
		return nil
	}
	start := r.I
	switch r.Byte() {
	case codec.TagNull:
		jw.buf = append(jw.buf, "null"...)
	case codec.TagTrue:
		jw.buf = append(jw.buf, "true"...)
	case codec.TagFalse:
		jw.buf = append(jw.buf, "false"...)
	case codec.TagInt:
		u := r.Uvarint()
		jw.buf = strconv.AppendInt(jw.buf, int64(u>>1)^-int64(u&1), 10)
	case codec.TagNum:
		jw.buf = append(jw.buf, r.Str(r.Uvarint())...)
	case codec.TagStr:
		jw.buf = codec.AppendJSONString(jw.buf, r.Str(r.Uvarint()))
	case codec.TagObj:
		jw.buf = append(jw.buf, '{')
		n := r.Uvarint()
		for k := uint64(0); k < n && !r.Bad; k++ {
			if k > 0 {
				jw.buf = append(jw.buf, ',')
			}
			jw.buf = codec.AppendJSONString(jw.buf, r.Str(r.Uvarint()))
			jw.buf = append(jw.buf, ':')
			if err := jw.inline(r, depth+1); err != nil {
				return err
			}
		}
		jw.buf = append(jw.buf, '}')
	case codec.TagArr:
		jw.buf = append(jw.buf, '[')
		n := r.Uvarint()
		for k := uint64(0); k < n && !r.Bad; k++ {
			if k > 0 {
				jw.buf = append(jw.buf, ',')
			}
			if err := jw.inline(r, depth+1); err != nil {
				return err
			}
		}
		jw.buf = append(jw.buf, ']')
	case codec.TagObjRef, codec.TagArrRef, codec.TagStrRef:
		r.Str(codec.HashLen)
		r.Uvarint()
		r.Uvarint()
		if r.Bad {
			return nil
		}
		return jw.value(r.S[start:r.I])
	default:
		r.Bad = true
	}
	if r.Bad {
		return nil
	}
	return jw.flushIfFull()
}

// MaterialZero is how Materialize gives the integer 0 (see there); query's own decoder gives it so too.
const MaterialZero = json.Number("0")

// errNoValue is returned for the zero Value, which stands for "absent", not for any JSON.
var errNoValue = fmt.Errorf("%w: no value (an absent member or element has no JSON form)", ErrNotFound)

// Materialize returns v as Go values of the kinds gojq and encoding/json use: nil, bool, int (integers that fit,
// but zero), json.Number (zero and every other number, with its exact text), string, []any and map[string]any.
//
// Zero is json.Number("0") because gojq, which reads every number of its input as a json.Number, negates one by
// its text: -(0) is -0 there, and 0 for an int. For every other integer an int behaves in gojq exactly as its
// json.Number does, and costs no parsing in arithmetic.
func (f *Forest) Materialize(ctx context.Context, v Value) (any, error) {
	return f.reader(ctx).materialize(v.enc)
}

func (r *reader) materialize(enc string) (any, error) { return r.materializeAs(enc, false) }

// materializeAs builds Go values; exactNumbers makes integers json.Number too (the form jsondiff compares).
func (r *reader) materializeAs(enc string, exactNumbers bool) (any, error) {
	if enc == "" {
		return nil, errNoValue
	}
	switch enc[0] {
	case codec.TagNull:
		return nil, nil
	case codec.TagTrue:
		return true, nil
	case codec.TagFalse:
		return false, nil
	case codec.TagInt:
		i := codec.DecodeInt(enc)
		if exactNumbers {
			return json.Number(strconv.FormatInt(i, 10)), nil
		}
		if i == 0 {
			return MaterialZero, nil
		}
		return int(i), nil
	case codec.TagNum:
		return json.Number(codec.Payload(enc)), nil
	case codec.TagStr:
		return codec.Payload(enc), nil
	case codec.TagStrRef:
		return r.stringBytes(Value{enc})
	case codec.TagObj, codec.TagObjRef:
		m := make(map[string]any, Value{enc}.Len())
		err := r.each(Value{enc}, 0, func(key, val string) error {
			x, err := r.materializeAs(val, exactNumbers)
			m[key] = x
			return err
		})
		return m, err
	case codec.TagArr, codec.TagArrRef:
		a := make([]any, 0, Value{enc}.Len())
		err := r.each(Value{enc}, 0, func(_, val string) error {
			x, err := r.materializeAs(val, exactNumbers)
			a = append(a, x)
			return err
		})
		return a, err
	}
	return nil, fmt.Errorf("%w: unknown value tag %d", codec.ErrMalformed, enc[0])
}

// AppendJSONString appends s, valid UTF-8, as a JSON string literal, escaped as Strata writes every string.
func AppendJSONString(b []byte, s string) []byte { return codec.AppendJSONString(b, s) }

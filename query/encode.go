package query

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxResultDepth is the deepest result the encoder writes. Deeper values (only a program can build them; stored
// documents nest at most revision.MaxDepth) are refused rather than recursed into.
const maxResultDepth = 10_000

// errTooBig and errTooDeep stop an encoding that went over its budget.
var (
	errTooBig  = errors.New("result over budget")
	errTooDeep = errors.New("result nested too deeply")
)

// encoder writes the values gojq produces (nil, bool, int, float64, *big.Int, json.Number, string, []any,
// map[string]any) as compact JSON: keys in byte order, numbers of type json.Number as their exact text, floats as
// gojq writes them, strings escaped as Strata writes them (only '"', '\\' and control characters). It stops with
// errTooBig as soon as the output passes max bytes, so a value that would take gigabytes as text (a program can build
// one from a few shared pieces) costs at most max bytes.
type encoder struct {
	buf   []byte
	max   int
	depth int
}

// appendJSON encodes v after buf, in at most max bytes of output (max <= 0: no limit).
func appendJSON(buf []byte, v any, max int) ([]byte, error) {
	e := encoder{buf: buf, max: max}
	if max > 0 {
		e.max = len(buf) + max
	}
	err := e.encode(v)
	return e.buf, err
}

func (e *encoder) over() bool { return e.max > 0 && len(e.buf) > e.max }

func (e *encoder) encode(v any) error {
	switch v := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case bool:
		if v {
			e.buf = append(e.buf, "true"...)
		} else {
			e.buf = append(e.buf, "false"...)
		}
	case int:
		e.buf = strconv.AppendInt(e.buf, int64(v), 10)
	case float64:
		e.buf = appendFloat(e.buf, v)
	case *big.Int:
		// Converting a big integer to decimal takes more than linear time: check its size first.
		if e.max > 0 && len(e.buf)+v.BitLen()*30103/100000 > e.max {
			return errTooBig
		}
		e.buf = v.Append(e.buf, 10)
	case json.Number:
		e.buf = append(e.buf, v...)
	case string:
		if e.max > 0 && len(e.buf)+len(v) > e.max {
			return errTooBig
		}
		e.buf = appendString(e.buf, v)
	case []any:
		if e.depth++; e.depth > maxResultDepth {
			return errTooDeep
		}
		e.buf = append(e.buf, '[')
		for i, x := range v {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.encode(x); err != nil {
				return err
			}
			if e.over() {
				return errTooBig
			}
		}
		e.buf = append(e.buf, ']')
		e.depth--
	case map[string]any:
		if e.depth++; e.depth > maxResultDepth {
			return errTooDeep
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		e.buf = append(e.buf, '{')
		for i, k := range keys {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = appendString(e.buf, k)
			e.buf = append(e.buf, ':')
			if err := e.encode(v[k]); err != nil {
				return err
			}
			if e.over() {
				return errTooBig
			}
		}
		e.buf = append(e.buf, '}')
		e.depth--
	default:
		return fmt.Errorf("cannot encode a value of Go type %T", v)
	}
	if e.over() {
		return errTooBig
	}
	return nil
}

// appendFloat writes a float as gojq does: NaN as null, infinities clamped to ±MaxFloat64, exponent form outside
// [1e-6, 1e21).
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) {
		return append(b, "null"...)
	}
	f = min(max(f, -math.MaxFloat64), math.MaxFloat64)
	format := byte('f')
	if x := math.Abs(f); x != 0 && x < 1e-6 || x >= 1e21 {
		format = 'e'
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n-start >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string the way gojq does: '"', '\\', control characters and DEL (U+007F)
// escaped, everything else as is; invalid UTF-8 (a program can make it) becomes U+FFFD. (Found in review: DEL was
// written as is, as Strata stores it, so the text differed from gojq's.)
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < 0x7f {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, s[start:i]...)
				b = append(b, `\ufffd`...)
				i++
				start = i
				continue
			}
			i += size
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
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// quoteValue renders a value from a program (an error(…) payload) for an error message: JSON, cut to maxQuoted
// bytes. It never builds more than that, however large the value.
func quoteValue(v any) string {
	if s, ok := v.(string); ok {
		if len(s) > maxQuoted {
			return clipUTF8(s, maxQuoted) + " …(cut)"
		}
		return s
	}
	b, err := appendJSON(nil, v, maxQuoted)
	if err != nil {
		return clipUTF8(string(b), maxQuoted) + " …(cut)"
	}
	return string(b)
}

// clipMessage cuts an error message from gojq to a sane length (gojq quotes at most ~30 bytes of a value, but a
// message can still name a long key or string).
func clipMessage(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 2*maxQuoted {
		return clipUTF8(s, 2*maxQuoted) + " …(cut)"
	}
	return s
}

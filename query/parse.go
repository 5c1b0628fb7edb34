package query

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/strata-db/strata/revision"
)

// parseJSON decodes one JSON text into the values Forest.Materialize produces: nil, bool, int (for numbers
// written exactly as an int64 is, but 0), json.Number (0 and every other number, keeping its text), string, []any
// and map[string]any.
// Strings without escapes and all number texts share the memory of s, so s stays alive while the value does.
//
// It is the worker's decoder: the text comes from Forest.WriteJSON or from the engine's own encoder, but it is
// checked fully anyway (a worker must not crash on bad input).
func parseJSON(s string) (any, error) {
	return parseStream(s, len(s), nil)
}

// parseStream is parseJSON on a text that is still arriving: s is the whole buffer, of which the first avail bytes
// are filled; more(n) blocks until at least n bytes are (or the input ended) and returns how many are. The worker
// decodes its input this way while the engine is still sending it.
func parseStream(s string, avail int, more func(n int) int) (any, error) {
	p := parser{s: s, end: avail, more: more}
	p.ws()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.i != len(p.s) {
		return nil, p.errorf("unexpected text after the value")
	}
	return v, nil
}

// maxParseDepth bounds nesting in parseJSON.
const maxParseDepth = maxResultDepth

type parser struct {
	s    string
	i    int
	end  int             // bytes of s available so far
	more func(n int) int // waits for n bytes of s; nil when s is complete
}

// has reports whether n more bytes from p.i are available, waiting for them if the input is still arriving.
func (p *parser) has(n int) bool {
	if p.i+n <= p.end {
		return true
	}
	if p.more == nil || p.end == len(p.s) {
		return false
	}
	p.end = p.more(min(p.i+n, len(p.s)))
	return p.i+n <= p.end
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

func (p *parser) ws() {
	for p.has(1) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (any, error) {
	if !p.has(1) {
		return nil, p.errorf("unexpected end of input")
	}
	switch c := p.s[p.i]; c {
	case '{':
		if depth >= maxParseDepth {
			return nil, p.errorf("nested deeper than %d", maxParseDepth)
		}
		p.i++
		m := map[string]any{}
		p.ws()
		if p.has(1) && p.s[p.i] == '}' {
			p.i++
			return m, nil
		}
		for {
			p.ws()
			if !p.has(1) || p.s[p.i] != '"' {
				return nil, p.errorf("expected a member name")
			}
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			p.ws()
			if !p.has(1) || p.s[p.i] != ':' {
				return nil, p.errorf("expected ':'")
			}
			p.i++
			p.ws()
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			m[k] = v
			p.ws()
			if !p.has(1) {
				return nil, p.errorf("unexpected end of input")
			}
			if p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.s[p.i] == '}' {
				p.i++
				return m, nil
			}
			return nil, p.errorf("expected ',' or '}'")
		}
	case '[':
		if depth >= maxParseDepth {
			return nil, p.errorf("nested deeper than %d", maxParseDepth)
		}
		p.i++
		a := []any{}
		p.ws()
		if p.has(1) && p.s[p.i] == ']' {
			p.i++
			return a, nil
		}
		for {
			p.ws()
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
			p.ws()
			if !p.has(1) {
				return nil, p.errorf("unexpected end of input")
			}
			if p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.s[p.i] == ']' {
				p.i++
				return a, nil
			}
			return nil, p.errorf("expected ',' or ']'")
		}
	case '"':
		return p.str()
	case 't':
		return true, p.lit("true")
	case 'f':
		return false, p.lit("false")
	case 'n':
		return nil, p.lit("null")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			return p.number()
		}
		return nil, p.errorf("unexpected character %q", c)
	}
}

func (p *parser) lit(w string) error {
	if !p.has(len(w)) || p.s[p.i:p.i+len(w)] != w {
		return p.errorf("invalid literal")
	}
	p.i += len(w)
	return nil
}

func (p *parser) number() (any, error) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.has(1) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	intStart := p.i
	if n := digits(); n == 0 || n > 1 && p.s[intStart] == '0' {
		return nil, p.errorf("invalid number")
	}
	plain := true
	if p.has(1) && p.s[p.i] == '.' {
		p.i++
		plain = false
		if digits() == 0 {
			return nil, p.errorf("invalid number")
		}
	}
	if p.has(1) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		plain = false
		if p.has(1) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, p.errorf("invalid number")
		}
	}
	text := p.s[start:p.i]
	if text == "0" {
		return revision.MaterialZero, nil
	}
	if plain && len(text) <= 20 && text != "-0" {
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return int(n), nil
		}
	}
	return json.Number(text), nil
}

// str reads a string literal; p.s[p.i] is the opening quote.
func (p *parser) str() (string, error) {
	p.i++
	start := p.i
	for p.has(1) {
		c := p.s[p.i]
		switch {
		case c == '"':
			s := p.s[start:p.i]
			p.i++
			return s, nil
		case c == '\\':
			return p.strSlow(start)
		case c < 0x20:
			return "", p.errorf("control character in string")
		case c < utf8.RuneSelf:
			p.i++
		default:
			p.has(utf8.UTFMax)
			r, size := utf8.DecodeRuneInString(p.s[p.i:p.end])
			if r == utf8.RuneError && size == 1 {
				return "", p.errorf("invalid UTF-8 in string")
			}
			p.i += size
		}
	}
	return "", p.errorf("unterminated string")
}

// strSlow finishes a string with escapes, from start (just after the opening quote); p.i is at the first backslash.
func (p *parser) strSlow(start int) (string, error) {
	b := make([]byte, 0, p.i-start+16)
	b = append(b, p.s[start:p.i]...)
	for p.has(1) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return string(b), nil
		case c == '\\':
			if !p.has(2) {
				return "", p.errorf("unterminated string")
			}
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", p.errorf("invalid \\u escape")
				}
				if utf16.IsSurrogate(r) {
					r2 := utf8.RuneError
					if p.has(2) && p.s[p.i] == '\\' && p.s[p.i+1] == 'u' {
						save := p.i
						p.i += 2
						if x, ok := p.hex4(); ok {
							if d := utf16.DecodeRune(r, x); d != utf8.RuneError {
								r2 = d
							} else {
								p.i = save
							}
						} else {
							p.i = save
						}
					}
					r = r2
				}
				b = utf8.AppendRune(b, r)
			default:
				return "", p.errorf("invalid escape")
			}
		case c < 0x20:
			return "", p.errorf("control character in string")
		case c < utf8.RuneSelf:
			b = append(b, c)
			p.i++
		default:
			p.has(utf8.UTFMax)
			r, size := utf8.DecodeRuneInString(p.s[p.i:p.end])
			if r == utf8.RuneError && size == 1 {
				return "", p.errorf("invalid UTF-8 in string")
			}
			b = append(b, p.s[p.i:p.i+size]...)
			p.i += size
		}
	}
	return "", p.errorf("unterminated string")
}

func (p *parser) hex4() (rune, bool) {
	if !p.has(4) {
		return 0, false
	}
	var r rune
	for k := 0; k < 4; k++ {
		c := p.s[p.i+k]
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	p.i += 4
	return r, true
}

// intOf reports the integer a value of the kinds Forest.Materialize and parseJSON give is: an int, or zero, which
// they give as revision.MaterialZero.
func intOf(v any) (int, bool) {
	switch v := v.(type) {
	case int:
		return v, true
	case json.Number:
		return 0, v == revision.MaterialZero
	}
	return 0, false
}

// Package safetext makes text that an agent or stored data controls safe to show on a terminal: every character that
// can drive a terminal or change how text reads without being seen is made visible as an escape. It is the one
// function for all of the command line's output (docs/security.md, T-terminal).
//
// What is escaped (Unsafe): C0 controls (including tab and newline: a message must not forge a line of `strata log`),
// DEL, C1 controls (U+0080–U+009F: an 8-bit CSI is an escape sequence too), format characters (category Cf: the
// bidirectional embeddings, overrides and isolates, zero-width characters, the byte-order mark, soft hyphens, the
// Unicode tag block), the line and paragraph separators, the invisible fillers and joiners that are not Cf, and a
// variation selector next to another one (a run of them hides text behind one glyph). Bytes that are not UTF-8 are
// escaped one by one.
package safetext

import (
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Invisible reports runes that change how text reads without being seen: zero-width characters, bidirectional
// embeddings, overrides and isolates, the word joiner family, the byte-order mark, soft hyphens, the Hangul fillers
// and the Unicode tag block (used to smuggle instructions to models).
func Invisible(r rune) bool {
	switch {
	case r == 0x00AD, r == 0x034F, r == 0x061C, r == 0x115F, r == 0x1160, r == 0x17B4, r == 0x17B5, r == 0x180E,
		r >= 0x200B && r <= 0x200F,
		r >= 0x202A && r <= 0x202E,
		r >= 0x2060 && r <= 0x206F,
		r == 0x3164, r == 0xFEFF, r == 0xFFA0,
		r >= 0xFFF9 && r <= 0xFFFB,
		r >= 0xE0000 && r <= 0xE007F:
		return true
	}
	return false
}

// VariationSelector reports the variation selectors (VS1–VS16, VS17–VS256). One after a character picks its glyph
// (❤️ is U+2764 U+FE0F); a run of them renders as nothing and can spell any bytes ("emoji smuggling"), so a selector
// next to another one is hidden text, for every front end to show or escape.
func VariationSelector(r rune) bool {
	return r >= 0xFE00 && r <= 0xFE0F || r >= 0xE0100 && r <= 0xE01EF
}

// SelectorRun reports whether r, a rune after prev and before next, is a variation selector next to another one:
// hidden text, escaped as Unsafe runes are (a single selector picks its character's glyph and stays). Every front
// end (MCP's answers, the review page, the terminal) holds runs to this one rule.
func SelectorRun(prev, r, next rune) bool {
	return VariationSelector(r) && (VariationSelector(prev) || VariationSelector(next))
}

// Unsafe reports whether r must not reach a terminal as itself.
func Unsafe(r rune) bool {
	switch {
	case r < 0x20, r == 0x7F:
		return true
	case r < 0x80:
		return false
	case r <= 0x9F, r == 0x2028, r == 0x2029:
		return true
	}
	return Invisible(r) || unicode.Is(unicode.Cf, r)
}

// needs reports whether s holds anything Text would change.
func needs(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7F {
			return true
		}
	}
	return false
}

// Text returns s with every unsafe character written as a Go escape (\x1b, \n, \u202e, \u0085; a byte that is not
// UTF-8 as \xff) and everything else as it is. It is the form for prose: messages, notes, reasons, values.
func Text(s string) string {
	if !needs(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	appendText(&b, s, false)
	return b.String()
}

// Field returns s as it is when it is a plain word, and otherwise quoted with escapes ("a b", "\x1b[2J"): the form for
// a name in a column, where a space or an empty value would break the columns. The empty string is returned as is.
func Field(s string) string {
	plain := true
	for _, r := range s {
		if r == ' ' || r == '"' || r == utf8.RuneError || Unsafe(r) || VariationSelector(r) || unicode.IsSpace(r) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 10)
	b.WriteByte('"')
	appendText(&b, s, true)
	b.WriteByte('"')
	return b.String()
}

func appendText(b *strings.Builder, s string, quoted bool) {
	prev := rune(0)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		next, _ := utf8.DecodeRuneInString(s[i+size:])
		run := SelectorRun(prev, r, next)
		prev = r
		switch {
		case run:
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[i])&0xF, 16))
		case Unsafe(r) || quoted && unicode.IsSpace(r) && r != ' ':
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\n', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		case quoted && (r == '"' || r == '\\'):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
}

// Lines is Text for text of several lines (an error message): each line is made safe, and the newlines between
// them are kept.
func Lines(s string) string {
	if !needs(s) {
		return s
	}
	parts := strings.Split(s, "\n")
	for i, p := range parts {
		parts[i] = Text(p)
	}
	return strings.Join(parts, "\n")
}

// JSON returns JSON text with every unsafe character above ASCII (and DEL) written as a \u escape, which means the
// same character to any JSON reader: in valid JSON such characters can only be inside strings. C0 controls are
// escaped by every JSON encoder already; a byte that is not UTF-8 (which JSON text may not hold) is written as \ufffd,
// as encoding/json does. b is returned as it is when there is nothing to escape.
func JSON(b []byte) []byte {
	i := 0
	for ; i < len(b); i++ {
		if b[i] >= 0x7F {
			break
		}
	}
	if i == len(b) {
		return b
	}
	var out []byte
	last := 0
	prev := rune(0)
	for i < len(b) {
		if b[i] < 0x7F {
			prev = rune(b[i])
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		next, _ := utf8.DecodeRune(b[i+size:])
		run := SelectorRun(prev, r, next)
		prev = r
		if r == utf8.RuneError && size == 1 {
			r = utf8.RuneError // a byte that is not UTF-8 (0x9b alone is a CSI to an 8-bit terminal) becomes U+FFFD
		} else if !Unsafe(r) && !run {
			i += size
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(b)+16)
		}
		out = append(out, b[last:i]...)
		out = appendUnicodeEscape(out, r)
		i += size
		last = i
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

const hexDigits = "0123456789abcdef"

func appendUnicodeEscape(out []byte, r rune) []byte {
	if r > 0xFFFF { // a surrogate pair, as JSON spells characters beyond the basic plane
		r -= 0x10000
		out = appendU16(out, 0xD800+(r>>10))
		return appendU16(out, 0xDC00+(r&0x3FF))
	}
	return appendU16(out, r)
}

func appendU16(out []byte, r rune) []byte {
	return append(out, '\\', 'u', hexDigits[r>>12&0xF], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
}

// Writer makes a stream safe for a terminal as it passes: JSON text with JSON's escapes (\u202e), other text with
// Lines' (\x1b; newlines kept). A character split between two writes is held back until its end arrives; Close writes what is held.
type Writer struct {
	w    io.Writer
	json bool
	held []byte
	buf  []byte
}

// NewWriter returns a Writer onto w; json says whether the stream is JSON text.
func NewWriter(w io.Writer, json bool) *Writer { return &Writer{w: w, json: json} }

// Write makes p safe and writes it, reporting p as written whole when the underlying write succeeds.
func (sw *Writer) Write(p []byte) (int, error) {
	data := p
	if len(sw.held) > 0 {
		data = append(sw.held, p...)
		sw.held = nil
	}
	// Hold back a trailing sequence that may be the start of a character.
	cut := len(data)
	for k := 1; k <= utf8.UTFMax-1 && k <= len(data); k++ {
		c := data[len(data)-k]
		if c < 0x80 {
			break
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(data[len(data)-k:]) {
				cut = len(data) - k
			}
			break
		}
	}
	if cut < len(data) {
		sw.held = append([]byte(nil), data[cut:]...)
		data = data[:cut]
	}
	if err := sw.emit(data); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (sw *Writer) emit(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	var out []byte
	if sw.json {
		out = JSON(data)
	} else {
		sw.buf = append(sw.buf[:0], Lines(string(data))...)
		out = sw.buf
	}
	_, err := sw.w.Write(out)
	return err
}

// Close writes what is held back (an incomplete character, escaped as the bytes it is). It does not close w.
func (sw *Writer) Close() error {
	held := sw.held
	sw.held = nil
	return sw.emit(held)
}

// Package jsonscan is a fast, allocation-free, streaming JSON tokenizer.
//
// It is meant for importing large JSON documents into the storage engine
// without materialising them as Go maps and slices: the caller pulls one
// token at a time with [Scanner.Next] and builds whatever representation it
// needs.
//
// The scanner accepts exactly the RFC 8259 grammar, with two deliberate
// tightenings over encoding/json: strings must be valid UTF-8 and \u escapes
// must not encode lone (unpaired) surrogates. Everything else that
// encoding/json.Valid accepts is accepted, and everything it rejects is
// rejected. Duplicate object keys are reported as ordinary Key tokens; the
// caller decides what to do about them.
//
// Tokens of kind Key, String and Number carry their bytes. For strings
// without escape sequences, and for all numbers, the bytes alias the
// scanner's input buffer, so scanning does not allocate in steady state.
package jsonscan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// Kind identifies the type of a token returned by [Scanner.Next].
type Kind uint8

// Token kinds.
const (
	Invalid     Kind = iota // not a token; returned together with an error
	BeginObject             // {
	EndObject               // }
	BeginArray              // [
	EndArray                // ]
	Key                     // an object member name (decoded string bytes)
	String                  // a string value (decoded bytes, escapes resolved, valid UTF-8)
	Number                  // a number: the exact original text, validated against the JSON grammar
	True                    // the literal true
	False                   // the literal false
	Null                    // the literal null
)

var kindNames = [...]string{
	Invalid:     "Invalid",
	BeginObject: "BeginObject",
	EndObject:   "EndObject",
	BeginArray:  "BeginArray",
	EndArray:    "EndArray",
	Key:         "Key",
	String:      "String",
	Number:      "Number",
	True:        "True",
	False:       "False",
	Null:        "Null",
}

// String returns the name of the kind, e.g. "BeginObject".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// SyntaxError reports malformed input.
//
// Offset is the byte offset of the fault in the input (0-based). Line and
// Column are 1-based; lines are separated by '\n' and Column counts bytes
// (not characters) from the start of the line. Msg says what is wrong in
// plain words.
//
// [Scanner.Next] returns syntax errors as *SyntaxError.
type SyntaxError struct {
	Offset       int64
	Line, Column int
	Msg          string
}

// Error returns a message such as
// "JSON syntax error at line 3, column 7 (byte 41): expected ',' or '}' after object member".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("JSON syntax error at line %d, column %d (byte %d): %s", e.Line, e.Column, e.Offset, e.Msg)
}

const (
	// defaultMaxDepth is the nesting limit used when New or NewBytes is
	// given maxDepth <= 0.
	defaultMaxDepth = 512

	// defaultBufSize is the initial size of the read buffer of a streaming
	// scanner. The buffer only grows when a single token does not fit.
	defaultBufSize = 64 << 10

	// maxEmptyReads bounds how often a reader may return (0, nil) in a row
	// before the scanner gives up with io.ErrNoProgress.
	maxEmptyReads = 100
)

// errBadReadCount is returned when the underlying reader reports an
// impossible byte count.
var errBadReadCount = errors.New("jsonscan: reader returned an invalid byte count")

// state is what the grammar expects next, not counting whitespace.
type state uint8

const (
	stTop          state = iota // the top-level value (nothing read yet)
	stValue                     // a value (after ':' or after ',' in an array)
	stFirstValue                // a value or ']' (just after '[')
	stFirstKey                  // a key or '}' (just after '{')
	stKey                       // a key (after ',' in an object)
	stColon                     // ':' (after a key)
	stAfterMember               // ',' or '}' (after a member value)
	stAfterElement              // ',' or ']' (after an array element)
	stEnd                       // end of input (the top-level value is complete)
	stErr                       // Next has returned an error (s.err), or io.EOF
)

// Scanner reads JSON tokens from an in-memory document or an io.Reader.
// Create one with [New] or [NewBytes]. A Scanner is not safe for concurrent
// use.
type Scanner struct {
	// Input window: buf[pos:end] is buffered input not consumed yet and
	// buf[0] is input byte number base. While a token is being read, pos
	// stays at its first byte so that the whole token remains in buf.
	buf  []byte
	pos  int
	end  int
	base int64
	r    io.Reader // nil for NewBytes
	rerr error     // first error from r (io.EOF at the end); set up front for NewBytes

	// Line bookkeeping for input already discarded from buf (only streaming
	// scanners discard). Positions inside buf are computed lazily, on error.
	nlines    int   // number of '\n' bytes before buf[0]
	lineStart int64 // offset just past the last '\n' before buf[0]

	state    state
	stack    []bool // open containers, innermost last: true = object, false = array
	maxDepth int
	err      error  // with state stErr: the error (or io.EOF) to return from now on
	sbuf     []byte // decoded contents of the last string that had escapes
	lines    bool   // JSON Lines (NewLines): a sequence of top-level values, one per line
}

// New returns a scanner over r. maxDepth caps nesting (objects+arrays);
// <= 0 means 512.
//
// The scanner reads r through an internal 64 KiB buffer that grows only when
// a single token (string or number) does not fit in it. Errors from r other
// than io.EOF are returned unchanged by Next.
func New(r io.Reader, maxDepth int) *Scanner {
	return newReader(r, maxDepth, defaultBufSize)
}

// newReader is New with a chosen initial buffer size (tests use tiny
// buffers to exercise refilling, compaction and growth).
func newReader(r io.Reader, maxDepth, bufSize int) *Scanner {
	if bufSize < 1 {
		bufSize = 1
	}
	s := &Scanner{r: r, buf: make([]byte, bufSize)}
	s.init(maxDepth)
	return s
}

// NewLines returns a scanner over JSON Lines read from r: a sequence of
// top-level values, one per line. Each value is scanned as New would scan a
// document (its tokens, then Depth back at 0), and the next begins on a later
// line. Blank lines (only whitespace) are skipped, and empty input is an
// empty sequence: Next returns io.EOF after the last value. A second value on
// the same line, or a line break inside a value (JSON Lines holds one value
// per line, so a pretty-printed document is refused rather than read as
// something else), is a SyntaxError. maxDepth caps the nesting of each value.
func NewLines(r io.Reader, maxDepth int) *Scanner {
	s := New(r, maxDepth)
	s.lines = true
	return s
}

// NewBytes scans an in-memory document without copying it. b must not be
// modified while the scanner is in use; the scanner never modifies it.
// maxDepth caps nesting (objects+arrays); <= 0 means 512.
func NewBytes(b []byte, maxDepth int) *Scanner {
	s := &Scanner{buf: b, end: len(b), rerr: io.EOF}
	s.init(maxDepth)
	return s
}

func (s *Scanner) init(maxDepth int) {
	if maxDepth <= 0 {
		maxDepth = defaultMaxDepth
	}
	s.maxDepth = maxDepth
	s.stack = make([]bool, 0, min(maxDepth, 32))
}

// Depth is the current nesting depth (0 at top level). It is 1 right after
// the BeginObject or BeginArray of the top-level container has been
// returned, and 0 again after its EndObject or EndArray.
func (s *Scanner) Depth() int { return len(s.stack) }

// Offset is the number of input bytes consumed so far: the offset just past
// the last token returned (or past the trailing whitespace after io.EOF).
func (s *Scanner) Offset() int64 { return s.base + int64(s.pos) }

// Next returns the next token. For Key, String and Number the returned bytes
// hold the decoded string / exact number text; they are valid only until the
// next call to Next (they may alias the scanner's buffer, and for NewBytes
// the caller's document). At the end of the single top-level value it
// returns io.EOF (only after checking that nothing but whitespace follows;
// trailing data is a SyntaxError "unexpected data after the top-level
// value"). Empty input is a SyntaxError "empty input: expected a JSON value".
//
// Malformed input yields a *SyntaxError; a failing reader yields its error.
// Once Next has returned an error (including io.EOF) it keeps returning the
// same error.
func (s *Scanner) Next() (Kind, []byte, error) {
	// This is the hot path: the common cases (no whitespace before the
	// token, short strings without escapes or non-ASCII bytes that end
	// inside the buffer) are handled inline; everything else is delegated.
	for {
		if s.state >= stEnd {
			return s.finish()
		}
		i := s.pos
		if i >= s.end || s.buf[i] <= ' ' {
			if !s.skipSpace() {
				return s.endOfInput()
			}
			i = s.pos
		}
		c := s.buf[i]

		switch s.state {
		case stAfterMember:
			switch c {
			case ',':
				s.pos = i + 1
				s.state = stKey
				continue
			case '}':
				return s.pop(EndObject)
			}
			return s.fail(i, "expected ',' or '}' after object member")

		case stAfterElement:
			switch c {
			case ',':
				s.pos = i + 1
				s.state = stValue
				continue
			case ']':
				return s.pop(EndArray)
			}
			return s.fail(i, "expected ',' or ']' after array element")

		case stColon:
			if c == ':' {
				s.pos = i + 1
				s.state = stValue
				continue
			}
			return s.fail(i, "expected ':' after object key")

		case stKey, stFirstKey:
			if c == '"' {
				s.state = stColon
				buf := s.buf[:s.end]
				j := i + 1
				for j < len(buf) && strASCII[buf[j]] {
					j++
				}
				if j < len(buf) && buf[j] == '"' {
					s.pos = j + 1
					return Key, buf[i+1 : j], nil
				}
				b, err := s.readString()
				if err != nil {
					return Invalid, nil, err
				}
				return Key, b, nil
			}
			if s.state == stFirstKey {
				if c == '}' {
					return s.pop(EndObject)
				}
				return s.fail(i, "expected a string key or '}' but found "+describe(c))
			}
			return s.fail(i, "expected a string key after ',' in object but found "+describe(c))

		case stFirstValue:
			if c == ']' {
				return s.pop(EndArray)
			}

		case stTop:
			if c == 0xEF && s.Offset() == 0 {
				s.ensure(s.pos, 3)
				if s.end-s.pos >= 3 && s.buf[s.pos+1] == 0xBB && s.buf[s.pos+2] == 0xBF {
					return s.fail(s.pos, "input starts with a byte-order mark (U+FEFF), which JSON does not allow")
				}
			}
		}

		// A value is expected (stValue, stFirstValue or stTop).
		switch c {
		case '"':
			buf := s.buf[:s.end]
			j := i + 1
			for j < len(buf) && strASCII[buf[j]] {
				j++
			}
			if j < len(buf) && buf[j] == '"' {
				s.pos = j + 1
				s.afterValue()
				return String, buf[i+1 : j], nil
			}
			b, err := s.readString()
			if err != nil {
				return Invalid, nil, err
			}
			s.afterValue()
			return String, b, nil
		case '{':
			return s.push(true)
		case '[':
			return s.push(false)
		case 't':
			// Comparing with a constant compiles to a single load and compare.
			if s.end-i >= 4 && string(s.buf[i:i+4]) == "true" {
				s.pos = i + 4
				s.afterValue()
				return True, nil, nil
			}
			return s.literal("true", True)
		case 'f':
			if s.end-i >= 5 && string(s.buf[i:i+5]) == "false" {
				s.pos = i + 5
				s.afterValue()
				return False, nil, nil
			}
			return s.literal("false", False)
		case 'n':
			if s.end-i >= 4 && string(s.buf[i:i+4]) == "null" {
				s.pos = i + 4
				s.afterValue()
				return Null, nil, nil
			}
			return s.literal("null", Null)
		}
		if c == '-' || c-'0' <= 9 {
			return s.number()
		}
		if s.state == stFirstValue {
			return s.fail(i, "expected a JSON value or ']' but found "+describe(c))
		}
		return s.fail(i, "expected a JSON value but found "+describe(c))
	}
}

// Escaped reports whether b, the bytes of the String or Key that Next just
// returned, was decoded from a string with escape sequences. If not, b is the
// string's text as written in the input, which in valid JSON holds no '"',
// no '\\' and no control character.
func (s *Scanner) Escaped(b []byte) bool {
	return len(b) > 0 && len(s.sbuf) > 0 && &b[0] == &s.sbuf[0]
}

// finish handles Next after the top-level value is complete or an error
// has been returned.
func (s *Scanner) finish() (Kind, []byte, error) {
	if s.state == stErr {
		return Invalid, nil, s.err
	}
	if s.lines {
		return s.nextLine()
	}
	if s.skipSpace() {
		return s.fail(s.pos, "unexpected data after the top-level value")
	}
	return s.endOfInput()
}

// nextLine, for JSON Lines after a value, moves to the next line (only
// spaces, tabs and a carriage return may end this one) and reads on.
func (s *Scanner) nextLine() (Kind, []byte, error) {
	for {
		buf, i := s.buf[:s.end], s.pos
		for ; i < len(buf); i++ {
			switch buf[i] {
			case ' ', '\t', '\r':
				continue
			case '\n':
				s.pos = i + 1
				s.state = stTop
				return s.Next()
			}
			return s.fail(i, "a second value on the same line: JSON Lines holds one value per line")
		}
		s.pos = i
		if _, ok := s.fill(); !ok {
			return s.endOfInput()
		}
	}
}

// skipSpace advances past whitespace. It reports whether a byte is
// available at s.pos afterwards.
func (s *Scanner) skipSpace() bool {
	// In JSON Lines a line break inside a value is not whitespace: it stops here, and the grammar refuses it.
	nl := s.lines && len(s.stack) > 0
	for {
		buf, i := s.buf[:s.end], s.pos
		for ; i < len(buf); i++ {
			if c := buf[i]; c > ' ' || (c != ' ' && c != '\n' && c != '\r' && c != '\t') || (nl && c == '\n') {
				s.pos = i
				return true
			}
		}
		s.pos = i
		if _, ok := s.fill(); !ok {
			return false
		}
	}
}

// endOfInput handles running out of input between tokens.
func (s *Scanner) endOfInput() (Kind, []byte, error) {
	if err := s.readErr(); err != nil {
		return Invalid, nil, err
	}
	switch s.state {
	case stEnd:
		s.setErr(io.EOF)
		return Invalid, nil, io.EOF
	case stTop:
		if s.lines {
			// JSON Lines: the end of the sequence (possibly empty).
			s.setErr(io.EOF)
			return Invalid, nil, io.EOF
		}
		return s.fail(s.end, "empty input: expected a JSON value")
	}
	if s.stack[len(s.stack)-1] {
		return s.fail(s.end, "unexpected end of input inside object")
	}
	return s.fail(s.end, "unexpected end of input inside array")
}

// afterValue sets the state after a complete value.
func (s *Scanner) afterValue() {
	switch n := len(s.stack); {
	case n == 0:
		s.state = stEnd
	case s.stack[n-1]:
		s.state = stAfterMember
	default:
		s.state = stAfterElement
	}
}

// push opens a container whose bracket is at s.pos.
func (s *Scanner) push(object bool) (Kind, []byte, error) {
	if len(s.stack) >= s.maxDepth {
		return s.fail(s.pos, "nesting deeper than "+strconv.Itoa(s.maxDepth)+" levels")
	}
	s.stack = append(s.stack, object)
	s.pos++
	if object {
		s.state = stFirstKey
		return BeginObject, nil, nil
	}
	s.state = stFirstValue
	return BeginArray, nil, nil
}

// pop closes the innermost container; its closing bracket is at s.pos.
func (s *Scanner) pop(k Kind) (Kind, []byte, error) {
	s.stack = s.stack[:len(s.stack)-1]
	s.pos++
	s.afterValue()
	return k, nil, nil
}

// literal reads true, false or null starting at s.pos.
func (s *Scanner) literal(lit string, k Kind) (Kind, []byte, error) {
	if s.end-s.pos < len(lit) {
		s.ensure(s.pos, len(lit))
	}
	if s.end-s.pos >= len(lit) && string(s.buf[s.pos:s.pos+len(lit)]) == lit {
		s.pos += len(lit)
		s.afterValue()
		return k, nil, nil
	}
	for j := 1; j < len(lit); j++ {
		p := s.pos + j
		if p >= s.end {
			return Invalid, nil, s.eofIn("literal " + lit)
		}
		if s.buf[p] != lit[j] {
			return s.fail(p, "invalid literal: expected "+lit)
		}
	}
	panic("unreachable")
}

// number reads a number starting at s.pos. It first finds the extent of the
// run of bytes that can occur in numbers, then checks it against the
// grammar; whatever follows the run is left to the caller's grammar state.
func (s *Scanner) number() (Kind, []byte, error) {
	// Fast path: a non-negative integer without leading zeros that ends
	// inside the buffer.
	buf, i := s.buf[:s.end], s.pos
	j := i
	for j < len(buf) && isDigit(buf[j]) {
		j++
	}
	if j < len(buf) && !numChar[buf[j]] && j > i && (buf[i] != '0' || j == i+1) {
		s.pos = j
		s.afterValue()
		return Number, buf[i:j], nil
	}

	for {
		buf := s.buf[:s.end]
		for i < len(buf) && numChar[buf[i]] {
			i++
		}
		if i < len(buf) {
			break
		}
		shift, ok := s.fill()
		i -= shift
		if !ok {
			if err := s.readErr(); err != nil {
				return Invalid, nil, err
			}
			break
		}
	}
	num := s.buf[s.pos:i]
	if j, msg := checkNumber(num); j >= 0 {
		return s.fail(s.pos+j, msg)
	}
	s.pos = i
	s.afterValue()
	return Number, num, nil
}

// checkNumber validates b against
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? and returns the index of
// the first offending byte with a message, or -1.
func checkNumber(b []byte) (int, string) {
	i, n := 0, len(b)
	if i < n && b[i] == '-' {
		i++
	}
	switch {
	case i < n && b[i] == '0':
		i++
		if i < n && isDigit(b[i]) {
			return i, "invalid number: leading zeros are not allowed"
		}
	case i < n && isDigit(b[i]):
		for i++; i < n && isDigit(b[i]); i++ {
		}
	default:
		return i, "invalid number: expected a digit after '-'"
	}
	if i < n && b[i] == '.' {
		i++
		if i >= n || !isDigit(b[i]) {
			return i, "invalid number: expected a digit after the decimal point"
		}
		for i++; i < n && isDigit(b[i]); i++ {
		}
	}
	if i < n && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < n && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= n || !isDigit(b[i]) {
			return i, "invalid number: expected a digit in the exponent"
		}
		for i++; i < n && isDigit(b[i]); i++ {
		}
	}
	if i < n {
		return i, "invalid number: unexpected " + describe(b[i])
	}
	return -1, ""
}

func isDigit(c byte) bool { return c-'0' <= 9 }

// readString reads a string whose opening quote is at s.pos and returns its
// decoded contents. Strings without escapes are returned as a slice of the
// buffer; the first backslash hands over to readEscaped.
func (s *Scanner) readString() ([]byte, error) {
	start := s.pos + 1 // first content byte
	i := start
	var acc byte // OR of all bytes seen: >= 0x80 means UTF-8 must be checked
	for {
		buf := s.buf[:s.end]
		for i < len(buf) && !strStop[buf[i]] {
			acc |= buf[i]
			i++
		}
		if i < len(buf) {
			switch c := buf[i]; c {
			case '"':
				raw := buf[start:i]
				if acc >= utf8.RuneSelf && !utf8.Valid(raw) {
					return nil, s.badUTF8(start, i)
				}
				s.pos = i + 1
				return raw, nil
			case '\\':
				return s.readEscaped(start, i, acc)
			default:
				return nil, s.controlChar(i, c)
			}
		}
		shift, ok := s.fill()
		start -= shift
		i -= shift
		if !ok {
			return nil, s.eofIn("string")
		}
	}
}

// readEscaped continues readString at the backslash s.buf[i]. The plain run
// s.buf[runStart:i] has not been copied yet; acc is the OR of its bytes.
// The decoded string is assembled in s.sbuf.
func (s *Scanner) readEscaped(runStart, i int, acc byte) ([]byte, error) {
	s.sbuf = s.sbuf[:0]
	for {
		// Flush the plain run before the backslash at i.
		run := s.buf[runStart:i]
		if acc >= utf8.RuneSelf && !utf8.Valid(run) {
			return nil, s.badUTF8(runStart, i)
		}
		s.sbuf = append(s.sbuf, run...)

		// Decode the escape sequence at i.
		shift, _ := s.ensure(i, 2)
		i -= shift
		if s.end-i < 2 {
			return nil, s.eofIn("string")
		}
		switch e := s.buf[i+1]; e {
		case '"', '\\', '/':
			s.sbuf = append(s.sbuf, e)
			i += 2
		case 'b':
			s.sbuf = append(s.sbuf, '\b')
			i += 2
		case 'f':
			s.sbuf = append(s.sbuf, '\f')
			i += 2
		case 'n':
			s.sbuf = append(s.sbuf, '\n')
			i += 2
		case 'r':
			s.sbuf = append(s.sbuf, '\r')
			i += 2
		case 't':
			s.sbuf = append(s.sbuf, '\t')
			i += 2
		case 'u':
			r, n, err := s.unicodeEscape(&i)
			if err != nil {
				return nil, err
			}
			s.sbuf = utf8.AppendRune(s.sbuf, r)
			i += n
		default:
			if e > ' ' && e < 0x7F {
				return nil, s.failErr(i, `invalid escape sequence \`+string(rune(e))+" in string")
			}
			return nil, s.failErr(i, "invalid escape sequence in string: backslash followed by "+describe(e))
		}

		// Scan the next plain run.
		runStart, acc = i, 0
		for {
			buf := s.buf[:s.end]
			for i < len(buf) && !strStop[buf[i]] {
				acc |= buf[i]
				i++
			}
			if i < len(buf) {
				break
			}
			shift, ok := s.fill()
			runStart -= shift
			i -= shift
			if !ok {
				return nil, s.eofIn("string")
			}
		}
		switch c := s.buf[i]; c {
		case '"':
			run := s.buf[runStart:i]
			if acc >= utf8.RuneSelf && !utf8.Valid(run) {
				return nil, s.badUTF8(runStart, i)
			}
			s.sbuf = append(s.sbuf, run...)
			s.pos = i + 1
			return s.sbuf, nil
		case '\\':
			// next escape
		default:
			return nil, s.controlChar(i, c)
		}
	}
}

// unicodeEscape decodes the \uXXXX escape at s.buf[*i], together with the
// low-surrogate escape that must follow a high surrogate. *i is adjusted if
// the buffer moves. It returns the code point and the length of the escape
// text (6 or 12 bytes).
func (s *Scanner) unicodeEscape(i *int) (rune, int, error) {
	r, err := s.hex4(i)
	if err != nil {
		return 0, 0, err
	}
	switch {
	case r < 0xD800 || r > 0xDFFF:
		return r, 6, nil
	case r >= 0xDC00:
		return 0, 0, s.failErr(*i, "lone surrogate escape "+string(s.buf[*i:*i+6])+
			" in string: a low surrogate must follow a high surrogate escape (\\uD800-\\uDBFF)")
	}
	// High surrogate: a low surrogate escape must follow immediately.
	shift, _ := s.ensure(*i, 12)
	*i -= shift
	for j, want := range [2]byte{'\\', 'u'} {
		p := *i + 6 + j
		if p >= s.end {
			return 0, 0, s.eofIn("string")
		}
		if s.buf[p] != want {
			return 0, 0, s.loneHigh(*i)
		}
	}
	lo := *i + 6
	r2, err := s.hex4(&lo)
	*i = lo - 6
	if err != nil {
		return 0, 0, err
	}
	if r2 < 0xDC00 || r2 > 0xDFFF {
		return 0, 0, s.loneHigh(*i)
	}
	return 0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00), 12, nil
}

func (s *Scanner) loneHigh(i int) error {
	return s.failErr(i, "lone surrogate escape "+string(s.buf[i:i+6])+
		" in string: a high surrogate must be followed by a low surrogate escape (\\uDC00-\\uDFFF)")
}

// hex4 decodes the four hex digits of the \u escape whose backslash is at
// s.buf[*i], adjusting *i if the buffer moves.
func (s *Scanner) hex4(i *int) (rune, error) {
	shift, _ := s.ensure(*i, 6)
	*i -= shift
	var r rune
	for p := *i + 2; p < *i+6; p++ {
		if p >= s.end {
			return 0, s.eofIn("string")
		}
		h := unhex[s.buf[p]]
		if h > 0xF {
			return 0, s.failErr(p, `invalid \u escape in string: expected four hex digits but found `+describe(s.buf[p]))
		}
		r = r<<4 | rune(h)
	}
	return r, nil
}

// controlChar reports an unescaped control character at s.buf[i].
func (s *Scanner) controlChar(i int, c byte) error {
	return s.failErr(i, fmt.Sprintf("unescaped control character U+%04X in string (must be written as an escape)", c))
}

// badUTF8 reports the first invalid UTF-8 sequence in s.buf[from:to].
func (s *Scanner) badUTF8(from, to int) error {
	for p := from; p < to; {
		r, size := utf8.DecodeRune(s.buf[p:to])
		if r == utf8.RuneError && size <= 1 {
			return s.failErr(p, "invalid UTF-8 in string")
		}
		p += size
	}
	return s.failErr(from, "invalid UTF-8 in string") // not reached
}

// fill reads more input into the buffer, first making room if the buffer is
// full: consumed bytes before s.pos are discarded (moving the data so that
// s.pos becomes 0) and, if the unconsumed part still takes up more than half
// of the buffer, the buffer doubles. It returns by how much buffer indices
// moved (callers subtract it from their own indices) and whether any new
// bytes arrived.
func (s *Scanner) fill() (shift int, ok bool) {
	if s.rerr != nil {
		return 0, false
	}
	if s.end == len(s.buf) {
		if s.pos > 0 {
			shift = s.pos
			s.discard(shift)
		}
		if s.end > len(s.buf)/2 {
			nb := make([]byte, 2*len(s.buf))
			copy(nb, s.buf[:s.end])
			s.buf = nb
		}
	}
	for range maxEmptyReads {
		n, err := s.r.Read(s.buf[s.end:])
		if n < 0 || n > len(s.buf)-s.end {
			n, err = 0, errBadReadCount
		}
		s.end += n
		if err != nil {
			s.rerr = err
			return shift, n > 0
		}
		if n > 0 {
			return shift, true
		}
	}
	s.rerr = io.ErrNoProgress
	return shift, false
}

// discard drops the first n buffered bytes, keeping line bookkeeping.
func (s *Scanner) discard(n int) {
	gone := s.buf[:n]
	// Count first: it is vectorised, and most documents have few newlines, or none.
	if c := bytes.Count(gone, newline); c > 0 {
		s.nlines += c
		s.lineStart = s.base + int64(bytes.LastIndexByte(gone, '\n')) + 1
	}
	s.end = copy(s.buf, s.buf[n:s.end])
	s.pos -= n
	s.base += int64(n)
}

var newline = []byte{'\n'}

// ensure fills until at least n bytes are buffered from index i or the
// input ends. Like fill, it returns how far buffer indices moved.
func (s *Scanner) ensure(i, n int) (shift int, ok bool) {
	for s.end-i < n {
		sh, more := s.fill()
		shift += sh
		i -= sh
		if !more {
			return shift, false
		}
	}
	return shift, true
}

// readErr returns the reader's error, if it failed with anything but io.EOF,
// and makes it sticky.
func (s *Scanner) readErr() error {
	if s.rerr == nil || s.rerr == io.EOF {
		return nil
	}
	s.setErr(s.rerr)
	return s.err
}

// setErr makes err the result of all further calls to Next.
func (s *Scanner) setErr(err error) {
	s.err = err
	s.state = stErr
}

// eofIn reports that the input ended inside a token (or returns the reader's
// error if that is why no more input is available).
func (s *Scanner) eofIn(what string) error {
	if err := s.readErr(); err != nil {
		return err
	}
	return s.failErr(s.end, "unexpected end of input inside "+what)
}

// fail records a syntax error at buffer index i and returns it as Next's
// results.
func (s *Scanner) fail(i int, msg string) (Kind, []byte, error) {
	return Invalid, nil, s.failErr(i, msg)
}

// failErr records and returns a syntax error at buffer index i, computing
// its line and column.
func (s *Scanner) failErr(i int, msg string) error {
	if s.lines && len(s.stack) > 0 && i < s.end && s.buf[i] == '\n' {
		msg = "line break inside a value: JSON Lines holds each value on one line (" + msg + ")"
	}
	off, line, col := s.position(i)
	e := &SyntaxError{Offset: off, Line: line, Column: col, Msg: msg}
	s.setErr(e)
	return e
}

// Position is where the scanner stands, as Offset, with its 1-based line and
// column (as in SyntaxError): just past the last token returned. It costs a
// count of the line breaks in the buffer, so it is meant for error reports.
func (s *Scanner) Position() (offset int64, line, column int) { return s.position(s.pos) }

// position is the offset, line and column of buffer index i.
func (s *Scanner) position(i int) (offset int64, line, column int) {
	line, lineStart := s.nlines+1, s.lineStart
	seg := s.buf[:i]
	if k := bytes.LastIndexByte(seg, '\n'); k >= 0 {
		line += bytes.Count(seg, newline)
		lineStart = s.base + int64(k) + 1
	}
	off := s.base + int64(i)
	return off, line, int(off-lineStart) + 1
}

// describe names a byte for error messages: 'x' for printable ASCII,
// otherwise its hex value.
func describe(c byte) string {
	if c >= 0x20 && c < 0x7F {
		if c == '\'' {
			return `"'"`
		}
		return "'" + string(rune(c)) + "'"
	}
	return fmt.Sprintf("byte 0x%02X", c)
}

// strStop marks the bytes that end a run of plain string bytes: the closing
// quote, the backslash and the control characters. Bytes >= 0x80 are plain;
// runs containing them are checked with utf8.Valid.
var strStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'] = true
	t['\\'] = true
	return t
}()

// strASCII marks the bytes that can be taken as they are in the inline
// fast path of Next: printable ASCII except '"' and '\\'.
var strASCII = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// numChar marks the bytes that can occur in a number.
var numChar = func() (t [256]bool) {
	for _, c := range []byte("0123456789+-.eE") {
		t[c] = true
	}
	return t
}()

// unhex maps hex digits to their value and everything else to 0xFF.
var unhex = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xFF
	}
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c - '0'
	}
	for c := byte('a'); c <= 'f'; c++ {
		t[c] = c - 'a' + 10
		t[c-'a'+'A'] = c - 'a' + 10
	}
	return t
}()

package jsonscan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// render scans everything and renders the tokens compactly:
// { } [ ] k:"key" s:"string" n:12 true false null. It also returns the error
// that ended the scan (nil for a clean io.EOF).
func render(s *Scanner) (string, error) {
	var parts []string
	for {
		k, b, err := s.Next()
		if err == io.EOF {
			return strings.Join(parts, " "), nil
		}
		if err != nil {
			if k != Invalid || b != nil {
				return "", fmt.Errorf("Next returned %v, %q together with error %v", k, b, err)
			}
			return strings.Join(parts, " "), err
		}
		switch k {
		case BeginObject:
			parts = append(parts, "{")
		case EndObject:
			parts = append(parts, "}")
		case BeginArray:
			parts = append(parts, "[")
		case EndArray:
			parts = append(parts, "]")
		case Key:
			parts = append(parts, "k:"+strconv.Quote(string(b)))
		case String:
			parts = append(parts, "s:"+strconv.Quote(string(b)))
		case Number:
			parts = append(parts, "n:"+string(b))
		case True, False, Null:
			parts = append(parts, strings.ToLower(k.String()))
		default:
			return "", fmt.Errorf("Next returned kind %v without error", k)
		}
		if len(parts) > 1<<20 {
			return "", errors.New("runaway scanner")
		}
	}
}

// variant is one way of feeding a document to a scanner.
type variant struct {
	name string
	new  func(doc []byte, maxDepth int) *Scanner
}

// variants covers in-memory scanning and streaming with readers that return
// data in small pieces and with tiny initial buffers, so that every token
// boundary, buffer compaction and buffer growth path is hit.
var variants = []variant{
	{"NewBytes", func(d []byte, m int) *Scanner { return NewBytes(d, m) }},
	{"New", func(d []byte, m int) *Scanner { return New(bytes.NewReader(d), m) }},
	{"OneByteReader", func(d []byte, m int) *Scanner { return New(iotest.OneByteReader(bytes.NewReader(d)), m) }},
	{"DataErrReader", func(d []byte, m int) *Scanner { return New(iotest.DataErrReader(bytes.NewReader(d)), m) }},
	{"buf1", func(d []byte, m int) *Scanner { return newReader(bytes.NewReader(d), m, 1) }},
	{"buf3-HalfReader", func(d []byte, m int) *Scanner {
		return newReader(iotest.HalfReader(bytes.NewReader(d)), m, 3)
	}},
	{"buf7-OneByteReader", func(d []byte, m int) *Scanner {
		return newReader(iotest.OneByteReader(bytes.NewReader(d)), m, 7)
	}},
}

// scanAllVariants scans doc with every variant, checks that they agree on
// tokens and error, and returns the result of NewBytes.
func scanAllVariants(t testing.TB, doc []byte, maxDepth int) (string, error) {
	t.Helper()
	want, wantErr := render(NewBytes(doc, maxDepth))
	for _, v := range variants[1:] {
		got, gotErr := render(v.new(doc, maxDepth))
		if got != want || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("%s disagrees with NewBytes on %q:\n got %s / %v\nwant %s / %v", v.name, doc, got, gotErr, want, wantErr)
		}
	}
	return want, wantErr
}

func TestValid(t *testing.T) {
	deep := strings.Repeat("[", 512) + strings.Repeat("]", 512)
	tests := []struct {
		in, want string
	}{
		{`null`, `null`},
		{` true `, `true`},
		{"\t\r\n false\n", `false`},
		{`0`, `n:0`},
		{`-0`, `n:-0`},
		{`1.0`, `n:1.0`},
		{`1e3`, `n:1e3`},
		{`1E+2`, `n:1E+2`},
		{`-1.5e-10`, `n:-1.5e-10`},
		{`0.000001`, `n:0.000001`},
		{`12345678901234567891`, `n:12345678901234567891`},
		{`123456789012345678901234567890.123456789e-999`, `n:123456789012345678901234567890.123456789e-999`},
		{`""`, `s:""`},
		{`"abc"`, `s:"abc"`},
		{`"a\"b\\c\/d\b\f\n\r\t"`, `s:"a\"b\\c/d\b\f\n\r\t"`},
		{`"\u0041\u00e9\u20AC\ud83d\ude00\uDBFF\uDFFF"`, `s:"Aé€😀\U0010ffff"`},
		{`"\u0000"`, `s:"\x00"`},
		{"\"é😀\x7f\ufeff\"", `s:"é😀\x7f\ufeff"`},
		{`"x\u00e9y\nz"`, `s:"xéy\nz"`},
		{`[]`, `[ ]`},
		{`{}`, `{ }`},
		{`[1,2,3]`, `[ n:1 n:2 n:3 ]`},
		{`[[],{},[{}]]`, `[ [ ] { } [ { } ] ]`},
		{`{"a":1,"b":[true,false,null],"c":{"d":"e"}}`, `{ k:"a" n:1 k:"b" [ true false null ] k:"c" { k:"d" s:"e" } }`},
		{" \t\r\n[ 1 , { \"a\" : [ ] } , \"s\" ] \n", `[ n:1 { k:"a" [ ] } s:"s" ]`},
		{`{"a":1,"a":2}`, `{ k:"a" n:1 k:"a" n:2 }`},
		{`{"k\u00e9\n":"v"}`, `{ k:"ké\n" s:"v" }`},
		{`[-1,0,1e-0,2E-07]`, `[ n:-1 n:0 n:1e-0 n:2E-07 ]`},
		{deep, strings.TrimSpace(strings.Repeat("[ ", 512) + strings.Repeat("] ", 512))},
	}
	for _, tt := range tests {
		got, err := scanAllVariants(t, []byte(tt.in), 0)
		if err != nil {
			t.Errorf("%q: unexpected error %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("%q:\n got %s\nwant %s", tt.in, got, tt.want)
		}
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		in       string
		maxDepth int
		msg      string
		off      int64
		line     int
		col      int
	}{
		// Structure.
		{``, 0, "empty input: expected a JSON value", 0, 1, 1},
		{"  \n ", 0, "empty input: expected a JSON value", 4, 2, 2},
		{"\xEF\xBB\xBF{}", 0, "input starts with a byte-order mark (U+FEFF), which JSON does not allow", 0, 1, 1},
		{"\xEF\xBB", 0, "expected a JSON value but found byte 0xEF", 0, 1, 1},
		{` "\ufeff"` + "\xEF\xBB\xBF", 0, "unexpected data after the top-level value", 9, 1, 10},
		{`{"a":1 "b":2}`, 0, "expected ',' or '}' after object member", 7, 1, 8},
		{`[1 2]`, 0, "expected ',' or ']' after array element", 3, 1, 4},
		{`[1}`, 0, "expected ',' or ']' after array element", 2, 1, 3},
		{`{"a":1]`, 0, "expected ',' or '}' after object member", 6, 1, 7},
		{`[1,2`, 0, "unexpected end of input inside array", 4, 1, 5},
		{`[`, 0, "unexpected end of input inside array", 1, 1, 2},
		{`{"a":1`, 0, "unexpected end of input inside object", 6, 1, 7},
		{`{"a"`, 0, "unexpected end of input inside object", 4, 1, 5},
		{`{"a":`, 0, "unexpected end of input inside object", 5, 1, 6},
		{`{"a" 1}`, 0, "expected ':' after object key", 5, 1, 6},
		{`{"a",1}`, 0, "expected ':' after object key", 4, 1, 5},
		{`{1:2}`, 0, "expected a string key or '}' but found '1'", 1, 1, 2},
		{`{'a':2}`, 0, `expected a string key or '}' but found "'"`, 1, 1, 2},
		{`{"a":1,}`, 0, "expected a string key after ',' in object but found '}'", 7, 1, 8},
		{`[1,]`, 0, "expected a JSON value but found ']'", 3, 1, 4},
		{`[,]`, 0, "expected a JSON value or ']' but found ','", 1, 1, 2},
		{`{"a":}`, 0, "expected a JSON value but found '}'", 5, 1, 6},
		{`1 2`, 0, "unexpected data after the top-level value", 2, 1, 3},
		{"{}\n\nx", 0, "unexpected data after the top-level value", 4, 3, 1},
		{`[]]`, 0, "unexpected data after the top-level value", 2, 1, 3},
		{"\x00", 0, "expected a JSON value but found byte 0x00", 0, 1, 1},
		{"[\xff]", 0, "expected a JSON value or ']' but found byte 0xFF", 1, 1, 2},
		{"\f1", 0, "expected a JSON value but found byte 0x0C", 0, 1, 1},
		{"[1,\u00a02]", 0, "expected a JSON value but found byte 0xC2", 3, 1, 4},

		// Nesting.
		{strings.Repeat("[", 513), 0, "nesting deeper than 512 levels", 512, 1, 513},
		{strings.Repeat(`{"a":`, 513), 0, "nesting deeper than 512 levels", 512 * 5, 1, 512*5 + 1},
		{`[[{"a":[]}]]`, 3, "nesting deeper than 3 levels", 7, 1, 8},

		// Numbers.
		{`01`, 0, "invalid number: leading zeros are not allowed", 1, 1, 2},
		{`-01`, 0, "invalid number: leading zeros are not allowed", 2, 1, 3},
		{`00.5`, 0, "invalid number: leading zeros are not allowed", 1, 1, 2},
		{`+1`, 0, "expected a JSON value but found '+'", 0, 1, 1},
		{`.5`, 0, "expected a JSON value but found '.'", 0, 1, 1},
		{`1.`, 0, "invalid number: expected a digit after the decimal point", 2, 1, 3},
		{`[1.]`, 0, "invalid number: expected a digit after the decimal point", 3, 1, 4},
		{`1.e5`, 0, "invalid number: expected a digit after the decimal point", 2, 1, 3},
		{`1e`, 0, "invalid number: expected a digit in the exponent", 2, 1, 3},
		{`1e+`, 0, "invalid number: expected a digit in the exponent", 3, 1, 4},
		{`1E-x`, 0, "invalid number: expected a digit in the exponent", 3, 1, 4},
		{`-`, 0, "invalid number: expected a digit after '-'", 1, 1, 2},
		{`--1`, 0, "invalid number: expected a digit after '-'", 1, 1, 2},
		{`-Infinity`, 0, "invalid number: expected a digit after '-'", 1, 1, 2},
		{`NaN`, 0, "expected a JSON value but found 'N'", 0, 1, 1},
		{`Infinity`, 0, "expected a JSON value but found 'I'", 0, 1, 1},
		{`1.2.3`, 0, "invalid number: unexpected '.'", 3, 1, 4},
		{`1e5e5`, 0, "invalid number: unexpected 'e'", 3, 1, 4},
		{`[1-2]`, 0, "invalid number: unexpected '-'", 2, 1, 3},
		{`1+`, 0, "invalid number: unexpected '+'", 1, 1, 2},
		{`0x10`, 0, "unexpected data after the top-level value", 1, 1, 2},
		{`[1x]`, 0, "expected ',' or ']' after array element", 2, 1, 3},

		// Literals.
		{`tru`, 0, "unexpected end of input inside literal true", 3, 1, 4},
		{`[n`, 0, "unexpected end of input inside literal null", 2, 1, 3},
		{`trux`, 0, "invalid literal: expected true", 3, 1, 4},
		{`falsy`, 0, "invalid literal: expected false", 4, 1, 5},
		{`[nul]`, 0, "invalid literal: expected null", 4, 1, 5},
		{`True`, 0, "expected a JSON value but found 'T'", 0, 1, 1},
		{`truefalse`, 0, "unexpected data after the top-level value", 4, 1, 5},
		{`[true false]`, 0, "expected ',' or ']' after array element", 6, 1, 7},

		// Strings.
		{`"abc`, 0, "unexpected end of input inside string", 4, 1, 5},
		{`"`, 0, "unexpected end of input inside string", 1, 1, 2},
		{`"a\`, 0, "unexpected end of input inside string", 3, 1, 4},
		{`"a\n`, 0, "unexpected end of input inside string", 4, 1, 5},
		{`{"ab`, 0, "unexpected end of input inside string", 4, 1, 5},
		{"\"a\x01\"", 0, "unescaped control character U+0001 in string (must be written as an escape)", 2, 1, 3},
		{"\"a\nb\"", 0, "unescaped control character U+000A in string (must be written as an escape)", 2, 1, 3},
		{"\"a\tb\"", 0, "unescaped control character U+0009 in string (must be written as an escape)", 2, 1, 3},
		{"\"\\n\x1f\"", 0, "unescaped control character U+001F in string (must be written as an escape)", 3, 1, 4},
		{`"\x"`, 0, `invalid escape sequence \x in string`, 1, 1, 2},
		{`"ab\'"`, 0, `invalid escape sequence \' in string`, 3, 1, 4},
		{"\"\\\x01\"", 0, `invalid escape sequence in string: backslash followed by byte 0x01`, 1, 1, 2},
		{`"\U0041"`, 0, `invalid escape sequence \U in string`, 1, 1, 2},
		{`"\u12"`, 0, `invalid \u escape in string: expected four hex digits but found '"'`, 5, 1, 6},
		{`"\uZZZZ"`, 0, `invalid \u escape in string: expected four hex digits but found 'Z'`, 3, 1, 4},
		{`"\u12`, 0, "unexpected end of input inside string", 5, 1, 6},
		{`"\ud800"`, 0, `lone surrogate escape \ud800 in string: a high surrogate must be followed by a low surrogate escape (\uDC00-\uDFFF)`, 1, 1, 2},
		{`"ab\uD800x"`, 0, `lone surrogate escape \uD800 in string: a high surrogate must be followed by a low surrogate escape (\uDC00-\uDFFF)`, 3, 1, 4},
		{`"\ud800\n"`, 0, `lone surrogate escape \ud800 in string: a high surrogate must be followed by a low surrogate escape (\uDC00-\uDFFF)`, 1, 1, 2},
		{`"\ud800\u0041"`, 0, `lone surrogate escape \ud800 in string: a high surrogate must be followed by a low surrogate escape (\uDC00-\uDFFF)`, 1, 1, 2},
		{`"\udbff\udbff"`, 0, `lone surrogate escape \udbff in string: a high surrogate must be followed by a low surrogate escape (\uDC00-\uDFFF)`, 1, 1, 2},
		{`"\udc00"`, 0, `lone surrogate escape \udc00 in string: a low surrogate must follow a high surrogate escape (\uD800-\uDBFF)`, 1, 1, 2},
		{`"\uDFFF\uD800"`, 0, `lone surrogate escape \uDFFF in string: a low surrogate must follow a high surrogate escape (\uD800-\uDBFF)`, 1, 1, 2},
		{`"\ud800`, 0, "unexpected end of input inside string", 7, 1, 8},
		{`"\ud800\`, 0, "unexpected end of input inside string", 8, 1, 9},
		{`"\ud800\udc`, 0, "unexpected end of input inside string", 11, 1, 12},
		{`"\ud800\u12"`, 0, `invalid \u escape in string: expected four hex digits but found '"'`, 11, 1, 12},
		{"\"ab\xff\"", 0, "invalid UTF-8 in string", 3, 1, 4},
		{"\"\xc3\"", 0, "invalid UTF-8 in string", 1, 1, 2},
		{"\"\xc3\\n\xa9\"", 0, "invalid UTF-8 in string", 1, 1, 2},
		{"\"\xed\xa0\x80\"", 0, "invalid UTF-8 in string", 1, 1, 2},
		{"\"\xc0\xaf\"", 0, "invalid UTF-8 in string", 1, 1, 2},
		{"\"\xf4\x90\x80\x80\"", 0, "invalid UTF-8 in string", 1, 1, 2},
		{"\"\\n\xff\"", 0, "invalid UTF-8 in string", 3, 1, 4},
		{"\"é\\té\xff\"", 0, "invalid UTF-8 in string", 7, 1, 8},
		{"{\"é\xff\":1}", 0, "invalid UTF-8 in string", 4, 1, 5},

		// Line and column.
		{"{\n  \"a\": 1,\n  \"b\" 2\n}", 0, "expected ':' after object key", 18, 3, 7},
		{"[\r\n1,\r\n2,\r\n", 0, "unexpected end of input inside array", 11, 4, 1},
		{"[\n\"é\",\n  \"\\q\"]", 0, `invalid escape sequence \q in string`, 11, 3, 4},
	}
	for _, tt := range tests {
		_, err := scanAllVariants(t, []byte(tt.in), tt.maxDepth)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: got error %v, want a *SyntaxError", tt.in, err)
			continue
		}
		want := SyntaxError{Offset: tt.off, Line: tt.line, Column: tt.col, Msg: tt.msg}
		if *se != want {
			t.Errorf("%q:\n got %+v\nwant %+v", tt.in, *se, want)
		}
	}
}

func TestSyntaxErrorString(t *testing.T) {
	doc := "{\n  \"a\": 1,\n  \"bb\": 2\n  \"c\": 3}"
	_, _, _ = NewBytes(nil, 0).Next()
	s := NewBytes([]byte(doc), 0)
	var err error
	for err == nil {
		_, _, err = s.Next()
	}
	const want = "JSON syntax error at line 4, column 3 (byte 24): expected ',' or '}' after object member"
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
}

func TestStickyErrorAndEOF(t *testing.T) {
	s := NewBytes([]byte(`[1,}`), 0)
	var first error
	for first == nil {
		_, _, first = s.Next()
	}
	for range 3 {
		if k, b, err := s.Next(); err != first || k != Invalid || b != nil {
			t.Fatalf("after error: got %v %q %v, want the same error %v", k, b, err, first)
		}
	}
	s = NewBytes([]byte(" 7 \n"), 0)
	if k, b, err := s.Next(); k != Number || string(b) != "7" || err != nil {
		t.Fatalf("got %v %q %v", k, b, err)
	}
	for range 3 {
		if _, _, err := s.Next(); err != io.EOF {
			t.Fatalf("got %v, want io.EOF", err)
		}
	}
	if s.Offset() != 4 {
		t.Errorf("Offset after EOF = %d, want 4", s.Offset())
	}
}

func TestDepthAndOffset(t *testing.T) {
	doc := `{"a": [1, "x"], "b":{}} `
	type step struct {
		kind   Kind
		depth  int
		offset int64
	}
	want := []step{
		{BeginObject, 1, 1},
		{Key, 1, 4},
		{BeginArray, 2, 7},
		{Number, 2, 8},
		{String, 2, 13},
		{EndArray, 1, 14},
		{Key, 1, 19},
		{BeginObject, 2, 21},
		{EndObject, 1, 22},
		{EndObject, 0, 23},
	}
	for _, v := range variants {
		s := v.new([]byte(doc), 0)
		if s.Depth() != 0 || s.Offset() != 0 {
			t.Fatalf("%s: fresh scanner has depth %d, offset %d", v.name, s.Depth(), s.Offset())
		}
		for i, w := range want {
			k, _, err := s.Next()
			if err != nil {
				t.Fatalf("%s: token %d: %v", v.name, i, err)
			}
			if got := (step{k, s.Depth(), s.Offset()}); got != w {
				t.Errorf("%s: token %d: got %+v, want %+v", v.name, i, got, w)
			}
		}
		if _, _, err := s.Next(); err != io.EOF {
			t.Errorf("%s: got %v, want io.EOF", v.name, err)
		}
		if s.Offset() != int64(len(doc)) {
			t.Errorf("%s: final offset %d, want %d", v.name, s.Offset(), len(doc))
		}
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{
		Invalid: "Invalid", BeginObject: "BeginObject", EndArray: "EndArray", Key: "Key",
		Number: "Number", Null: "Null", Kind(200): "Kind(200)",
	} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, got, want)
		}
	}
}

var errBoom = errors.New("boom")

func TestReaderError(t *testing.T) {
	for _, prefix := range []string{``, `[1,2`, `[12`, `["abc`, `[tr`, `[1, `, `{"a":"\u00`, `"\ud800`} {
		r := io.MultiReader(strings.NewReader(prefix), iotest.ErrReader(errBoom))
		_, err := render(New(r, 0))
		if err != errBoom {
			t.Errorf("%q: got %v, want the reader's error", prefix, err)
		}
	}
	// A complete document followed by a read error: the error is reported
	// because the scanner must check what follows the value.
	r := io.MultiReader(strings.NewReader(`[1] `), iotest.ErrReader(errBoom))
	if got, err := render(New(r, 0)); got != "[ n:1 ]" || err != errBoom {
		t.Errorf("got %s / %v", got, err)
	}
	// A reader that never makes progress.
	if _, err := render(New(zeroReader{}, 0)); err != io.ErrNoProgress {
		t.Errorf("zero reader: got %v, want io.ErrNoProgress", err)
	}
}

// zeroReader returns (0, nil) forever.
type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

// TestLongTokens checks tokens much longer than the read buffer: a 10 MB
// string, and 1 MB each of a string full of escapes, a number and a key.
func TestLongTokens(t *testing.T) {
	checkLongTokens(t, 10<<20, []variant{
		{"NewBytes", func(d []byte, m int) *Scanner { return NewBytes(d, m) }},
		{"New", func(d []byte, m int) *Scanner { return New(bytes.NewReader(d), m) }},
		{"HalfReader", func(d []byte, m int) *Scanner { return New(iotest.HalfReader(bytes.NewReader(d)), m) }},
		{"buf1-HalfReader", func(d []byte, m int) *Scanner {
			return newReader(iotest.HalfReader(bytes.NewReader(d)), m, 1)
		}},
	})
	// Byte-at-a-time reading is slow (especially with -race), so it gets
	// tokens ten times shorter, still longer than the buffer.
	checkLongTokens(t, 1<<20, []variant{
		{"OneByteReader", func(d []byte, m int) *Scanner { return New(iotest.OneByteReader(bytes.NewReader(d)), m) }},
	})
}

func checkLongTokens(t *testing.T, size int, scanners []variant) {
	t.Helper()
	plain := strings.Repeat("abcdefghé€😀", size/19+1)
	var esc, escWant strings.Builder
	for esc.Len() < size/10 {
		esc.WriteString(`0123456789\n\u00e9\ud83d\ude00é`)
		escWant.WriteString("0123456789\né😀é")
	}
	digits := strings.Repeat("1234567890", size/100)
	key := strings.Repeat("abcdefghé€😀", size/190+1)
	doc := []byte(`[` + strconv.Quote(plain) + `,"` + esc.String() + `",` + digits + `.5e+7,{"` + key + `":0}]`)
	want := []struct {
		k Kind
		b string
	}{
		{BeginArray, ""}, {String, plain}, {String, escWant.String()}, {Number, digits + ".5e+7"},
		{BeginObject, ""}, {Key, key}, {Number, "0"}, {EndObject, ""}, {EndArray, ""},
	}
	for _, v := range scanners {
		s := v.new(doc, 0)
		for i, w := range want {
			k, b, err := s.Next()
			if err != nil || k != w.k || string(b) != w.b {
				t.Fatalf("%s: token %d: got %v (%d bytes) %v, want %v (%d bytes)", v.name, i, k, len(b), err, w.k, len(w.b))
			}
		}
		if _, _, err := s.Next(); err != io.EOF {
			t.Fatalf("%s: got %v, want io.EOF", v.name, err)
		}
		// The buffer may grow to a small multiple of the longest token.
		if longest := len(plain) + 2; s.r != nil && len(s.buf) > 4*longest {
			t.Errorf("%s: buffer grew to %d bytes for a longest token of %d bytes", v.name, len(s.buf), longest)
		}
	}
}

// TestBufferStaysSmall checks that a large document of small tokens does not
// grow the streaming buffer.
func TestBufferStaysSmall(t *testing.T) {
	doc := genObjects(1 << 20)
	s := New(bytes.NewReader(doc), 0)
	if _, err := render(s); err != nil {
		t.Fatal(err)
	}
	if len(s.buf) != defaultBufSize {
		t.Errorf("buffer is %d bytes, want %d", len(s.buf), defaultBufSize)
	}
}

// TestLineCountingAcrossRefills checks line/column of an error far into a
// streamed document, after many buffer compactions.
func TestLineCountingAcrossRefills(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("[\n")
	const lines = 50000
	for i := range lines {
		fmt.Fprintf(&b, "  {\"id\": %d, \"s\": \"line\\n%d\"},\n", i, i)
	}
	b.WriteString("  {\"id\": tru }\n]\n")
	doc := b.Bytes()
	wantOff := int64(bytes.LastIndex(doc, []byte("tru ")) + 3)
	want := SyntaxError{Offset: wantOff, Line: lines + 2, Column: 13, Msg: "invalid literal: expected true"}
	for _, s := range []*Scanner{NewBytes(doc, 0), New(bytes.NewReader(doc), 0), newReader(iotest.HalfReader(bytes.NewReader(doc)), 0, 100)} {
		_, err := render(s)
		var se *SyntaxError
		if !errors.As(err, &se) || *se != want {
			t.Errorf("got %v, want %+v", err, want)
		}
	}
}

func TestZeroAllocs(t *testing.T) {
	doc := genObjects(4 << 20)
	// Add strings with escapes: their decoding buffer is reused too.
	doc = bytes.ReplaceAll(doc, []byte(`"b"]`), []byte(`"b\n\u00e9\ud83d\ude00"]`))
	for _, v := range variants[:2] {
		s := v.new(doc, 0)
		next := func() {
			for range 1000 {
				if _, _, err := s.Next(); err != nil {
					t.Fatal(err)
				}
			}
		}
		next() // warm up
		if a := testing.AllocsPerRun(100, next); a != 0 {
			t.Errorf("%s: %v allocations per 1000 tokens, want 0", v.name, a)
		}
	}
}

// TestDoesNotModifyInput checks that NewBytes leaves the document alone.
func TestDoesNotModifyInput(t *testing.T) {
	doc := []byte(`{"a\n":["x\u00e9", 1.5, true, null, "` + strings.Repeat("y", 1000) + `"]}`)
	orig := bytes.Clone(doc)
	if _, err := render(NewBytes(doc, 0)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(doc, orig) {
		t.Error("NewBytes modified its input")
	}
}

// TestStringsAreValidUTF8 checks the returned bytes of a mixed document.
func TestStringsAreValidUTF8(t *testing.T) {
	doc := []byte(`["\u00e9\u0800\uffff\ud800\udc00", "plain é", "\u0000\u001f"]`)
	s := NewBytes(doc, 0)
	for {
		k, b, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if k == String && !utf8.Valid(b) {
			t.Errorf("invalid UTF-8 returned: %q", b)
		}
	}
}

package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// fuzzMaxDepth matches encoding/json's own nesting limit, so that both
// sides agree on deeply nested input.
const fuzzMaxDepth = 10000

// surrogateEscape matches \u escapes of UTF-16 surrogates (it may also match
// an escaped backslash followed by "ud800", which only makes the fuzz
// target more lenient).
var surrogateEscape = regexp.MustCompile(`(?i)\\ud[89a-f]`)

type token struct {
	kind Kind
	text string
}

// collect scans s to the end.
func collect(t *testing.T, s *Scanner) ([]token, error) {
	var toks []token
	for {
		k, b, err := s.Next()
		if err == io.EOF {
			return toks, nil
		}
		if err != nil {
			if k != Invalid || b != nil {
				t.Fatalf("Next returned %v %q with error %v", k, b, err)
			}
			return toks, err
		}
		if k == Invalid {
			t.Fatal("Next returned Invalid without error")
		}
		if (k == Key || k == String) && !utf8.Valid(b) {
			t.Fatalf("%v token is not valid UTF-8: %q", k, b)
		}
		toks = append(toks, token{k, string(b)})
	}
}

// reserialize writes tokens back out as a JSON document.
func reserialize(t *testing.T, toks []token) []byte {
	var out []byte
	prev := Invalid
	for _, tk := range toks {
		switch {
		case tk.kind == EndObject || tk.kind == EndArray:
		case prev == Key:
			out = append(out, ':')
		case prev != Invalid && prev != BeginObject && prev != BeginArray:
			out = append(out, ',')
		}
		switch tk.kind {
		case BeginObject:
			out = append(out, '{')
		case EndObject:
			out = append(out, '}')
		case BeginArray:
			out = append(out, '[')
		case EndArray:
			out = append(out, ']')
		case Key, String:
			q, err := json.Marshal(tk.text)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, q...)
		case Number:
			out = append(out, tk.text...)
		case True:
			out = append(out, "true"...)
		case False:
			out = append(out, "false"...)
		case Null:
			out = append(out, "null"...)
		}
		prev = tk.kind
	}
	return out
}

func decode(t *testing.T, doc []byte) any {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("encoding/json cannot decode %q: %v", doc, err)
	}
	return v
}

func FuzzScanner(f *testing.F) {
	for _, seed := range []string{
		``, ` `, `null`, `true`, `false`, `0`, `-0`, `1.0`, `1e3`, `1E+2`, `-1.5e-10`,
		`12345678901234567891`, `01`, `1.`, `.5`, `+1`, `-`, `NaN`, `1e`, `tru`, `nul`,
		`""`, `"abc"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u0041\u00e9\ud83d\ude00"`, `"\ud800"`,
		`"\udc00"`, `"\ud800\udbff"`, `"\u12"`, `"\x"`, "\"\xff\"", "\"a\nb\"", "\xEF\xBB\xBF1",
		`[]`, `{}`, `[1,2,3]`, `[1,]`, `[,]`, `{"a":1,}`, `{"a" 1}`, `{"a":1 "b":2}`, `[1 2]`,
		`{"a":{"b":[{"c":null}]},"d":[true,false]}`, `{"a":1,"a":2}`, "[\n 1,\n 2\n]\n", `1 2`,
		`[[[[[[[[[[]]]]]]]]]]`, `[[[[[[[[[[`, `{"é":"ü€😀"}`,
		`{"id":1,"name":"user-1","email":"user1@example.com","tags":["a","b"],"score":1,"active":true}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(checkInput)
}

// checkInput is the body of FuzzScanner.
func checkInput(t *testing.T, data []byte) {
	toks, err := collect(t, NewBytes(data, fuzzMaxDepth))

	// Streaming in small pieces must give identical results.
	for _, s := range []*Scanner{
		New(iotest.OneByteReader(bytes.NewReader(data)), fuzzMaxDepth),
		newReader(iotest.HalfReader(bytes.NewReader(data)), fuzzMaxDepth, 3),
	} {
		toks2, err2 := collect(t, s)
		if !reflect.DeepEqual(toks, toks2) || fmt.Sprint(err) != fmt.Sprint(err2) {
			t.Fatalf("streaming disagrees with NewBytes on %q:\n got %v / %v\nwant %v / %v", data, toks2, err2, toks, err)
		}
	}

	if err != nil {
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Fatalf("got non-syntax error %v", err)
		}
		if se.Offset < 0 || se.Offset > int64(len(data)) || se.Line < 1 || se.Column < 1 || se.Msg == "" {
			t.Fatalf("implausible error %+v for %q", *se, data)
		}
		wantLine := 1 + bytes.Count(data[:se.Offset], []byte{'\n'})
		wantCol := int(se.Offset) - (bytes.LastIndexByte(data[:se.Offset], '\n') + 1) + 1
		if se.Line != wantLine || se.Column != wantCol {
			t.Fatalf("error %+v for %q: want line %d, column %d", *se, data, wantLine, wantCol)
		}
	}

	valid := json.Valid(data)
	switch {
	case !valid && err == nil:
		t.Fatalf("accepted invalid JSON %q", data)
	case valid && err != nil:
		// encoding/json does not check UTF-8 and surrogate pairing; we do.
		suspicious := !utf8.Valid(data) || surrogateEscape.Match(data)
		msg := err.Error()
		if !suspicious || !(strings.Contains(msg, "UTF-8") || strings.Contains(msg, "surrogate")) {
			t.Fatalf("rejected valid JSON %q: %v", data, err)
		}
	case valid:
		out := reserialize(t, toks)
		if got, want := decode(t, out), decode(t, data); !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip of %q gave %q:\n got %#v\nwant %#v", data, out, got, want)
		}
	}
}

package jsonscan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// lineVariants feeds JSON Lines through every reader shape the document variants use.
var lineVariants = []variant{
	{"NewLines", func(d []byte, m int) *Scanner { return NewLines(bytes.NewReader(d), m) }},
	{"OneByteReader", func(d []byte, m int) *Scanner { return NewLines(iotest.OneByteReader(bytes.NewReader(d)), m) }},
	{"buf1", func(d []byte, m int) *Scanner { s := newReader(bytes.NewReader(d), m, 1); s.lines = true; return s }},
	{"buf3-HalfReader", func(d []byte, m int) *Scanner {
		s := newReader(iotest.HalfReader(bytes.NewReader(d)), m, 3)
		s.lines = true
		return s
	}},
}

func scanLines(t *testing.T, doc string) (string, error) {
	t.Helper()
	want, wantErr := render(lineVariants[0].new([]byte(doc), 0))
	for _, v := range lineVariants[1:] {
		got, gotErr := render(v.new([]byte(doc), 0))
		if got != want || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("%s disagrees on %q:\n got %s / %v\nwant %s / %v", v.name, doc, got, gotErr, want, wantErr)
		}
	}
	return want, wantErr
}

// TestLines: one value per line, each scanned as a document; blank lines and a missing final newline are fine.
func TestLines(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"", ""},
		{"\n\n  \n", ""},
		{"1", "n:1"},
		{"1\n", "n:1"},
		{`{"a":[1, 2]}` + "\n" + `"x"` + "\r\n\n" + "  null \t\n[]\n", `{ k:"a" [ n:1 n:2 ] } s:"x" null [ ]`},
		{"12\n-3.5e2\ntrue", "n:12 n:-3.5e2 true"},
		{`{ "k" : "v" }` + "\n\n\n" + `{}`, `{ k:"k" s:"v" } { }`},
	} {
		got, err := scanLines(t, c.doc)
		if err != nil || got != c.want {
			t.Errorf("%q: got %q, %v; want %q", c.doc, got, err, c.want)
		}
	}
}

// TestLinesErrors: two values on a line, a value broken over lines (a pretty-printed document) and ordinary
// syntax errors are refused at the right line and column.
func TestLinesErrors(t *testing.T) {
	for _, c := range []struct {
		doc        string
		line, col  int
		off        int64
		msgContain string
	}{
		{"1 2\n", 1, 3, 2, "a second value on the same line"},
		{"{\"a\":1}\n{\"a\":1}{}\n", 2, 8, 15, "a second value on the same line"},
		{"[\n  1,\n  2\n]\n", 1, 2, 1, "line break inside a value"},
		{"{\"a\":1,\n\"b\":2}\n", 1, 8, 7, "line break inside a value"},
		{"{\"a\":\n1}\n", 1, 6, 5, "line break inside a value"},
		{"1\n2\n{\"a\":tru}\n", 3, 9, 12, "invalid literal"},
		{"1\n\xEF\xBB\xBF2\n", 2, 1, 2, "expected a JSON value"},
		{"\xEF\xBB\xBF1\n", 1, 1, 0, "byte-order mark"},
		{"[1,\n", 1, 4, 3, "line break inside a value"},
		{"[1", 1, 3, 2, "unexpected end of input inside array"},
	} {
		_, err := scanLines(t, c.doc)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: got %v, want a syntax error", c.doc, err)
			continue
		}
		if se.Line != c.line || se.Column != c.col || se.Offset != c.off || !strings.Contains(se.Msg, c.msgContain) {
			t.Errorf("%q: got line %d column %d byte %d %q; want %d, %d, %d, containing %q", c.doc, se.Line, se.Column, se.Offset, se.Msg, c.line, c.col, c.off, c.msgContain)
		}
	}
}

// TestLinesDepth: the nesting limit applies to each value.
func TestLinesDepth(t *testing.T) {
	doc := "[[1]]\n[[[1]]]\n"
	s := NewLines(strings.NewReader(doc), 2)
	_, err := render(s)
	var se *SyntaxError
	if !errors.As(err, &se) || se.Line != 2 || !strings.Contains(se.Msg, "nesting deeper than 2") {
		t.Fatalf("got %v", err)
	}
}

// TestPosition: Position reports where the scanner stands, across refills.
func TestPosition(t *testing.T) {
	doc := strings.Repeat("\n", 70000) + `{"a":` + "\n  1}"
	s := newReader(strings.NewReader(doc), 0, 16)
	for {
		k, _, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		if k == Number {
			break
		}
	}
	off, line, col := s.Position()
	if off != int64(len(doc)-1) || line != 70002 || col != 4 {
		t.Fatalf("Position = %d, %d, %d; want %d, 70002, 4", off, line, col, len(doc)-1)
	}
	if _, _, err := s.Next(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Next(); err != io.EOF {
		t.Fatalf("got %v, want EOF", err)
	}
}

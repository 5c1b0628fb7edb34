package formats

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

func importCSV(t *testing.T, f *revision.Forest, in string, types map[string]ColumnType) (revision.Value, error) {
	t.Helper()
	v, _, err := f.ImportWith(context.Background(), iotest.HalfReader(NewCSVReader(strings.NewReader(in), types)), &revision.ImportOptions{Lines: true})
	return v, err
}

func jsonOf(t *testing.T, f *revision.Forest, v revision.Value) string {
	t.Helper()
	b, err := f.JSON(context.Background(), v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCSVImport: a header row and records become an array of objects; strings unless typed.
func TestCSVImport(t *testing.T) {
	f := revision.New(store.NewMem(), nil)
	types, err := ParseColumnTypes([]string{"price=number", "active=Boolean", "tags=json"})
	if err != nil {
		t.Fatal(err)
	}
	in := "\uFEFFname,price,active,tags,note\r\n" +
		"tent,199.90,true,\"[\"\"a\"\",\n \"\"b\"\"]\",\"multi\nline, with \"\"quotes\"\"\"\n" +
		"lamp, 12 ,FALSE,{},\n" +
		"\"\",,,,\t\x01é\n"
	v, err := importCSV(t, f, in, types)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"active":true,"name":"tent","note":"multi\nline, with \"quotes\"","price":199.90,"tags":["a","b"]},` +
		`{"active":false,"name":"lamp","note":"","price":12,"tags":{}},` +
		`{"active":null,"name":"","note":"\t\u0001é","price":null,"tags":null}]`
	if got := jsonOf(t, f, v); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// Header only: an empty array. Numbers keep their text.
	if v, err := importCSV(t, f, "a,b\n", nil); err != nil || jsonOf(t, f, v) != "[]" {
		t.Fatalf("header only: %v", err)
	}
	v, err = importCSV(t, f, "n\n12345678901234567890.000\n-0\n1E+400\n", map[string]ColumnType{"n": Number})
	if err != nil || jsonOf(t, f, v) != `[{"n":12345678901234567890.000},{"n":-0},{"n":1E+400}]` {
		t.Fatalf("exact numbers: %v", err)
	}
}

// TestCSVImportErrors: every refusal names the line and column (and the column's name) and says what to do.
func TestCSVImportErrors(t *testing.T) {
	f := revision.New(store.NewMem(), nil)
	num := map[string]ColumnType{"price": Number}
	for _, c := range []struct {
		in    string
		types map[string]ColumnType
		want  string
	}{
		{"", nil, "line 1, column 1: the input is empty"},
		{"a,b,a\n1,2,3\n", nil, `line 1, column 5 ("a"): columns 1 and 3 have the same name`},
		{"a,,b\n", nil, "line 1, column 3: column 2 of the header has no name"},
		{"name,price\nx,1\ny,1,2\n", num, "line 3, column 1: this record has a different number of fields from the header's 2"},
		{"name,price\nx,1\ny,12;5\n", num, `line 3, column 3 ("price"): "12;5" is not a number`},
		{"name,price\nx,01\n", num, `line 2, column 3 ("price"): "01" is not a number`},
		{"a,ok\nx,yes\n", map[string]ColumnType{"ok": Boolean}, `line 2, column 3 ("ok"): "yes" is not a boolean`},
		{"a,j\nx,\"{\"\"a\"\":1,\"\"a\"\":2}\"\n", map[string]ColumnType{"j": JSON}, `line 2, column 3 ("j"): the field is not JSON`},
		{"a,j\nx,[1\n", map[string]ColumnType{"j": JSON}, `("j"): the field is not JSON`},
		{"a\nab\"c\n", nil, `line 2, column 3: bare " in non-quoted-field`},
		{"a\n\"abc\n", nil, "line 2, column 6: extraneous or missing \" in quoted-field"},
		{"a\nx\xff\n", nil, `line 2, column 1 ("a"): the field is not valid UTF-8`},
		{"a\nx\n", num, `a type is given for "price", but the header has no such column (its columns: "a")`},
	} {
		_, err := importCSV(t, f, c.in, c.types)
		if !errors.Is(err, ErrInvalidCSV) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v\nwant an invalid-CSV error containing %q", c.in, err, c.want)
		}
	}
	for _, bad := range [][]string{{"price"}, {"price=money"}, {"a=number", "a=string"}} {
		if _, err := ParseColumnTypes(bad); !errors.Is(err, ErrInvalidCSV) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if m, err := ParseColumnTypes([]string{"a=b=number", "c=string"}); err != nil || m["a=b"] != Number || m["c"] != String {
		t.Errorf("a name with '=': %v %v", m, err)
	}
}

// TestCSVRoundTrip: CSV with its columns in key order comes back byte for byte (types kept), and rows stream.
func TestCSVRoundTrip(t *testing.T) {
	ctx := context.Background()
	f := revision.New(store.NewMem(), nil)
	var in strings.Builder
	in.WriteString("active,email,id,name,note\n")
	for i := range 5000 {
		note := "plain"
		if i%7 == 0 {
			note = "\"with, comma\nand \"\"quotes\"\"\""
		}
		active := "true"
		if i%3 == 0 {
			active = ""
		}
		in.WriteString(active + ",user" + itoa(i) + "@example.com," + itoa(i) + ",user-" + itoa(i) + "," + note + "\n")
	}
	types := map[string]ColumnType{"id": Number, "active": Boolean}
	v, err := importCSV(t, f, in.String(), types)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteCSV(ctx, f, &out, v); err != nil {
		t.Fatal(err)
	}
	if out.String() != in.String() {
		t.Fatalf("round trip differs:\n%.300s\n---\n%.300s", out.String(), in.String())
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestWriteCSVRefuses: what has no CSV form is refused, naming the element and key.
func TestWriteCSVRefuses(t *testing.T) {
	ctx := context.Background()
	f := revision.New(store.NewMem(), nil)
	for doc, want := range map[string]string{
		`{"a":1}`:                       "this value is an object",
		`[{"a":1},2]`:                   "element 1 is a number, not an object",
		`[{"a":1,"b":[1]}]`:             `element 0, key "b": an array cannot be a CSV field`,
		`[{"a":1,"b":{}}]`:              `element 0, key "b": an object cannot be a CSV field`,
		`[{"a":1,"b":2},{"a":1}]`:       `element 1 lacks "b" the columns of the header (the first element's keys: "a", "b")`,
		`[{"a":1},{"a":1,"c":2}]`:       `element 1 has "c" besides the columns`,
		`[{"a":1,"b":2},{"a":1,"c":2}]`: `element 1 lacks "b" and has "c" besides`,
	} {
		v, _, err := f.ImportBytes(ctx, []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		err = WriteCSV(ctx, f, io.Discard, v)
		if !errors.Is(err, ErrNotTabular) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", doc, err, want)
		}
	}
	v, _, _ := f.ImportBytes(ctx, []byte(`[]`))
	var b bytes.Buffer
	if err := WriteCSV(ctx, f, &b, v); err != nil || b.Len() != 0 {
		t.Fatalf("empty array: %q %v", b.String(), err)
	}
	long := strings.Repeat("x,\"y\"\n", 3000)
	v, _, _ = f.ImportBytes(ctx, []byte(`[{"s":`+string(appendJSONString(nil, long))+`,"n":null}]`))
	b.Reset()
	if err := WriteCSV(ctx, f, &b, v); err != nil || b.String() != "n,s\n,\""+strings.ReplaceAll(long, `"`, `""`)+"\"\n" {
		t.Fatalf("long string: %v %.80q", err, b.String())
	}
}

// TestCSVCarriageReturns: a \r\n inside a quoted field is kept (encoding/csv alone turns it into \n), whatever
// the reads' sizes; CRLF line ends, lone \r inside quotes, a \r at the end of the input and escaped quotes around
// them read as before; a 0xff byte is still refused as not UTF-8; a BOM before a quoted header is skipped.
func TestCSVCarriageReturns(t *testing.T) {
	f := revision.New(store.NewMem(), nil)
	cases := []struct{ in, want string }{
		{"a,b\r\n\"x\r\ny\",1\r\n", `[{"a":"x\r\ny","b":"1"}]`},
		{"a,b\n\"x\ry\",\"\"\"q\"\"\r\n\"\n", `[{"a":"x\ry","b":"\"q\"\r\n"}]`},
		{"a\n\"\r\n\r\n\"\n", `[{"a":"\r\n\r\n"}]`},
		{"a\r\nx\r\n", `[{"a":"x"}]`},
		{"\"a\r\nb\"\nx\n", `[{"a\r\nb":"x"}]`},
		{"\uFEFF\"a\",\"b\"\r\n\"1\",\"2\"\r\n", `[{"a":"1","b":"2"}]`},
		{"a\n\"x\r\"", `[{"a":"x\r"}]`},
	}
	for _, c := range cases {
		v, err := importCSV(t, f, c.in, nil)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got := jsonOf(t, f, v); got != c.want {
			t.Errorf("%q: %s, want %s", c.in, got, c.want)
		}
		// One byte at a time: a \r\n split across reads is still kept.
		one, _, err := f.ImportWith(context.Background(), iotest.OneByteReader(NewCSVReader(iotest.OneByteReader(strings.NewReader(c.in)), nil)), &revision.ImportOptions{Lines: true})
		if err != nil || jsonOf(t, f, one) != c.want {
			t.Errorf("%q one byte at a time: %v", c.in, err)
		}
	}
	for _, in := range []string{"a\n\"x\r\xff\ny\"\n", "a\nx\xff\n"} {
		if _, err := importCSV(t, f, in, nil); err == nil || !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("%q: %v, want it refused as not UTF-8", in, err)
		}
	}
}

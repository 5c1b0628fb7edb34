package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-db/strata/internal/workload"
)

// TestImportExportJSONLines: JSON Lines in make an array resource; out, one element per line, as they went in.
func TestImportExportJSONLines(t *testing.T) {
	s := newSession(t, false, nil)
	s.must("", "db", "create", "shop")
	var in strings.Builder
	for i := range 2000 {
		in.Write(workload.AppendElement(nil, i, i%100))
		in.WriteString("\n")
	}
	in.WriteString("\n") // a blank line at the end is fine
	out := s.must(in.String(), "import", "shop", "users", "-", "--format", "jsonl")
	if !strings.Contains(out, "imported users (") || !strings.Contains(out, "of JSON Lines;") {
		t.Fatalf("import said %q", out)
	}
	if got := s.must("", "get", "shop", "users/1999/name"); got != "\"user-1999\"\n" {
		t.Fatalf("element 1999: %q", got)
	}
	// The elements come back in order, one per line, keys in byte order.
	lines := strings.Split(strings.TrimSuffix(s.must("", "export", "shop", "users", "--format", "jsonl"), "\n"), "\n")
	if len(lines) != 2000 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, i := range []int{0, 777, 1999} {
		want := `{"active":true,"email":"user` + strconv.Itoa(i) + `@example.com","id":` + strconv.Itoa(i) +
			`,"name":"user-` + strconv.Itoa(i) + `","score":` + strconv.Itoa(i%100) + `,"tags":["a","b"]}`
		if lines[i] != want {
			t.Fatalf("line %d: %s, want %s", i, lines[i], want)
		}
	}
	// And the array is the same as the JSON document of those elements.
	var doc []map[string]any
	if err := json.Unmarshal([]byte(s.must("", "export", "shop", "users")), &doc); err != nil || len(doc) != 2000 {
		t.Fatalf("export as JSON: %v, %d elements", err, len(doc))
	}
	// A value that is not an array has no JSON Lines form.
	s.must(`{"a":1}`, "import", "shop", "config", "-")
	if _, errOut, code := s.run("", "export", "shop", "config", "--format", "jsonl"); code != exitUsage || !strings.Contains(errOut, "this value is an object") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// TestImportExportCSV: CSV in (typed columns), CSV out, byte for byte when the columns are in key order; the
// same data exported as JSON Lines shows the types.
func TestImportExportCSV(t *testing.T) {
	s := newSession(t, false, nil)
	s.must("", "db", "create", "shop")
	in := "active,id,name,note,price\n" +
		"true,1,tent,\"roomy, for 3\",199.90\n" +
		"false,2,lamp,\"say \"\"hi\"\"\",12\n" +
		",3,\"two\nlines\",,\n"
	file := filepath.Join(t.TempDir(), "products.csv")
	if err := os.WriteFile(file, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	out := s.must("", "import", "shop", "products", file, "--format", "csv", "--csv-types", "price=number,active=boolean", "--csv-types", "id=number")
	if !strings.Contains(out, "of CSV;") {
		t.Fatalf("import said %q", out)
	}
	if got := s.must("", "export", "shop", "products", "--format", "csv"); got != in {
		t.Fatalf("CSV round trip:\n%s\nwant\n%s", got, in)
	}
	want := `{"active":true,"id":1,"name":"tent","note":"roomy, for 3","price":199.90}` + "\n" +
		`{"active":false,"id":2,"name":"lamp","note":"say \"hi\"","price":12}` + "\n" +
		`{"active":null,"id":3,"name":"two\nlines","note":"","price":null}` + "\n"
	if got := s.must("", "export", "shop", "products", "--format", "jsonl"); got != want {
		t.Fatalf("as JSON Lines:\n%s\nwant\n%s", got, want)
	}
	// Untyped, every value is a string.
	s.must(in, "import", "shop", "raw", "-", "--format", "csv")
	if got := s.must("", "get", "shop", "raw/0"); got != `{"active":"true","id":"1","name":"tent","note":"roomy, for 3","price":"199.90"}`+"\n" {
		t.Fatalf("untyped: %s", got)
	}
	// JSON Lines of flat objects export as CSV too.
	s.must("{\"b\":1,\"a\":\"x\"}\n{\"a\":\"y\",\"b\":2.50}\n", "import", "shop", "flat", "-", "--format", "jsonl")
	if got := s.must("", "export", "shop", "flat", "--format", "csv"); got != "a,b\nx,1\ny,2.50\n" {
		t.Fatalf("flat objects as CSV: %q", got)
	}
	// Nested values are refused, naming them.
	s.must("[{\"a\":1,\"tags\":[\"x\"]}]", "import", "shop", "nested", "-")
	if _, errOut, code := s.run("", "export", "shop", "nested", "--format", "csv"); code != exitUsage ||
		!strings.Contains(errOut, `element 0, key "tags": an array cannot be a CSV field`) {
		t.Fatalf("nested: exit %d: %s", code, errOut)
	}
}

// TestImportCSVErrors: a bad field is named by line, column and column name; nothing is written.
func TestImportCSVErrors(t *testing.T) {
	s := newSession(t, false, nil)
	s.must("", "db", "create", "shop")
	before := s.must("", "log", "shop")
	for _, c := range []struct {
		in   string
		args []string
		want string
	}{
		{"name,price\ntent,1\nlamp,12;5\n", []string{"--csv-types", "price=number"}, `invalid CSV at line 3, column 6 ("price"): "12;5" is not a number`},
		{"name,price\ntent,1,2\n", nil, "invalid CSV at line 2, column 1: this record has a different number of fields"},
		{"name,name\n", nil, `columns 1 and 2 have the same name`},
		{"name\nx\n", []string{"--csv-types", "price=number"}, `a type is given for "price", but the header has no such column (its columns: "name")`},
	} {
		_, errOut, code := s.run(c.in, append([]string{"import", "shop", "p", "-", "--format", "csv"}, c.args...)...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, %s\nwant %q", c.in, code, errOut, c.want)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"import", "shop", "p", "-", "--format", "xml"}, `--format must be json, jsonl or csv, not "xml"`},
		{[]string{"import", "shop", "p", "-", "--csv-types", "a=number"}, "--csv-types is for --format csv"},
		{[]string{"import", "shop", "p", "-", "--format", "csv", "--csv-types", "a=money"}, `unknown type "money"`},
		{[]string{"export", "shop", "p", "--format", "jsonl", "--pretty"}, "--pretty is for --format json"},
	} {
		_, errOut, code := s.run("a\n1\n", c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %s\nwant %q", c.args, code, errOut, c.want)
		}
	}
	if after := s.must("", "log", "shop"); after != before {
		t.Fatalf("a refused import made a revision:\n%s", after)
	}
}

// TestImportMalformedWritesNothing: a malformed byte far into a document is reported with its line, column and
// byte offset, and no revision is made: the resource does not exist, the log is as before, and the database checks
// clean.
func TestImportMalformedWritesNothing(t *testing.T) {
	s := newSession(t, false, nil)
	s.must("", "db", "create", "shop")
	doc := workload.JSON(60000) // ~6 MB: the import has stored batches by the time it meets the bad byte
	bad := len(doc) - 500
	for doc[bad] != '{' {
		bad++
	}
	bad++ // where the element's first key should be
	doc[bad] = '#'
	lines := strings.Count(string(doc[:bad]), "\n")
	file := filepath.Join(t.TempDir(), "doc.json")
	if err := os.WriteFile(file, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	before := s.must("", "log", "shop")
	_, errOut, code := s.run("", "import", "shop", "doc", file)
	want := "invalid JSON at line " + strconv.Itoa(lines+1) + ", column " + strconv.Itoa(bad+1) + " (byte " + strconv.Itoa(bad) + ")"
	if code != exitUsage || !strings.Contains(errOut, want) || !strings.Contains(errOut, "expected a string key or '}' but found '#'") {
		t.Fatalf("exit %d: %s\nwant %q", code, errOut, want)
	}
	if after := s.must("", "log", "shop"); after != before {
		t.Fatalf("the failed import made a revision:\n%s", after)
	}
	if _, errOut, code := s.run("", "get", "shop", "doc"); code != exitNotFound {
		t.Fatalf("the resource exists after a failed import: exit %d: %s", code, errOut)
	}
	s.must("", "check", "shop")
	// JSON Lines: the line of the bad value.
	_, errOut, code = s.run("1\n2\n{\"a\":tru}\n", "import", "shop", "doc", "-", "--format", "jsonl")
	if code != exitUsage || !strings.Contains(errOut, `invalid JSON at line 3, column 9 (byte 12) in "/2": invalid literal`) {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

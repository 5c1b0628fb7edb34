package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A UTF-8 BOM before a quoted first header cell (what many tools write) must be skipped, as the doc promises.
func TestCSVBOMQuotedHeader(t *testing.T) {
	s := newSession(t, false, nil)
	s.must("", "db", "create", "shop")
	in := "\uFEFF\"name\",\"price\"\r\n\"tent\",\"1\"\r\n"
	if _, errOut, code := s.run(in, "import", "shop", "p", "-", "--format", "csv"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got := s.must("", "export", "shop", "p"); got != `[{"name":"tent","price":"1"}]`+"\n" {
		t.Fatalf("got %s", got)
	}
}

// export --format csv | import --format csv must keep every row; a one-column row holding "" (or null) is
// written as an empty line, which the reader skips.
func TestCSVRoundTripEmptySingleColumn(t *testing.T) {
	s := newSession(t, false, nil)
	s.must("", "db", "create", "shop")
	s.must(`[{"a":"x"},{"a":""},{"a":"y"}]`, "import", "shop", "p", "-")
	csv := s.must("", "export", "shop", "p", "--format", "csv")
	s.must(csv, "import", "shop", "q", "-", "--format", "csv")
	if got := s.must("", "export", "shop", "q"); got != `[{"a":"x"},{"a":""},{"a":"y"}]`+"\n" {
		t.Fatalf("csv %q round-tripped to %s", csv, got)
	}
}

// A string holding CRLF survives export --format csv | import --format csv.
func TestCSVRoundTripCRLFInField(t *testing.T) {
	s := newSession(t, false, nil)
	s.must("", "db", "create", "shop")
	s.must(`[{"a":"x\r\ny","b":"1"}]`, "import", "shop", "p", "-")
	csv := s.must("", "export", "shop", "p", "--format", "csv")
	s.must(csv, "import", "shop", "q", "-", "--format", "csv")
	if got := s.must("", "export", "shop", "q"); got != `[{"a":"x\r\ny","b":"1"}]`+"\n" {
		t.Fatalf("csv %q round-tripped to %s", csv, got)
	}
}

// An array of empty objects has no CSV form: export must refuse (exit 2), not print blank lines that no
// import can read.
func TestCSVExportEmptyObjects(t *testing.T) {
	s := newSession(t, false, nil)
	s.must("", "db", "create", "shop")
	s.must(`[{},{}]`, "import", "shop", "p", "-")
	out, errOut, code := s.run("", "export", "shop", "p", "--format", "csv")
	if code != exitUsage {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 naming the empty element", code, out, errOut)
	}
}

// db copy DIR DIR/ is the same location: it must say so, not tell the user to drop the (source) database.
func TestDBCopySameDirTrailingSlash(t *testing.T) {
	s := newSession(t, false, nil)
	s.must("", "db", "create", "shop")
	_, errOut, code := s.run("", "db", "copy", s.data, s.data+string(os.PathSeparator))
	if code != exitUsage || !strings.Contains(errOut, "same location") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// db copy --db shop --db shop copies shop once and succeeds.
func TestDBCopyDuplicateDB(t *testing.T) {
	s := newSession(t, false, nil)
	s.must("", "db", "create", "shop")
	dst := filepath.Join(t.TempDir(), "dst")
	if out, errOut, code := s.run("", "db", "copy", s.data, dst, "--db", "shop", "--db", "shop"); code != 0 {
		t.Fatalf("exit %d: stdout %q stderr %q", code, out, errOut)
	}
}

// CSV with bare-CR line ends (Excel's "CSV (Macintosh)") must not import "successfully" as an empty array.
func TestCSVBareCRLineEnds(t *testing.T) {
	s := newSession(t, false, nil)
	s.must("", "db", "create", "shop")
	out, errOut, code := s.run("name,price\rtent,1\rlamp,2\r", "import", "shop", "p", "-", "--format", "csv")
	if code == 0 {
		got := s.must("", "export", "shop", "p")
		if got != `[{"name":"tent","price":"1"},{"name":"lamp","price":"2"}]`+"\n" {
			t.Fatalf("import said %q and stored %s", out, got)
		}
		return
	}
	if code != exitUsage {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// TestExportContradictoryFlags: --json beside --pretty or another --format was silently ignored; a space after a
// comma in --csv-types gets a hint.
func TestExportContradictoryFlags(t *testing.T) {
	s := newSession(t, false, nil)
	s.must("", "db", "create", "shop")
	s.must(`[{"a":"x"}]`, "import", "shop", "p", "-")
	for _, args := range [][]string{{"--json", "--pretty"}, {"--json", "--format", "csv"}, {"--json", "--format", "jsonl"}} {
		if _, errOut, code := s.run("", append([]string{"export", "shop", "p"}, args...)...); code != exitUsage || !strings.Contains(errOut, "give one") {
			t.Errorf("export %v: exit %d: %s", args, code, errOut)
		}
	}
	if out := s.must("", "export", "shop", "p", "--json"); out != `[{"a":"x"}]`+"\n" {
		t.Errorf("export --json: %q", out)
	}
	_, errOut, code := s.run("a,name\n1,x\n", "import", "shop", "q", "-", "--format", "csv", "--csv-types", "a=number, name=string")
	if code != exitUsage || !strings.Contains(errOut, "a space after a comma") {
		t.Errorf("--csv-types with a space: exit %d: %s", code, errOut)
	}
}

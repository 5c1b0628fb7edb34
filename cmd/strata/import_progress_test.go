package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// importFile writes a JSON document of about n bytes to a file in dir.
func importFile(t *testing.T, dir string, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"name":"item","note":"` + strings.Repeat("x", 40) + `"}`)
	}
	b.WriteString("]}")
	p := filepath.Join(dir, "doc.json")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var importTookRE = regexp.MustCompile(`in [0-9.]+[µmn]?s`)

// TestImportProgress: on a terminal, importing a file shows a progress bar on stderr, then clears it; the import
// itself, and what it prints on stdout, are as without one.
func TestImportProgress(t *testing.T) {
	term := newSession(t, true, nil)
	file := importFile(t, t.TempDir(), 2_500_000)
	term.must("", "db", "create", "shop")
	out, errOut, code := term.run("", "import", "shop", "doc", file)
	if code != 0 {
		t.Fatalf("import on a terminal: exit %d: %s", code, errOut)
	}
	t.Logf("stderr: %q", errOut)
	for _, w := range []string{"reading " + file, "0%", "|"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("the progress bar lacks %q: %q", w, errOut)
		}
	}
	if !strings.HasSuffix(errOut, "\r") {
		t.Errorf("the progress bar is not cleared at the end: %q", errOut)
	}
	if got := term.must("", "query", "shop", "doc", ".items | length"); got == "0\n" {
		t.Errorf("the import stored %s items", got)
	}

	pipe := newSession(t, false, nil)
	pipe.must("", "db", "create", "shop")
	pout, perr, code := pipe.run("", "import", "shop", "doc", file)
	if code != 0 || perr != "" {
		t.Fatalf("import to a pipe: exit %d, stderr %q", code, perr)
	}
	if a, b := importTookRE.ReplaceAllString(out, "in T"), importTookRE.ReplaceAllString(pout, "in T"); a != b {
		t.Errorf("stdout differs with and without a terminal:\n%s\n%s", a, b)
	}
}

// TestImportNoProgress: no bar when stderr is not a terminal, nor when the input is piped (its size is unknown).
func TestImportNoProgress(t *testing.T) {
	file := importFile(t, t.TempDir(), 100_000)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pipe := newSession(t, false, nil)
	pipe.must("", "db", "create", "shop")
	if _, errOut, code := pipe.run("", "import", "shop", "doc", file); code != 0 || errOut != "" {
		t.Errorf("import with stderr not a terminal: exit %d, stderr %q", code, errOut)
	}
	term := newSession(t, true, nil)
	term.must("", "db", "create", "shop")
	if _, errOut, code := term.run(string(data), "import", "shop", "doc", "-"); code != 0 || errOut != "" {
		t.Errorf("import from a pipe on a terminal: exit %d, stderr %q", code, errOut)
	}
	if got := term.must("", "get", "shop", "doc/items/0/name"); got != "\"item\"\n" {
		t.Errorf("the piped import stored %q", got)
	}
}

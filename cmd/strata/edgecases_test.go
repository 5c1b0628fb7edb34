package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Edge cases found by trying Strata on real data, through the command line: the nesting limit is exactly the
// documented one and too deep is invalid input (exit 2), a time before the branch existed is not found (year 1
// too), and a write that changes nothing says so in --json.

func TestCLINestingLimit(t *testing.T) {
	data, work := t.TempDir(), t.TempDir()
	if code, _, errOut := runCLI(t, "--data", data, "db", "create", "shop"); code != exitOK {
		t.Fatal(errOut)
	}
	for _, n := range []int{512, 513} {
		f := filepath.Join(work, "deep.json")
		if err := os.WriteFile(f, []byte(strings.Repeat("[", n)+strings.Repeat("]", n)), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runCLI(t, "--data", data, "import", "shop", "deep", f)
		switch {
		case n == 512 && code != exitOK:
			t.Errorf("512 levels: exit %d: %s", code, errOut)
		case n == 513 && (code != exitUsage || !strings.Contains(errOut, "nesting deeper than 512 levels") || strings.Contains(errOut, "levels down") || len(errOut) > 400):
			t.Errorf("513 levels: exit %d, want %d: %s", code, exitUsage, errOut)
		}
	}
}

func TestCLITimeBeforeTheBranch(t *testing.T) {
	data := t.TempDir()
	runCLI(t, "--data", data, "db", "create", "shop")
	for _, at := range []string{"main@0001-01-01T00:00:00Z", "main@2000-01-01T00:00:00Z"} {
		if code, out, errOut := runCLI(t, "--data", data, "log", "shop", "--branch", "main"); code != exitOK {
			t.Fatal(out, errOut)
		}
		if code, _, errOut := runCLI(t, "--data", data, "diff", "shop", at, "main"); code != exitNotFound || !strings.Contains(errOut, "did not exist yet") {
			t.Errorf("diff from %s: exit %d, want %d: %s", at, code, exitNotFound, errOut)
		}
	}
}

func TestCLIUnchangedWrite(t *testing.T) {
	data, work := t.TempDir(), t.TempDir()
	runCLI(t, "--data", data, "db", "create", "shop")
	f := filepath.Join(work, "doc.json")
	if err := os.WriteFile(f, []byte(`{"a":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var first, again map[string]any
	for _, into := range []*map[string]any{&first, &again} {
		code, out, errOut := runCLI(t, "--data", data, "import", "shop", "doc", f, "--json")
		if code != exitOK {
			t.Fatal(errOut)
		}
		if err := json.Unmarshal([]byte(out), into); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	if first["unchanged"] != nil || again["unchanged"] != true || again["revision"] != first["revision"] {
		t.Errorf("import of the same document twice: %v then %v", first, again)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckAndGC(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	s.must("", "branch", "shop", "scratch")
	s.must(`{"scratch":[`+strings.Repeat(`"some padding text for a node",`, 400)+`0]}`, "import", "shop", "tmp", "-", "--branch", "scratch")
	s.must("", "branch", "shop", "-d", "scratch")
	s.must(`{"a":3}`, "import", "shop", "doc", "-") // the newest revision is always kept: make one on main
	out := s.must("", "check", "shop")
	if !strings.Contains(out, "checked shop: 5 revisions, 1 branches, 1 snapshots") || !strings.HasSuffix(out, "ok\n") {
		t.Fatalf("check: %q", out)
	}
	// Inside the grace period nothing goes; with a tiny grace the deleted branch's revision does.
	if out := s.must("", "gc", "shop"); !strings.Contains(out, "removed 0 revisions and 0 nodes") {
		t.Fatalf("gc within grace: %q", out)
	}
	out = s.must("", "gc", "shop", "--grace", "1ns", "--json")
	if !strings.Contains(out, `"removed_revisions": 1`) {
		t.Fatalf("gc: %q", out)
	}
	if out := s.must("", "check", "shop"); !strings.HasSuffix(out, "ok\n") {
		t.Fatalf("check after gc: %q", out)
	}
	// A damaged file is refused with a clear error and a failure exit code.
	path := filepath.Join(s.data, "shop.strata")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data[:3*4096], 0o600); err != nil { // below the pages in use
		t.Fatal(err)
	}
	_, errOut, code := s.run("", "check", "shop")
	if code == 0 || !strings.Contains(errOut, "truncated") {
		t.Fatalf("check of a truncated file: exit %d, %s", code, errOut)
	}
}

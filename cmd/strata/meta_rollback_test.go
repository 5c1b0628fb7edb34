package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDamagedMetaPageRollBack: the newest bbolt meta page of a database is damaged (what a crash while a commit's
// meta page was being written leaves; the one before is intact). strata check refuses the file and names the
// command that mends it, which a CLI user can run (it named a Go option, found in review); with
// --allow-meta-rollback the file is rolled back to the intact page's transaction and opens normally from then on.
func TestDamagedMetaPageRollBack(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	if out, _, code := s.run("", "check", "shop", "--allow-meta-rollback"); code != 0 || !strings.Contains(out, "ok") {
		t.Fatalf("rollback of an intact file: exit %d, %s", code, out)
	}
	path := filepath.Join(s.data, "shop.strata")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ne := binary.NativeEndian
	ps := int(ne.Uint32(data[16+8:]))
	page := 0
	if ne.Uint64(data[ps+16+48:]) > ne.Uint64(data[16+48:]) {
		page = 1 // the newer transaction
	}
	data[page*ps+16+56] ^= 0x01 // its checksum
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := s.run("", "check", "shop")
	if code == 0 || !strings.Contains(errOut, "meta page") || !strings.Contains(errOut, "strata check shop --allow-meta-rollback") ||
		strings.Contains(errOut, "BoltOptions") {
		t.Fatalf("check of a file with a damaged meta page: exit %d, %s", code, errOut)
	}
	out, errOut, code := s.run("", "check", "shop", "--allow-meta-rollback")
	if code != 0 || !strings.Contains(errOut, "rolled shop back to bbolt transaction") || !strings.Contains(out, "ok") {
		t.Fatalf("check --allow-meta-rollback: exit %d, stdout %s, stderr %s", code, out, errOut)
	}
	// The file opens normally again, holding what the intact meta page did.
	s.must("", "check", "shop")
	if got := s.must("", "get", "shop", "doc"); !strings.Contains(got, `"a"`) {
		t.Fatalf("get after the rollback: %s", got)
	}
	s.must(`{"a":3}`, "import", "shop", "doc", "-")
}

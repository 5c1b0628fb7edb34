//go:build unix

package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-db/strata/audit"
	"github.com/strata-db/strata/snapshots"
)

// TestSymlinksRefused: links in the data directory are refused, never followed (issue 15, item 8): a database file
// that links to a file elsewhere is not read, a dangling link does not make `db create` (or an agent's
// create_database) write its target, and an audit log that is a link stops writes instead of appending elsewhere.
// The agent is not told the server's paths.
func TestSymlinksRefused(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	outside := t.TempDir()

	// A real database, moved out of the directory and linked back in.
	s.must("", "db", "create", "moved")
	real := filepath.Join(outside, "moved"+snapshots.Ext)
	if err := os.Rename(filepath.Join(s.data, "moved"+snapshots.Ext), real); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(s.data, "moved"+snapshots.Ext+"-wait"))
	if err := os.Symlink(real, filepath.Join(s.data, "moved"+snapshots.Ext)); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := s.run("", "get", "shop", "doc"); code != 0 {
		t.Fatalf("the other database: exit %d: %s", code, errOut)
	}
	for _, args := range [][]string{{"log", "moved"}, {"import", "moved", "doc", "-"}, {"check", "moved"}} {
		if _, errOut, code := s.run(`{"a":1}`, args...); code == 0 || !strings.Contains(errOut, "is a symbolic link") {
			t.Errorf("strata %s on a linked database: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
	}
	if out := s.must("", "db", "list"); strings.Contains(out, "moved") {
		t.Errorf("db list shows the link:\n%s", out)
	}

	// A dangling link where a new database would go.
	target := filepath.Join(outside, "made-by-the-link")
	if err := os.Symlink(target, filepath.Join(s.data, "evil"+snapshots.Ext)); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := s.run("", "db", "create", "evil"); code == 0 || !strings.Contains(errOut, "is a symbolic link") {
		t.Errorf("db create over a dangling link: exit %d: %s", code, errOut)
	}
	a := startAgent(t, s, "--writes", "on")
	text, _, isErr := a.call("create_database", `{"name":"evil"}`)
	if !isErr || strings.Contains(text, s.data) || strings.Contains(text, outside) {
		t.Errorf("create_database over a dangling link: %s", text)
	}
	text, _, isErr = a.call("read", `{"database":"moved","resource":"doc"}`)
	if !isErr || strings.Contains(text, s.data) || strings.Contains(text, outside) {
		t.Errorf("read of a linked database: %s", text)
	}
	a.stop()
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dangling link's target was created: %v", err)
	}

	// The audit log replaced by a link to a file elsewhere: writes stop, nothing is appended there.
	log := audit.PathIn(s.data)
	elsewhere := filepath.Join(outside, "elsewhere.jsonl")
	if err := os.WriteFile(elsewhere, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(log, filepath.Join(outside, "audit-moved.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, log); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := s.run(`{"a":9}`, "import", "shop", "doc", "-"); code == 0 || !strings.Contains(errOut, "is a symbolic link") {
		t.Errorf("a write with the audit log linked away: exit %d: %s", code, errOut)
	}
	if b, _ := os.ReadFile(elsewhere); len(b) != 0 {
		t.Errorf("a record was appended through the link: %q", b)
	}
	if got := s.must("", "get", "shop", "doc/a"); got != "2\n" {
		t.Errorf("the write happened anyway: doc/a = %s", got)
	}
}

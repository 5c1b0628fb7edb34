package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

// session runs command lines, in order, in a fresh data directory, with stdout taken for a terminal or not.
type session struct {
	t    *testing.T
	e    *environment
	data string
}

func newSession(t *testing.T, terminal bool, env map[string]string) *session {
	clock := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	e := &environment{
		getenv: func(k string) string { return env[k] },
		user:   func() string { return "ada" },
		now: func() time.Time {
			clock = clock.Add(time.Minute)
			return clock
		},
		loc:      time.UTC,
		terminal: func(io.Writer) bool { return terminal },
	}
	return &session{t: t, e: e, data: t.TempDir()}
}

func (s *session) run(stdin string, args ...string) (string, string, int) {
	s.t.Helper()
	var out, errOut bytes.Buffer
	code := runIn(s.e, append([]string{"--data", s.data}, args...), strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), code
}

func (s *session) must(stdin string, args ...string) string {
	s.t.Helper()
	out, errOut, code := s.run(stdin, args...)
	if code != 0 {
		s.t.Fatalf("strata %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

func (s *session) setup() {
	s.must("", "db", "create", "shop")
	s.must(`{"a":1,"b":[1,2],"c":"x"}`, "import", "shop", "doc", "-")
	s.must("", "snapshot", "shop", "v1")
	s.must(`{"a":2,"b":[1,2],"d":true}`, "import", "shop", "doc", "-")
}

func TestDiffColoursOnTerminal(t *testing.T) {
	s := newSession(t, true, nil)
	s.setup()
	out := s.must("", "diff", "shop", "v1", "main")
	for _, want := range []string{
		ansiYellow + "~ /doc/a  1 → 2" + ansiReset,
		ansiRed + `- /doc/c  "x"` + ansiReset,
		ansiGreen + "+ /doc/d  true" + ansiReset,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diff on a terminal lacks %q:\n%q", want, out)
		}
	}
	// --json is never coloured.
	if out := s.must("", "diff", "shop", "v1", "main", "--json"); strings.Contains(out, "\x1b[") {
		t.Errorf("diff --json has colour codes:\n%s", out)
	}
}

func TestNoColour(t *testing.T) {
	for name, env := range map[string]map[string]string{"NO_COLOR": {"NO_COLOR": "1"}, "TERM=dumb": {"TERM": "dumb"}} {
		s := newSession(t, true, env)
		s.setup()
		if out := s.must("", "diff", "shop", "v1", "main"); strings.Contains(out, "\x1b[") {
			t.Errorf("%s: diff has colour codes:\n%q", name, out)
		}
	}
	s := newSession(t, false, nil)
	s.setup()
	if out := s.must("", "diff", "shop", "v1", "main"); strings.Contains(out, "\x1b[") {
		t.Errorf("diff to a pipe has colour codes:\n%q", out)
	}
}

func TestGetPrettyOnTerminal(t *testing.T) {
	s := newSession(t, true, nil)
	s.setup()
	if got, want := s.must("", "get", "shop", "doc/b"), "[\n  1,\n  2\n]\n"; got != want {
		t.Errorf("get on a terminal = %q, want %q", got, want)
	}
	if got, want := s.must("", "get", "shop", "doc/b", "--json"), `{"revision":3,"branch":"main","resource":"doc","path":"/b","value":[1,2],"truncated":false,"count":2}`+"\n"; got != want {
		t.Errorf("get --json on a terminal = %q, want %q", got, want)
	}
	p := newSession(t, false, nil)
	p.setup()
	if got, want := p.must("", "get", "shop", "doc/b"), "[1,2]\n"; got != want {
		t.Errorf("get to a pipe = %q, want %q", got, want)
	}
}

// A time copied from the log, to the second, names the revision shown there, though revisions keep microseconds.
func TestAtWholeSecond(t *testing.T) {
	s := newSession(t, false, nil)
	at := time.Date(2026, 3, 14, 9, 0, 0, 100_000_000, time.UTC)
	s.e.now = func() time.Time { return at }
	s.must("", "db", "create", "shop")
	at = at.Add(600 * time.Millisecond)
	s.must(`1`, "import", "shop", "n", "-")
	log := s.must("", "log", "shop", "n")
	if !strings.Contains(log, "2026-03-14T09:00:00Z") {
		t.Fatalf("log: %s", log)
	}
	if got := s.must("", "get", "shop", "n", "--at", "main@2026-03-14T09:00:00Z"); got != "1\n" {
		t.Errorf("get --at the second shown in the log = %q, want 1", got)
	}
	_, errOut, code := s.run("", "get", "shop", "n", "--at", "main@2026-03-14T09:00:00.5Z")
	if code != exitNotFound || !strings.Contains(errOut, `resource "n" not found`) {
		t.Errorf("get --at half a second before the import: exit %d, %s", code, errOut)
	}
	_, errOut, code = s.run("", "get", "shop", "n", "--at", "main@2026-03-14T08:00:00Z")
	if code != exitNotFound || !strings.Contains(errOut, `revision "main@2026-03-14T08:00:00Z" not found`) {
		t.Errorf("get --at before the database: exit %d, %s", code, errOut)
	}
}

func TestPromoteConflict(t *testing.T) {
	s := newSession(t, false, nil)
	s.must("", "db", "create", "shop")
	s.must(`{"a":1}`, "import", "shop", "doc", "-")
	s.must("", "branch", "shop", "try")
	s.must(`{"a":2}`, "import", "shop", "doc", "-", "--branch", "try")
	s.must(`{"a":3}`, "import", "shop", "doc", "-")
	out, errOut, code := s.run("", "promote", "shop", "try")
	if code != exitConflict || out != "" || !strings.Contains(errOut, "conflict: /doc/a") || !strings.Contains(errOut, "nothing was written") {
		t.Errorf("promote with a conflict: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, _, code = s.run("", "promote", "shop", "try", "--json")
	if code != exitConflict || !strings.Contains(out, `"path": "/doc/a"`) {
		t.Errorf("promote --json with a conflict: exit %d, stdout %q", code, out)
	}
	if got := s.must("", "get", "shop", "doc/a"); got != "3\n" {
		t.Errorf("after a refused promote, main has %q", got)
	}
}

func TestWritesRecordAuthorAndTool(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	s.must("", "revert", "shop", "v1")
	s.must("", "restore", "shop", "doc/a", "--from", "3") // a = 2 there, 1 after the revert
	out := s.must("", "log", "shop", "--json")
	for _, want := range []string{`"tool": "cli import"`, `"tool": "cli revert"`, `"tool": "cli restore"`, `"author": "ada"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log --json lacks %s:\n%s", want, out)
		}
	}
}

func TestMissingDataDirectory(t *testing.T) {
	s := newSession(t, false, nil)
	s.data += "/nothing-here"
	_, errOut, code := s.run("", "get", "shop", "doc")
	if code != exitNotFound || !strings.Contains(errOut, "data directory") || !strings.Contains(errOut, "strata db create NAME") {
		t.Errorf("get without a data directory: exit %d, %s", code, errOut)
	}
	if out := s.must("", "db", "list"); !strings.Contains(out, "no databases") {
		t.Errorf("db list without a data directory: %q", out)
	}
	if out := s.must("", "db", "list", "--json"); !strings.Contains(out, `"databases": []`) {
		t.Errorf("db list --json without a data directory: %q", out)
	}
}

// TestExpectedHeadHint: a stale --expected-head says what to run, with the database named, not "DB".
func TestExpectedHeadHint(t *testing.T) {
	s := newSession(t, false, nil)
	s.must("", "db", "create", "shop")
	s.must(`{"a":1}`, "import", "shop", "doc", "-")
	s.must(`{"a":2}`, "import", "shop", "doc", "-")
	_, errOut, code := s.run(`{"a":3}`, "import", "shop", "doc", "-", "--expected-head", "2")
	if code != exitConflict || !strings.Contains(errOut, "strata log shop --branch main") || !strings.Contains(errOut, "--expected-head 3") {
		t.Errorf("import with a stale --expected-head: exit %d, %q", code, errOut)
	}
}

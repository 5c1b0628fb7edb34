package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/strata-db/strata/internal/pgtest"
)

// TestCLIScriptPostgres plays the command-line session of testdata/cli.txt with its databases in PostgreSQL
// (STRATA_DATA a postgres:// URL): every command answers as it does on a data directory.
func TestCLIScriptPostgres(t *testing.T) { playScript(t, pgtest.URL(t)) }

// pgSession is a session whose data location is a new PostgreSQL schema, reached with a password in the URL (the
// test server trusts loopback, so any password works; none may ever be shown).
func pgSession(t *testing.T) (*session, string) {
	s := newSession(t, false, nil)
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	const secret = "pg-Secret-771"
	u.User = url.UserPassword(u.User.Username(), secret)
	s.data = u.String()
	return s, secret
}

// TestPostgresLocationMessages: a URL is never taken for a directory; a wrong or unreachable one is a clear error
// naming the host and the database, never the password; a working one is shown without its password.
func TestPostgresLocationMessages(t *testing.T) {
	t.Chdir(t.TempDir())
	const secret = "s3cret-Pa55word"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	base, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	missing := *base
	missing.User = url.UserPassword(base.User.Username(), secret)
	missing.Path = "/no_such_database"
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"unreachable", []string{"--data", "postgres://alice:" + secret + "@" + closed + "/inventory?connect_timeout=3", "db", "list"},
			exitFailure, []string{closed, "inventory", "unavailable", "check that the server is running"}},
		{"unreachable server", []string{"--data", "postgresql://alice:" + secret + "@" + closed + "/inventory?connect_timeout=3", "serve", "--listen", "127.0.0.1:0"},
			exitFailure, []string{closed, "inventory"}},
		{"missing database", []string{"--data", missing.String(), "db", "create", "shop"},
			exitFailure, []string{"no_such_database", "createdb no_such_database"}},
		{"another scheme", []string{"--data", "s3://bucket/strata", "db", "create", "shop"},
			exitUsage, []string{"s3://", "postgres://USER@HOST:PORT/DATABASE"}},
		{"a URL on the environment", []string{"mcp"}, exitUsage, []string{"mysql://"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newSession(t, false, map[string]string{"STRATA_DATA": "mysql://root:" + secret + "@localhost/strata"}).e
			var out, errOut strings.Builder
			code := runIn(e, tc.args, strings.NewReader(""), &out, &errOut)
			msg := out.String() + errOut.String()
			t.Logf("exit %d: %s", code, msg)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("the message lacks %q", w)
				}
			}
			if strings.Contains(msg, secret) {
				t.Errorf("the message shows the password")
			}
		})
	}
	// Nothing was taken for a directory: the working directory is still empty.
	if ents, _ := os.ReadDir("."); len(ents) != 0 {
		t.Fatalf("a URL made %v in the working directory", ents)
	}

	// A working URL with a password: shown everywhere without it.
	s, pw := pgSession(t)
	for _, args := range [][]string{{"db", "create", "shop"}, {"db", "list", "--json"}, {"db", "list"}, {"audit", "--verify"}} {
		out, errOut, code := s.run("", args...)
		if code != 0 || strings.Contains(out+errOut, pw) || args[0] == "db" && args[1] != "list" && !strings.Contains(out, "127.0.0.1") {
			t.Fatalf("strata %s: exit %d, %q %q: want the location without its password", strings.Join(args, " "), code, out, errOut)
		}
	}
}

// TestPostgresMCPAndAudit: strata mcp over stdio on a PostgreSQL location, then strata demo there; every call lands
// in the location's audit table, which strata audit lists and verifies.
func TestPostgresMCPAndAudit(t *testing.T) {
	s, _ := pgSession(t)
	s.setup()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, stop := s.stdioMCP(t, ctx, "pg-test", "--writes", "branches")
	call := func(name, args string) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		return res.Content[0].(*mcpsdk.TextContent).Text
	}
	if text := call("read", `{"database":"shop","resource":"doc","path":"/a"}`); !strings.Contains(text, "2") {
		t.Fatalf("read: %s", text)
	}
	call("create_branch", `{"database":"shop","name":"agent-work"}`)
	call("update", `{"database":"shop","resource":"doc","path":"/a","value":7,"branch":"agent-work"}`)
	if stderr := stop(); !strings.Contains(stderr, "serving postgres://") || strings.Contains(stderr, "pg-Secret") {
		t.Errorf("strata mcp's banner: %q", stderr)
	}
	if got := s.must("", "get", "shop", "doc/a", "--at", "agent-work"); got != "7\n" {
		t.Fatalf("the agent's write: %q", got)
	}
	var rec struct {
		Principal, Transport, Client, Tool, Database, Outcome string
		Revision                                              uint64
	}
	if err := json.Unmarshal([]byte(s.must("", "audit", "--tool", "update", "--json")), &rec); err != nil ||
		rec.Principal != "ada" || rec.Transport != "stdio" || rec.Client != "pg-test/1" || rec.Outcome != "ok" || rec.Revision == 0 {
		t.Fatalf("the update's audit record: %+v %v", rec, err)
	}

	s.e.now = nil // the demo's plans must not expire on the session's fast clock
	out := s.must("", "demo")
	if !strings.Contains(out, "stays in postgres://") {
		t.Fatalf("strata demo on PostgreSQL:\n%s", out)
	}
	verified := s.must("", "audit", "--verify")
	var n int
	if _, err := fmt.Sscanf(verified, "audit log verified: %d records", &n); err != nil || n < 10 {
		t.Fatalf("strata audit --verify: %q", verified)
	}
	if demo := s.must("", "audit", "--db", "demo", "--format", "csv"); strings.Count(demo, "\n") < 5 {
		t.Fatalf("the demo's calls are not in the audit table:\n%s", demo)
	}
}

// TestPostgresDBCopy copies a data directory's database to PostgreSQL and back to another directory with strata db
// copy: strata log (every branch), reads at a snapshot and in the past, and strata check read the same in all three;
// a second copy onto the taken name copies nothing.
func TestPostgresDBCopy(t *testing.T) {
	dir := newSession(t, false, nil)
	dir.setup()
	dir.must("", "branch", "shop", "try")
	dir.must(`{"a":3}`, "import", "shop", "doc", "-", "--branch", "try", "-m", "on try")
	dir.must("", "branch", "shop", "gone")
	dir.must(`{"g":1}`, "import", "shop", "doc", "-", "--branch", "gone")
	dir.must("", "branch", "shop", "gone", "-d")
	dir.must(`[1,2,3]`, "import", "shop", "list", "-")
	// Revision 5, gone's, is garbage now: the copies keep the gap in the numbers.
	if out := dir.must("", "gc", "shop", "--grace", "1ns"); !strings.Contains(out, "removed 1 revisions") {
		t.Fatalf("gc: %s", out)
	}
	dir.must("", "db", "create", "users")
	dir.must(`{"n":1}`, "import", "users", "u1", "-")

	pg, pw := pgSession(t)
	out := dir.must("", "db", "copy", dir.data, pg.data)
	if !strings.Contains(out, "copied shop from "+dir.data) || !strings.Contains(out, "copied users") || strings.Contains(out, pw) {
		t.Fatalf("strata db copy DIR URL:\n%s", out)
	}
	back := newSession(t, false, nil)
	back.data = filepath.Join(t.TempDir(), "restored")
	if out := dir.must("", "db", "copy", pg.data, back.data, "--db", "shop", "--json"); !strings.Contains(out, `"last_revision": 6`) {
		t.Fatalf("strata db copy URL DIR --db shop --json:\n%s", out)
	}
	var log struct{ Revisions []revisionJSON }
	if err := json.Unmarshal([]byte(dir.must("", "log", "shop", "--json")), &log); err != nil {
		t.Fatal(err)
	}
	revs := log.Revisions
	at := "main@" + revs[len(revs)-2].Time.Format(time.RFC3339Nano) // main as of its first import
	for _, args := range [][]string{
		{"log", "shop", "--json"}, {"log", "shop", "--branch", "try", "--json"}, {"log", "shop"},
		{"branch", "shop", "--json"}, {"snapshot", "shop", "--json"},
		{"get", "shop", "doc", "--at", "v1"}, {"get", "shop", "doc", "--at", at}, {"get", "shop", "doc", "--at", "try"},
		{"diff", "shop", "v1", "try", "--json"},
	} {
		want := dir.must("", args...)
		for _, s := range []*session{pg, back} {
			if got := s.must("", args...); got != want {
				t.Errorf("strata %s differs in %s:\n%s\nthe original:\n%s", strings.Join(args, " "), locationText(s.data), got, want)
			}
		}
	}
	for _, s := range []*session{dir, pg, back} {
		if out := s.must("", "check", "shop"); !strings.HasSuffix(out, "ok\n") {
			t.Errorf("strata check in %s:\n%s", locationText(s.data), out)
		}
	}
	var rep struct{ Revisions, Nodes, NodeBytes int }
	check := func(s *session) string {
		out := s.must("", "check", "shop", "--json")
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(rep)
	}
	if a, b, c := check(dir), check(pg), check(back); a != b || a != c {
		t.Errorf("check reports: directory %s, PostgreSQL %s, restored %s", a, b, c)
	}
	if got := back.must("", "db", "list"); strings.Contains(got, "users") {
		t.Errorf("--db shop copied users too:\n%s", got)
	}
	// Onto a taken name: refused, exit 4, nothing copied (users, not taken, is not copied either).
	again := newSession(t, false, nil)
	again.data = back.data
	_, errOut, code := dir.run("", "db", "copy", dir.data, back.data)
	if code != exitConflict || !strings.Contains(errOut, "shop exists in") || !strings.Contains(errOut, "nothing was copied") {
		t.Fatalf("a copy onto a taken name: exit %d: %s", code, errOut)
	}
	if got := again.must("", "db", "list"); strings.Contains(got, "users") {
		t.Fatalf("a refused copy copied users:\n%s", got)
	}
	// Both locations' audit logs record the copy.
	for _, s := range []*session{dir, pg} {
		if got := s.must("", "audit", "--tool", "cli db copy", "--db", "shop", "--json"); !strings.Contains(got, `"outcome":"ok"`) || strings.Contains(got, pw) {
			t.Errorf("the copy in the audit log of %s: %s", locationText(s.data), got)
		}
	}
}

// TestPostgresAuditKeyCLI: --audit-key keys the audit table as it keys the file: the CLI's writes carry the key's
// id, strata audit --verify checks the chain with it, and says it needs it without.
func TestPostgresAuditKeyCLI(t *testing.T) {
	s, _ := pgSession(t)
	key := auditKeyFile(t, "pg-cli-test-key-0123456789abcdef")
	s.must("", "--audit-key", key, "db", "create", "shop")
	s.must(`{"a":1}`, "--audit-key", key, "import", "shop", "doc", "-")
	if out := s.must("", "--audit-key", key, "audit", "--verify"); !strings.HasPrefix(out, "audit log verified: 2 records, chain intact, keyed (key id ") {
		t.Fatalf("--verify with the key: %q", out)
	}
	if _, errOut, code := s.run("", "audit", "--verify"); code == exitOK || !strings.Contains(errOut, "pass --audit-key FILE") {
		t.Fatalf("--verify without the key: exit %d: %s", code, errOut)
	}
	if _, errOut, code := s.run(`{"a":2}`, "import", "shop", "doc", "-"); code == exitOK || !strings.Contains(errOut, "key") {
		t.Fatalf("a write without the key: exit %d: %s", code, errOut)
	}
	if out := s.must("", "--audit-key", key, "audit", "--format", "csv"); strings.Count(out, "\n") != 3 {
		t.Fatalf("audit --format csv on the table:\n%s", out)
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// db drop cannot remove a database whose file is damaged, though the error for it says to delete it.
func TestDropDamagedDatabase(t *testing.T) {
	s := newSession(t, false, nil)
	s.must("", "db", "create", "shop")
	bad := filepath.Join(s.data, "broken.strata")
	if err := os.WriteFile(bad, nil, 0o600); err != nil { // a truncated file, as after a crash during create
		t.Fatal(err)
	}
	_, errOut, code := s.run("", "db", "drop", "broken", "--yes")
	if code != exitOK {
		t.Errorf("db drop broken --yes: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(bad); err == nil {
		t.Errorf("db drop --yes left %s in place", bad)
	}
}

// One damaged database file makes db list fail for every database.
func TestListWithDamagedDatabase(t *testing.T) {
	s := newSession(t, false, nil)
	s.must("", "db", "create", "shop")
	os.WriteFile(filepath.Join(s.data, "broken.strata"), []byte(strings.Repeat("garbage!", 1000)), 0o600)
	out, errOut, code := s.run("", "db", "list")
	if !strings.Contains(out, "shop") {
		t.Errorf("db list: exit %d, stdout %q, stderr %q: the healthy database is not listed", code, out, errOut)
	}
	out, errOut, code = s.run("", "db", "list", "--json")
	if !strings.Contains(out, `"shop"`) {
		t.Errorf("db list --json: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// strata demo, when the audit log cannot be opened (keyed, no --audit-key), fails only after it has
// created (or dropped and re-created) the demo database and imported the catalogue.
func TestDemoFailsAfterWriting(t *testing.T) {
	s := newDemoSession(t)
	key := auditKeyFile(t, "0123456789abcdef0123456789")
	s.must("", "--audit-key", key, "db", "create", "shop") // the log is keyed from here on
	_, errOut, code := s.run("", "demo")
	if code == exitOK {
		t.Fatalf("demo without the audit key succeeded")
	}
	if out := s.must("", "db", "list"); strings.Contains(out, "demo") {
		t.Errorf("demo failed (exit %d: %s) but left a database behind:\n%s", code, errOut, out)
	}
}

// The demo's operator writes (dropping an earlier demo, creating the database, importing the catalogue) are
// not in the audit log, though every CLI write is to be one record of it (docs/design.md §5).
func TestDemoOperatorWritesAudited(t *testing.T) {
	s := newDemoSession(t)
	s.must("", "demo")
	s.must("", "demo") // drops the first demo's database: its whole history
	out := s.must("", "audit", "--json")
	var ops int
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct{ Principal, Tool string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.Principal != "demo-agent" {
			ops++
		}
	}
	if ops == 0 {
		t.Errorf("two demos (create, import, drop, create, import) left no operator record in the audit log")
	}
}

// plans --json lacks the decision time (and whether the preview is complete) that the text shows.
func TestPlanJSONDecided(t *testing.T) {
	s := newSession(t, false, nil)
	clock := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	s.e.now = func() time.Time { clock = clock.Add(time.Second); return clock }
	s.setup()
	a := startAgent(t, s, "--writes", "branches")
	a.ok("create_branch", `{"database":"shop","name":"agent/x"}`)
	a.ok("delete", `{"database":"shop","resource":"doc","path":"/d","branch":"agent/x"}`)
	id := a.ok("promote", `{"database":"shop","branch":"agent/x"}`)["plan_id"].(string)
	a.stop()
	s.must("", "reject", "shop", id, "--reason", "no")
	text := s.must("", "plans", "shop", id)
	var p map[string]any
	if err := json.Unmarshal([]byte(s.must("", "plans", "shop", id, "--json")), &p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "decided by ada, 2026-") {
		t.Fatalf("text: %s", text)
	}
	if _, ok := p["decided"]; !ok {
		t.Errorf("plans --json has no decision time; the text shows one:\n%s\njson: %v", text, p)
	}
	if _, ok := p["preview_complete"]; !ok {
		t.Errorf("plans --json does not say whether the preview is complete (text: \"… (more operations than shown)\")")
	}
}

// audit --verify --json prints nothing on stdout when there is no log yet.
func TestAuditVerifyJSONNoLog(t *testing.T) {
	s := newSession(t, false, nil)
	os.MkdirAll(s.data, 0o700)
	out, errOut, code := s.run("", "audit", "--verify", "--json")
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Errorf("audit --verify --json with no log: exit %d, stdout %q (not JSON: %v), stderr %q", code, out, err, errOut)
	}
}

// diff --json names "more operations than shown" truncated, not more (the MCP diff's field; its truncated means
// values were elided).
func TestDiffJSONMore(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	var d map[string]any
	json.Unmarshal([]byte(s.must("", "diff", "shop", "v1", "main", "--limit", "1", "--json")), &d)
	if d["more"] != true {
		t.Errorf("diff --limit 1 --json: more = %v, want true (MCP field name); got %v", d["more"], d)
	}
}

// query --json does not name the branch that answered (get --json does; docs/design.md §3.4: every read names the
// state it answered: revision, and branch where one was used).
func TestQueryJSONBranch(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	var q map[string]any
	json.Unmarshal([]byte(s.must("", "query", "shop", "doc", ".a", "--json")), &q)
	var g map[string]any
	json.Unmarshal([]byte(s.must("", "get", "shop", "doc/a", "--json")), &g)
	if g["branch"] != "main" {
		t.Fatalf("get --json: %v", g)
	}
	if q["branch"] != "main" {
		t.Errorf("query --json = %v: no branch", q)
	}
}

// audit --until with a time copied from strata audit's own listing (to the second) leaves out the records of that
// second, unlike BRANCH@TIME, where a time to the second covers that second.
func TestAuditUntilWholeSecond(t *testing.T) {
	s := newSession(t, false, nil)
	var r struct{ Time time.Time }
	for i := 0; i == 0 || r.Time.Equal(r.Time.Truncate(time.Second)); i++ { // a record off a whole second
		if i == 5 {
			t.Fatal("five records on whole seconds")
		}
		s.must("", "db", "create", fmt.Sprintf("shop%d", i))
		lines := strings.Split(strings.TrimSpace(s.must("", "audit", "--json")), "\n")
		json.Unmarshal([]byte(lines[len(lines)-1]), &r)
	}
	shown := r.Time.UTC().Truncate(time.Second).Format(time.RFC3339) // as the text listing shows it
	if !strings.Contains(s.must("", "audit"), shown) {
		t.Fatalf("listing does not show %s", shown)
	}
	out := s.must("", "audit", "--until", shown, "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var last struct{ Time time.Time }
	json.Unmarshal([]byte(lines[len(lines)-1]), &last)
	if !last.Time.Equal(r.Time) {
		t.Errorf("audit --until %s (the time the listing shows) leaves the record of %s out: %q", shown, r.Time, out)
	}
}

// TestPromoteAuditDigestCoversMerge: two promotes that differ only in --into are two different calls in the audit
// log (found in review: the digest covered only DB, BRANCH, --resolve and --key).
func TestPromoteAuditDigestCoversMerge(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	s.must("", "branch", "shop", "a")
	s.must("", "branch", "shop", "b")
	s.run("", "promote", "shop", "a", "--into", "main")
	s.run("", "promote", "shop", "a", "--into", "b")
	var digests []string
	for _, line := range strings.Split(strings.TrimSpace(s.must("", "audit", "--tool", "cli promote", "--json")), "\n") {
		var r struct {
			ArgsDigest string `json:"args_digest"`
		}
		json.Unmarshal([]byte(line), &r)
		digests = append(digests, r.ArgsDigest)
	}
	if len(digests) != 2 || digests[0] == digests[1] || digests[0] == "" {
		t.Fatalf("the two promotes' digests: %v", digests)
	}
}

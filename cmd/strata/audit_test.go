package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/audit"
)

// auditSession is a session (clock at 2026-03-14T09:0x, see newSession) whose data directory holds an audit log
// written through the library, as strata mcp and strata serve write it.
func auditSession(t *testing.T) (*session, string) {
	s := newSession(t, false, nil)
	path := audit.PathIn(s.data)
	l, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	at := func(hm string) time.Time {
		tm, err := time.Parse(time.RFC3339, "2026-03-14T"+hm+":00Z")
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	for _, r := range []audit.Record{
		{Time: at("06:00"), Principal: "ada", Client: "claude-code/2.1.0", Transport: audit.TransportStdio, Tool: "read",
			Database: "shop", ArgsDigest: audit.Digest([]byte(`{"database":"shop"}`)), Decision: audit.DecisionAllow,
			Outcome: audit.OutcomeOK, DurationMS: 0.412},
		{Time: at("07:30"), Principal: "ci-bot", Client: "", Transport: audit.TransportHTTP, Tool: "write",
			Database: "shop", ArgsDigest: audit.Digest([]byte(`{}`)), Decision: audit.DecisionAllow,
			Outcome: audit.OutcomeOK, Revision: 42, DurationMS: 3.5},
		{Time: at("08:15"), Principal: "ci-bot", Client: "=HYPERLINK(\"http://evil\")\x1b[2J", Transport: audit.TransportHTTP,
			Tool: "delete_branch", Database: "crm", ArgsDigest: audit.Digest(nil), Decision: audit.DecisionDeny,
			Outcome: "DENIED", DurationMS: 0.05},
		{Time: at("08:45"), Principal: "ada", Client: "claude-code/2.1.0", Transport: audit.TransportStdio, Tool: "promote",
			Database: "shop", ArgsDigest: audit.Digest([]byte(`{"from":"try"}`)), Decision: audit.DecisionAsk,
			Outcome: "CONFIRMATION_REQUIRED", PlanID: "pl-7", DurationMS: 12.25},
	} {
		if _, err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	return s, path
}

func TestAuditText(t *testing.T) {
	s, _ := auditSession(t)
	out := s.must("", "audit")
	want := `1  2026-03-14T06:00:00Z  ada     stdio  claude-code/2.1.0                     read           shop  allow  ok                     0.412ms
2  2026-03-14T07:30:00Z  ci-bot  http   -                                     write          shop  allow  ok                     3.5ms  revision 42
3  2026-03-14T08:15:00Z  ci-bot  http   "=HYPERLINK(\"http://evil\")\x1b[2J"  delete_branch  crm   deny   DENIED                 0.05ms
4  2026-03-14T08:45:00Z  ada     stdio  claude-code/2.1.0                     promote        shop  ask    CONFIRMATION_REQUIRED  12.25ms  plan pl-7
`
	if out != want {
		t.Fatalf("strata audit printed\n%s\nwant\n%s", out, want)
	}
	if strings.Contains(out, "\x1b") {
		t.Error("a client's escape sequence reached the terminal")
	}
}

func TestAuditFilters(t *testing.T) {
	s, _ := auditSession(t)
	seqs := func(args ...string) string {
		t.Helper()
		out := s.must("", append([]string{"audit"}, args...)...)
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if l != "" {
				got = append(got, strings.Fields(l)[0])
			}
		}
		return strings.Join(got, ",")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "1,2,3,4"},
		{[]string{"--principal", "ci-bot"}, "2,3"},
		{[]string{"--tool", "promote"}, "4"},
		{[]string{"--db", "crm"}, "3"},
		{[]string{"--decision", "deny"}, "3"},
		{[]string{"--outcome", "ok"}, "1,2"},
		{[]string{"--outcome", "ok", "--principal", "ada"}, "1"},
		{[]string{"--since", "2026-03-14T07:30:00Z"}, "2,3,4"},
		{[]string{"--until", "2026-03-14T07:30:00Z"}, "1,2"},
		{[]string{"--since", "2026-03-14T08:00:00+01:00", "--until", "2026-03-14T08:15:00Z"}, "2,3"},
		{[]string{"--since", "1h"}, "3,4"}, // the session's clock reads just after 09:00
		{[]string{"--since", "2h", "--until", "30m"}, "2,3"},
		{[]string{"--since", "2026-03-14"}, "1,2,3,4"},
		{[]string{"--until", "2026-03-14"}, ""},
		{[]string{"--principal", "nobody"}, ""},
	} {
		if got := seqs(tc.args...); got != tc.want {
			t.Errorf("strata audit %s: records %q, want %q", strings.Join(tc.args, " "), got, tc.want)
		}
	}
}

func TestAuditJSONAndCSV(t *testing.T) {
	s, path := auditSession(t)
	stored, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// --format json and --json print the records exactly as stored.
	for _, args := range [][]string{{"--json"}, {"--format", "json"}, {"--format", "json", "--json"}} {
		if out := s.must("", append([]string{"audit"}, args...)...); out != string(stored) {
			t.Errorf("strata audit %v printed\n%s\nwant the stored lines\n%s", args, out, stored)
		}
	}
	out := s.must("", "audit", "--json", "--decision", "ask")
	var r audit.Record
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Seq != 4 || r.PlanID != "pl-7" || r.Hash == "" {
		t.Errorf("--json --decision ask printed %q (%v)", out, err)
	}

	out = s.must("", "audit", "--format", "csv", "--principal", "ci-bot")
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatalf("csv output %q: %v", out, err)
	}
	if len(rows) != 3 || strings.Join(rows[0], ",") != "seq,time,principal,client,transport,tool,database,args_digest,decision,outcome,revision,plan_id,duration_ms,count,prev,key_id,hash" {
		t.Fatalf("csv rows %q", rows)
	}
	if got := strings.Join(rows[1][:13], ","); got != "2,2026-03-14T07:30:00.000000000Z,ci-bot,,http,write,shop,"+audit.Digest([]byte(`{}`))+",allow,ok,42,,3.5" {
		t.Errorf("csv row %q", got)
	}
	if rows[2][3] != "'=HYPERLINK(\"http://evil\")\\x1b[2J" {
		t.Errorf("a formula in a cell was not defused, or its ESC not made visible: %q", rows[2][3])
	}
	if len(rows[2][16]) != 64 || rows[2][14] != rows[1][16] || rows[2][13] != "" || rows[2][15] != "" {
		t.Errorf("csv chain fields: count %q prev %q key_id %q hash %q", rows[2][13], rows[2][14], rows[2][15], rows[2][16])
	}
}

func TestAuditVerify(t *testing.T) {
	s, path := auditSession(t)
	if out := s.must("", "audit", "--verify"); out != "audit log verified: 4 records, chain intact\n" {
		t.Errorf("--verify printed %q", out)
	}
	if out := s.must("", "audit", "--verify", "--json"); out != "{\n  \"verified\": true,\n  \"records\": 4\n}\n" {
		t.Errorf("--verify --json printed %q", out)
	}
	stored, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(stored), "\n")
	for _, tc := range []struct {
		name, data, want string
	}{
		{"a denial turned into an allow", strings.Replace(string(stored), `"decision":"deny"`, `"decision":"allow"`, 1),
			"fails verification at line 3: hash does not match the record: the line was edited"},
		{"a record deleted", lines[0] + lines[2] + lines[3],
			"fails verification at line 2: seq is 3, want 2: 1 record(s) before it were deleted"},
		{"records reordered", lines[0] + lines[2] + lines[1] + lines[3], "fails verification at line 2: seq is 3, want 2"},
		{"a record copied in", lines[0] + lines[1] + lines[2] + lines[1] + lines[3],
			"fails verification at line 4: seq is 2, want 4: a line was inserted before it"},
		{"cut mid-line", string(stored[:len(stored)-30]), "fails verification at line 4: incomplete last line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(tc.data), 0o600); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := s.run("", "audit", "--verify")
			if code != exitFailure || out != "" || !strings.Contains(errOut, "strata: audit log "+path+" "+tc.want) {
				t.Errorf("--verify of a tampered log: exit %d, stdout %q, stderr %q; want exit 1 and …%s…", code, out, errOut, tc.want)
			}
			out, _, code = s.run("", "audit", "--verify", "--json")
			var res struct {
				Verified bool
				Line     int
				Problem  string
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil || code != exitFailure || res.Verified || res.Line == 0 || res.Problem == "" {
				t.Errorf("--verify --json of a tampered log: exit %d, %q (%v)", code, out, err)
			}
		})
	}
}

func TestAuditNoLog(t *testing.T) {
	s := newSession(t, false, nil)
	want := "no audit log yet in " + s.data + ": it is written by every command that changes a database, strata mcp and strata serve\n"
	for _, args := range [][]string{{"audit"}, {"audit", "--verify"}, {"audit", "--since", "1h"}} {
		out, errOut, code := s.run("", args...)
		if code != exitOK || out != want || errOut != "" {
			t.Errorf("%v without a log: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	// Machine-readable output stays empty; the message goes to stderr.
	out, errOut, code := s.run("", "audit", "--json")
	if code != exitOK || out != "" || errOut != "strata: "+want {
		t.Errorf("--json without a log: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// Nor does a missing data directory fail.
	code, out, _ = runCLI(t, "--data", s.data+"/nowhere", "audit")
	if code != exitOK || !strings.HasPrefix(out, "no audit log yet in ") {
		t.Errorf("audit in a missing data directory: exit %d, %q", code, out)
	}
}

func TestAuditUsageErrors(t *testing.T) {
	s, _ := auditSession(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--format", "xml"}, `--format "xml": give text, json or csv`},
		{[]string{"--json", "--format", "csv"}, "--json and --format csv disagree"},
		{[]string{"--decision", "denied"}, `--decision "denied": give one of allow, ask, deny, rate_limited, unauthenticated`},
		{[]string{"--since", "yesterday"}, `--since "yesterday": give an RFC 3339 time`},
		{[]string{"--until", "-2h"}, `--until "-2h"`},
		{[]string{"--since", "1h", "--until", "2h"}, "--until 2h is before --since 1h"},
		{[]string{"--verify", "--principal", "ada"}, "--verify checks the whole log: it takes no --principal"},
		{[]string{"--verify", "--format", "csv"}, "--verify prints text or JSON, not csv"},
		{[]string{"shop"}, `strata audit takes no arguments (got ["shop"]): select records with --since`},
	} {
		out, errOut, code := s.run("", append([]string{"audit"}, tc.args...)...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "Run 'strata audit --help' for usage.") {
			t.Errorf("strata audit %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
	}
	if code, out, _ := runCLI(t, "audit", "--help"); code != exitOK || !strings.Contains(out, "--verify") {
		t.Errorf("audit --help: exit %d, %q", code, out)
	}
}

// TestCLIWritesAudited: the command line acts as the operator through the gate, so every command that changes
// something is one audit record, as an agent's call is: transport cli, the command, the decision, the revision.
func TestCLIWritesAudited(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup() // db create, import, snapshot, import
	s.must("", "branch", "shop", "work")
	s.must(`{"a":3}`, "import", "shop", "doc", "-", "--branch", "work")
	s.must("", "promote", "shop", "work")
	s.must("", "revert", "shop", "v1")
	if _, _, code := s.run("", "restore", "shop", "nope", "--from", "v1"); code == 0 {
		t.Fatal("restoring a resource that exists nowhere succeeded")
	}
	out := s.must("", "audit", "--json")
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct {
			Principal, Transport, Tool, Database, Decision, Outcome string
			Revision                                                uint64
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		got = append(got, fmt.Sprintf("%s %s %s %s %s %s %d", r.Principal, r.Transport, r.Tool, r.Database, r.Decision, r.Outcome, r.Revision))
	}
	want := []string{
		"ada cli cli db create shop allow ok 1",
		"ada cli cli import shop allow ok 2",
		"ada cli cli snapshot shop allow ok 0",
		"ada cli cli import shop allow ok 3",
		"ada cli cli branch shop allow ok 0",
		"ada cli cli import shop allow ok 4",
		"ada cli cli promote shop allow ok 5",
		"ada cli cli revert shop allow ok 6",
		"ada cli cli restore shop allow NOT_FOUND 0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit records of the commands:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if out := s.must("", "audit", "--verify"); !strings.Contains(out, "chain intact") {
		t.Errorf("--verify: %s", out)
	}
}

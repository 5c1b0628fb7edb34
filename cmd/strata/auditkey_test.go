package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata/audit"
)

// auditRecords parses the output of strata audit --json.
func auditRecords(t *testing.T, out string) []audit.Record {
	t.Helper()
	var recs []audit.Record
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		recs = append(recs, r)
	}
	return recs
}

// refusedCounts is how many records of strata audit --json have the decision, and the requests they count.
func refusedCounts(t *testing.T, out, decision string) (recs int, requests uint64) {
	t.Helper()
	for _, r := range auditRecords(t, out) {
		if r.Decision == decision && r.Principal == "" {
			recs++
			requests += max(r.Count, 1)
		}
	}
	return recs, requests
}

// auditKeyFile writes a key file of the test, mode 600.
func auditKeyFile(t *testing.T, secret string) string {
	return writeFile(t, "audit.key", secret+"\n", 0o600)
}

// TestAuditRefusedFlood holds docs/security.md T21 through strata serve: thousands of requests with a wrong token
// from one address in a few seconds make a handful of audit records (one per address and reason per 10 s
// interval, the last written at shutdown) whose counts add up exactly to the 401s and 429s the client got, while
// every call of an authenticated principal from another address keeps its own record; the keyed chain verifies.
func TestAuditRefusedFlood(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs a second loopback address (127.0.0.2), which only Linux has without configuration")
	}
	s := newSession(t, false, nil)
	s.setup()
	key := auditKeyFile(t, "flood-test-key-0123456789abcdef")
	sv := startServe(t, s, "--audit-key", key, "--token-file", tokenFile(t, "alice "+aliceToken))
	before, err := os.Stat(audit.PathIn(s.data))
	if err != nil {
		t.Fatal(err)
	}
	alice := newRawClient(t, sv.url, aliceToken)
	alice.initialize()

	// The attacker comes from 127.0.0.2, so that alice (127.0.0.1) is not blocked with it.
	attacker := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext:         (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext,
		MaxIdleConnsPerHost: 16,
	}}
	const workers, each = 8, 300
	var n401, n429, aliceCalls atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for i := range each {
				req, _ := http.NewRequest(http.MethodPost, sv.url, strings.NewReader(toolCall(i, "list_databases", `{}`)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+strings.Repeat("x", 43))
				res, err := attacker.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				switch res.StatusCode {
				case http.StatusUnauthorized:
					n401.Add(1)
				case http.StatusTooManyRequests:
					n429.Add(1)
				default:
					t.Errorf("status %d", res.StatusCode)
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 20 {
			r, err := alice.do(toolCall(100+i, "list_databases", `{}`), nil)
			if err != nil || r.code != http.StatusOK || !strings.Contains(r.body, "shop") {
				t.Errorf("alice's call %d: %v %d %s", i, err, r.code, r.body)
				return
			}
			aliceCalls.Add(1)
		}
	})
	wg.Wait()
	took := time.Since(start)
	if err := sv.stop(); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(audit.PathIn(s.data))
	if err != nil {
		t.Fatal(err)
	}

	out := s.must("", "--audit-key", key, "audit", "--json")
	recs := auditRecords(t, out)
	var attackRecs, aliceRecs int
	var got401, got429 uint64
	for _, r := range recs {
		switch {
		case r.Client == "127.0.0.2":
			if attackRecs++; r.Principal != "" || r.Count == 0 {
				t.Fatalf("attacker's record %d is not an aggregate: %+v", attackRecs, r)
			}
			if r.Decision == audit.DecisionUnauthenticated {
				got401 += r.Count
			} else if r.Decision == audit.DecisionRateLimited {
				got429 += r.Count
			}
		case r.Principal == "alice" && r.Tool == "list_databases":
			aliceRecs++
			if r.Count != 0 {
				t.Errorf("alice's call aggregated: %+v", r)
			}
		}
	}
	if got401 != uint64(n401.Load()) || got429 != uint64(n429.Load()) || n401.Load()+n429.Load() != workers*each {
		t.Fatalf("audited %d × 401 and %d × 429; the client got %d and %d", got401, got429, n401.Load(), n429.Load())
	}
	// At most two records (one per reason) per 10 s interval.
	if maxRecs := 2 * (int(took/(10*time.Second)) + 2); attackRecs > maxRecs {
		t.Fatalf("%d records for %d refused requests in %v", attackRecs, workers*each, took)
	}
	if aliceRecs != int(aliceCalls.Load()) || aliceRecs != 20 {
		t.Fatalf("alice made %d calls, %d are audited", aliceCalls.Load(), aliceRecs)
	}
	growth := after.Size() - before.Size()
	if growth > 32<<10 {
		t.Errorf("the audit log grew by %d bytes", growth)
	}
	if out := s.must("", "--audit-key", key, "audit", "--verify"); !strings.Contains(out, "chain intact, keyed") {
		t.Errorf("audit --verify: %s", out)
	}
	if out := s.must("", "audit", "--decision", "rate_limited"); !strings.Contains(out, "127.0.0.2") || !strings.Contains(out, fmt.Sprintf("%d requests", got429)) && attackRecs == 2 {
		t.Errorf("audit --decision rate_limited:\n%s", out)
	}
	t.Logf("%d refused requests in %v: %d audit records, the log grew %d bytes (alice's %d calls: %d records)",
		workers*each, took.Round(time.Millisecond), attackRecs, growth, aliceCalls.Load(), aliceRecs)
}

// rehash edits record i (0-based) of the lines of an audit log and recomputes every prev and unkeyed hash from
// it on: what someone who can write the log does to hide a record. strip takes key ids off as well.
func rehash(t *testing.T, data string, i int, edit func(r *audit.Record), strip bool) string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(data, "\n"), "\n")
	prev := ""
	for j, l := range lines {
		var r audit.Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if j < i {
			prev = r.Hash
			continue
		}
		if j == i {
			edit(&r)
		}
		if strip {
			r.KeyID = ""
		}
		r.Prev = prev
		r.Hash, _ = audit.ComputeHash(r)
		b, _ := r.MarshalJSON()
		lines[j], prev = string(b), r.Hash
	}
	return strings.Join(lines, "\n") + "\n"
}

// TestAuditKeyCLI holds docs/security.md T26 through the command line: an operator's record edited and re-hashed
// passes strata audit --verify on an unkeyed log (the weakness) and fails it on a log keyed with --audit-key,
// however it is re-hashed; the right key verifies, no key or a wrong one says so; a keyed log refuses writers
// without the key; the key never reaches the log; bad key files are refused with what to do.
func TestAuditKeyCLI(t *testing.T) {
	hide := func(r *audit.Record) { r.Tool = "cli snapshot" } // the import of revision 2 passes for something harmless

	// Unkeyed: the forger passes.
	s := newSession(t, false, nil)
	s.setup()
	path := audit.PathIn(s.data)
	data, _ := os.ReadFile(path)
	if err := os.WriteFile(path, []byte(rehash(t, string(data), 1, hide, false)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := s.run("", "audit", "--verify"); code != exitOK || !strings.Contains(out, "chain intact") {
		t.Fatalf("unkeyed, edited and re-hashed: exit %d %s %s (expected to pass: the weakness a key closes)", code, out, errOut)
	}

	// Keyed: every command that writes is given the key (here through the environment for some).
	const secret = "cli-test-key-0123456789abcdef"
	key := auditKeyFile(t, secret)
	k := newSession(t, false, map[string]string{"STRATA_AUDIT_KEY_FILE": key})
	k.must("", "db", "create", "shop")
	k.must(`{"a":1}`, "import", "shop", "doc", "-")
	k.must("", "--audit-key", key, "snapshot", "shop", "v1")
	kpath := audit.PathIn(k.data)
	kdata, _ := os.ReadFile(kpath)
	if strings.Contains(string(kdata), secret) || strings.Count(string(kdata), `"key_id":"`) != 3 {
		t.Fatalf("keyed log:\n%s", kdata)
	}
	out := k.must("", "audit", "--verify")
	if !strings.HasPrefix(out, "audit log verified: 3 records, chain intact, keyed (key id ") {
		t.Fatalf("--verify with the key: %q", out)
	}
	keyID := strings.TrimSuffix(strings.TrimPrefix(out, "audit log verified: 3 records, chain intact, keyed (key id "), ")\n")
	if js := k.must("", "audit", "--verify", "--json"); !strings.Contains(js, `"verified": true`) || !strings.Contains(js, `"key_id": "`+keyID+`"`) {
		t.Errorf("--verify --json: %s", js)
	}
	// Without the environment variable (a plain session on the same directory).
	plain := &session{t: t, e: s.e, data: k.data}
	wrong := auditKeyFile(t, "a-wrong-key-0123456789abcdef")
	for _, tc := range []struct {
		name  string
		data  string
		args  []string
		want  string
		exitc int
	}{
		{"right key", string(kdata), []string{"--audit-key", key}, "chain intact", exitOK},
		{"no key", string(kdata), nil, "cannot be verified without its key: the chain is keyed (key id " + keyID + ") from line 1 on (0 records before it verified); pass --audit-key FILE", exitFailure},
		{"wrong key", string(kdata), []string{"--audit-key", wrong}, "wrong key: the chain is keyed with key id " + keyID, exitFailure},
		{"edited, re-hashed", rehash(t, string(kdata), 1, hide, false), []string{"--audit-key", key},
			"fails verification at line 2: hash does not match the record (HMAC with the key)", exitFailure},
		{"edited, key ids taken off, re-hashed", rehash(t, string(kdata), 0, hide, true), []string{"--audit-key", key},
			"fails verification at line 3: no record is keyed, but a key was given", exitFailure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(kpath, []byte(tc.data), 0o600); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := plain.run("", append([]string{"audit", "--verify"}, tc.args...)...)
			if code != tc.exitc || !strings.Contains(out+errOut, tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d and …%s…", code, out, errOut, tc.exitc, tc.want)
			}
			if strings.Contains(out+errOut, secret) {
				t.Fatal("the key is shown")
			}
		})
	}
	os.WriteFile(kpath, kdata, 0o600)

	// A keyed log refuses writers without the key, or with another, and nothing is done.
	for _, args := range [][]string{{"db", "create", "other"}, {"--audit-key", wrong, "db", "create", "other"}} {
		_, errOut, code := plain.run("", args...)
		if code != exitUsage || !strings.Contains(errOut, "the audit chain is keyed") || !strings.Contains(errOut, "--audit-key") {
			t.Errorf("strata %v on a keyed log: exit %d, %s", args, code, errOut)
		}
	}
	if _, errOut, code := plain.run("", "mcp"); code != exitUsage || !strings.Contains(errOut, "the audit chain is keyed (key id "+keyID+")") {
		t.Errorf("strata mcp without the key: exit %d, %s", code, errOut)
	}
	if _, errOut, code := plain.run("", "serve", "--listen", "127.0.0.1:0"); code != exitUsage || !strings.Contains(errOut, "keyed") {
		t.Errorf("strata serve without the key: exit %d, %s", code, errOut)
	}
	if out := k.must("", "db", "list"); strings.Contains(out, "other") {
		t.Errorf("a command refused for want of the key ran: %s", out)
	}

	// Bad key files.
	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(t.TempDir(), "nope"), "no such file"},
		{"world readable", writeFile(t, "k", secret, 0o644), "readable or writable by others (mode 0644): whoever reads the key can forge the audit log; run chmod 600"},
		{"empty", writeFile(t, "k", "\n", 0o600), "the audit key is empty"},
		{"short", writeFile(t, "k", "short", 0o600), "use at least 16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, args := range [][]string{{"audit", "--verify"}, {"db", "create", "x"}, {"mcp"}} {
				_, errOut, code := plain.run("", append([]string{"--audit-key", tc.path}, args...)...)
				if code != exitUsage || !strings.Contains(errOut, "--audit-key: audit key "+tc.path) || !strings.Contains(errOut, tc.want) {
					t.Errorf("strata --audit-key %s %v: exit %d, %s", tc.name, args, code, errOut)
				}
			}
		})
	}
}

// writeChain writes n records of an unkeyed chain to path in one go (faster than appending each with an fsync).
func writeChain(t *testing.T, path string, n int) {
	t.Helper()
	var b strings.Builder
	prev := ""
	for i := range n {
		r := audit.Record{Time: time.Date(2026, 3, 14, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond),
			Principal: "ada", Client: "claude-code/2.1.0", Transport: audit.TransportStdio, Tool: "read", Database: "shop",
			ArgsDigest: audit.Digest([]byte(fmt.Sprint(i))), Decision: audit.DecisionAllow, Outcome: audit.OutcomeOK,
			DurationMS: 0.5, Seq: uint64(i + 1), Prev: prev}
		r.Hash, _ = audit.ComputeHash(r)
		line, _ := r.MarshalJSON()
		b.Write(line)
		b.WriteByte('\n')
		prev = r.Hash
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestAuditRotationCLI: past --audit-max-mib the log is rotated; strata audit reads, and --verify checks, the
// chain across the files; a rotated file removed is found.
func TestAuditRotationCLI(t *testing.T) {
	s := newSession(t, false, nil)
	path := audit.PathIn(s.data)
	writeChain(t, path, 3100) // just over 1 MiB
	fi, _ := os.Stat(path)
	if fi.Size() < 1<<20 {
		t.Fatalf("the log has %d bytes: write more records", fi.Size())
	}
	s.must("", "--audit-max-mib", "1", "db", "create", "shop")
	s.must("", "--audit-max-mib", "1", "snapshot", "shop", "v1")
	rotated := audit.RotatedName(path, 1, 3100)
	if _, err := os.Stat(rotated); err != nil {
		t.Fatalf("not rotated: %v", err)
	}
	if out := s.must("", "audit", "--verify"); out != "audit log verified: 3102 records in 2 files, chain intact\n" {
		t.Errorf("--verify: %q", out)
	}
	recs := auditRecords(t, s.must("", "audit", "--json"))
	if len(recs) != 3102 || recs[3100].Tool != "cli db create" || recs[3100].Seq != 3101 || recs[3100].Prev != recs[3099].Hash {
		t.Fatalf("%d records across the files; record 3101: %+v", len(recs), recs[len(recs)-2])
	}
	if out := s.must("", "audit", "--principal", "ada", "--tool", "cli snapshot"); !strings.HasPrefix(out, "3102  ") {
		t.Errorf("audit --tool: %q", out)
	}
	if _, errOut, code := s.run("", "--audit-max-mib", "-1", "db", "create", "x"); code != exitUsage || !strings.Contains(errOut, "--audit-max-mib -1") {
		t.Errorf("--audit-max-mib -1: exit %d, %s", code, errOut)
	}
	os.Remove(rotated)
	if _, errOut, code := s.run("", "audit", "--verify"); code != exitFailure || !strings.Contains(errOut, "the log begins at record 3101, and records 1–3100 are missing") {
		t.Errorf("--verify without the rotated file: exit %d, %s", code, errOut)
	}
}

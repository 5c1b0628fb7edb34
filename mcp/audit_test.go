package mcp

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/strata-db/strata/audit"
	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/query"
)

// TestAuditCompleteness is T12: every call — allowed, planned, denied, failed, timed out, panicked — leaves exactly
// one record, with its decision and outcome; the chain verifies; no document value is in the log.
func TestAuditCompleteness(t *testing.T) {
	path := t.TempDir()
	log, err := audit.Open(filepath.Join(path, audit.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	// Long enough that starting the query's worker process on a loaded machine does not use it up (that answers
	// UNAVAILABLE), short against the program below.
	e, err := query.New(query.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	panicOn := ""
	cfg := Config{Writes: gate.WritesBranches, Principal: "agent-7", Audit: log, Engine: e,
		Policy: gate.Policy{Admin: gate.Deny},
		beforeHandler: func(tool string) {
			if tool == panicOn {
				panic("boom")
			}
		}}
	h := newHarnessAt(t, path, cfg)
	// The database exists before the server's policy is in force (an operator made it).
	if _, err := h.dir.Create(t.Context(), "shop", "operator"); err != nil {
		t.Fatal(err)
	}
	const secret = "s3cr3t-value-never-logged"
	calls := []struct{ tool, args, decision, outcome string }{
		{"list_databases", `{}`, "allow", "ok"},
		{"create_database", `{"database":"other"}`, "deny", "DENIED"},
		{"create_branch", `{"database":"shop","name":"work"}`, "allow", "ok"},
		{"put", `{"database":"shop","resource":"doc","value":{"k":"` + secret + `"},"branch":"work"}`, "allow", "ok"},
		{"put", `{"database":"shop","resource":"doc","value":{"k":"` + secret + `"}}`, "ask", "ok"},
		{"read", `{"database":"shop","resource":"nope"}`, "allow", "NOT_FOUND"},
		{"query", `{"database":"shop","resource":"doc","branch":"work","query":"reduce range(1000000000000) as $i (0; . + 1)"}`, "allow", "QUERY_TIMEOUT"},
		{"read", `{"database":"shop","resource":"doc","branch":"work","bogus":1}`, "allow", "INVALID_ARGUMENT"},
	}
	for _, c := range calls {
		h.call(c.tool, c.args)
	}
	panicOn = "status"
	if _, err := h.cs.CallTool(t.Context(), callParams("status", `{}`)); err == nil {
		t.Fatal("the panic did not become an error")
	}
	calls = append(calls, struct{ tool, args, decision, outcome string }{"status", `{}`, "allow", "INTERNAL"})

	b, err := os.ReadFile(log.Path())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := audit.Verify(bytes.NewReader(b)); err != nil || n != len(calls) {
		t.Fatalf("verify: %d records, %v; want %d", n, err, len(calls))
	}
	if bytes.Contains(b, []byte(secret)) {
		t.Fatal("a document value is in the audit log")
	}
	var recs []audit.Record
	audit.Read(bytes.NewReader(b), audit.Filter{}, func(r audit.Record) error { recs = append(recs, r); return nil })
	for i, c := range calls {
		r := recs[i]
		if r.Tool != c.tool || r.Decision != c.decision || r.Outcome != c.outcome || r.Principal != "agent-7" ||
			r.Transport != "stdio" || !strings.HasPrefix(r.Client, "strata-test") || !strings.HasPrefix(r.ArgsDigest, "sha256:") {
			t.Errorf("record %d: %+v, want %s %s %s", i, r, c.tool, c.decision, c.outcome)
		}
	}
	if recs[3].Revision == 0 || recs[3].Database != "shop" {
		t.Errorf("the write's record has no revision or database: %+v", recs[3])
	}
	if !strings.HasPrefix(recs[4].PlanID, "plan-") {
		t.Errorf("the plan's record has no plan id: %+v", recs[4])
	}
}

// TestAuditFailsClosed: while the audit log cannot be written, write tools refuse to run and nothing is written;
// reads go on.
func TestAuditFailsClosed(t *testing.T) {
	path := t.TempDir()
	log, err := audit.Open(filepath.Join(path, audit.FileName))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessAt(t, path, Config{Writes: gate.WritesOn, Protected: []string{}, Audit: log})
	h.ok("create_database", `{"database":"shop"}`)
	h.ok("put", `{"database":"shop","resource":"doc","value":1}`)
	head := h.head("shop", "main")
	log.Close()
	r := h.fail("put", `{"database":"shop","resource":"doc","value":2}`, codeUnavailable)
	if !strings.Contains(r.text, "audit log") || h.head("shop", "main") != head {
		t.Fatalf("a write ran without its audit record: %s", r.text)
	}
	h.ok("read", `{"database":"shop","resource":"doc"}`)
}

func callParams(name, args string) *mcpsdk.CallToolParams {
	return &mcpsdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)}
}

// TestAuditAppendFailureStopsWrites: once a record could not be appended (here the log refuses every record), writes
// are refused although the log itself still opens and checks fine; reads go on.
func TestAuditAppendFailureStopsWrites(t *testing.T) {
	path := t.TempDir()
	log, err := audit.Open(filepath.Join(path, audit.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	h := newHarnessAt(t, path, Config{Writes: gate.WritesOn, Protected: []string{}, Audit: log, Transport: "carrier-pigeon"})
	if _, err := h.dir.Create(t.Context(), "shop", "operator"); err != nil {
		t.Fatal(err)
	}
	head := h.head("shop", "main")
	h.ok("list_databases", `{}`) // its record is refused
	if err := log.Check(); err != nil {
		t.Fatalf("the log itself is fine: %v", err)
	}
	r := h.fail("put", `{"database":"shop","resource":"doc","value":1}`, codeUnavailable)
	if !strings.Contains(r.text, "audit log") || h.head("shop", "main") != head {
		t.Fatalf("a write ran after its audit trail broke: %s", r.text)
	}
}

// TestSubscriptionAudited: a resource subscription leaves one audit record, whichever way the client's protocol
// revision makes it (resources/subscribe, or a subscriptions/listen stream), failed or not (found in review: the
// listen stream's subscriptions left none).
func TestSubscriptionAudited(t *testing.T) {
	path := t.TempDir()
	log, err := audit.Open(filepath.Join(path, audit.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	h := newHarnessAt(t, path, Config{Writes: gate.WritesOn, Audit: log})
	h.ok("create_database", `{"database":"shop"}`)
	cs := resourceClient(t, h, Config{Audit: log}, nil)
	ctx := t.Context()
	if err := cs.Subscribe(ctx, &mcpsdk.SubscribeParams{URI: "strata://shop/log"}); err != nil {
		t.Fatal(err)
	}
	cs.Subscribe(ctx, &mcpsdk.SubscribeParams{URI: "strata://nope/log"}) // refused (on a listen stream, later)
	var recs []audit.Record
	deadline := time.Now().Add(5 * time.Second)
	for {
		recs = recs[:0]
		b, err := os.ReadFile(log.Path())
		if err != nil {
			t.Fatal(err)
		}
		audit.Read(bytes.NewReader(b), audit.Filter{}, func(r audit.Record) error {
			if strings.HasPrefix(r.Tool, "resources/subscribe") || r.Tool == "subscriptions/listen" {
				recs = append(recs, r)
			}
			return nil
		})
		if len(recs) >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	ok := 0
	for _, r := range recs {
		if r.Outcome == audit.OutcomeOK {
			ok++
		}
	}
	if len(recs) != 2 || ok != 1 { // two streams on the current revision: in either order
		t.Fatalf("subscription records (protocol %s): %+v; want one ok, one failed", cs.InitializeResult().ProtocolVersion, recs)
	}
	t.Logf("protocol %s: subscriptions recorded as %s", cs.InitializeResult().ProtocolVersion, recs[0].Tool)
}

package main

import (
	"context"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// agent is an MCP client talking to `strata mcp` run through the CLI entry point, as an agent's client would.
type agent struct {
	t    *testing.T
	ctx  context.Context
	cs   *mcpsdk.ClientSession
	done chan int
	out  io.Closer
}

func startAgent(t *testing.T, s *session, flags ...string) *agent {
	t.Helper()
	return startAgentAs(t, s, &mcpsdk.Implementation{Name: "agent", Version: "1"}, flags...)
}

// startAgentAs is startAgent with the client's name and version.
func startAgentAs(t *testing.T, s *session, client *mcpsdk.Implementation, flags ...string) *agent {
	t.Helper()
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	a := &agent{t: t, done: make(chan int, 1), out: clientOut}
	var stderr strings.Builder
	go func() {
		a.done <- runIn(s.e, append([]string{"--data", s.data, "mcp"}, flags...), serverIn, serverOut, &stderr)
		serverOut.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	a.ctx = ctx
	cs, err := mcpsdk.NewClient(client, nil).
		Connect(ctx, &mcpsdk.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.cs = cs
	return a
}

func (a *agent) stop() {
	a.cs.Close()
	a.out.Close()
	if code := <-a.done; code != 0 {
		a.t.Fatalf("strata mcp exited %d", code)
	}
}

// call calls a tool and returns its text and structured content.
func (a *agent) call(name, args string) (text string, data map[string]any, isError bool) {
	a.t.Helper()
	res, err := a.cs.CallTool(a.ctx, &mcpsdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		a.t.Fatalf("%s: %v", name, err)
	}
	sc := res.StructuredContent
	if res.IsError {
		sc = res.Meta["strata/error"] // an error result's fields
	}
	b, _ := json.Marshal(sc)
	json.Unmarshal(b, &data)
	return res.Content[0].(*mcpsdk.TextContent).Text, data, res.IsError
}

func (a *agent) ok(name, args string) map[string]any {
	a.t.Helper()
	text, data, isErr := a.call(name, args)
	if isErr {
		a.t.Fatalf("%s %s: %s", name, args, text)
	}
	return data
}

var planIDRE = regexp.MustCompile(`plan-[a-z2-7]{26}`)

// TestSafeChange is the README's safe_change walk-through, run for real: an agent branches, edits, diffs and
// promotes; the promotion into main becomes a plan; a person reviews it with `strata plans` and approves it with
// `strata approve` while the server runs; the agent applies it. Then the same with the person rejecting: the agent
// is told why, and main does not change.
func TestSafeChange(t *testing.T) {
	s := newSession(t, false, nil)
	clock := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	s.e.now = func() time.Time { clock = clock.Add(time.Second); return clock } // plans live 5 minutes
	s.setup()
	a := startAgent(t, s, "--writes", "branches")

	a.ok("create_branch", `{"database":"shop","name":"agent/reprice"}`)
	a.ok("update", `{"database":"shop","resource":"doc","path":"/a","value":3,"branch":"agent/reprice","message":"a goes to 3"}`)
	a.ok("delete", `{"database":"shop","resource":"doc","path":"/d","branch":"agent/reprice"}`)
	if d := a.ok("diff", `{"database":"shop","from_branch":"main","to_branch":"agent/reprice"}`); d["counts"].(map[string]any)["removed"] != 1.0 {
		t.Fatalf("diff: %v", d)
	}
	plan := a.ok("promote", `{"database":"shop","branch":"agent/reprice","message":"reprice"}`)
	id, _ := plan["plan_id"].(string)
	if !planIDRE.MatchString(id) || plan["removes"].([]any)[0] != "/doc/d" {
		t.Fatalf("promote into main must be a plan: %v", plan)
	}

	// The person reviews it, while the server holds the data directory.
	if out := s.must("", "plans", "shop"); !strings.Contains(out, id) || !strings.Contains(out, "pending") || !strings.Contains(out, "promote agent/reprice into main") {
		t.Fatalf("strata plans:\n%s", out)
	}
	out := s.must("", "plans", "shop", id)
	for _, want := range []string{"removes 1 value(s):", "/doc/d", "~ /doc/a  2 → 3", "- /doc/d  true", "branch main at revision 3"} {
		if !strings.Contains(out, want) {
			t.Fatalf("strata plans shop ID: no %q in\n%s", want, out)
		}
	}
	if got := s.must("", "get", "shop", "doc/a"); got != "2\n" {
		t.Fatalf("main changed before the approval: %s", got)
	}
	// Not approved yet: this client cannot ask its user, so apply_plan refuses and nothing is written.
	if text, _, isErr := a.call("apply_plan", `{"plan_id":"`+id+`"}`); !isErr || !strings.HasPrefix(text, "CONFIRMATION_REQUIRED") || !strings.Contains(text, "strata approve shop "+id) {
		t.Fatalf("apply before approval: %s", text)
	}
	if out := s.must("", "approve", "shop", id); !strings.Contains(out, "approved plan "+id) || !strings.Contains(out, "it removes 1 value(s), first /doc/d") {
		t.Fatalf("strata approve:\n%s", out)
	}
	applied := a.ok("apply_plan", `{"plan_id":"`+id+`"}`)
	if applied["plan_id"] != id || applied["branch"] != "main" {
		t.Fatalf("apply_plan: %v", applied)
	}
	if got := s.must("", "get", "shop", "doc"); got != `{"a":3,"b":[1,2]}`+"\n" {
		t.Fatalf("main after apply: %s", got)
	}
	if out := s.must("", "plans", "shop", "--all"); !strings.Contains(out, "applied") {
		t.Fatalf("strata plans --all:\n%s", out)
	}
	// A second approval is refused: the plan is settled.
	if _, errOut, code := s.run("", "approve", "shop", id); code != exitConflict || !strings.Contains(errOut, "already applied") {
		t.Fatalf("approving an applied plan: exit %d: %s", code, errOut)
	}

	// The same, rejected.
	a.ok("update", `{"database":"shop","resource":"doc","path":"/a","value":0,"branch":"agent/reprice"}`)
	plan = a.ok("promote", `{"database":"shop","branch":"agent/reprice"}`)
	id2 := plan["plan_id"].(string)
	if out := s.must("", "reject", "shop", id2, "--reason", "a must never be zero"); !strings.Contains(out, "rejected plan "+id2) {
		t.Fatalf("strata reject:\n%s", out)
	}
	text, data, isErr := a.call("apply_plan", `{"plan_id":"`+id2+`"}`)
	if !isErr || !strings.HasPrefix(text, "DENIED") || data["detail"] != "a must never be zero" {
		t.Fatalf("apply after rejection: %s", text)
	}
	if got := s.must("", "get", "shop", "doc/a"); got != "3\n" {
		t.Fatalf("main after the rejection: %s", got)
	}
	// Unknown plans and bad flags say what is wrong.
	if _, errOut, code := s.run("", "approve", "shop", "plan-nope"); code != exitNotFound || !strings.Contains(errOut, `plan "plan-nope" not found`) {
		t.Fatalf("approve of an unknown plan: exit %d: %s", code, errOut)
	}
	if _, errOut, code := s.run("", "approve", "shop", id2, "--reason", "x"); code != exitUsage || !strings.Contains(errOut, "--reason") {
		t.Fatalf("approve --reason: exit %d: %s", code, errOut)
	}
	a.stop()
	// Every call of the agent is in the audit log, chained; the plan's apply names its revision.
	if out := s.must("", "audit", "--verify"); !strings.Contains(out, "chain intact") {
		t.Fatalf("strata audit --verify: %s", out)
	}
	out = s.must("", "audit", "--tool", "apply_plan", "--json")
	if n := strings.Count(out, "\n"); n != 3 || !strings.Contains(out, `"plan_id":"`+id+`"`) || !strings.Contains(out, `"outcome":"DENIED"`) {
		t.Fatalf("audit of apply_plan (%d records):\n%s", n, out)
	}
	if out := s.must("", "audit", "--decision", "ask"); strings.Count(out, "promote") != 2 {
		t.Fatalf("audit of the plans:\n%s", out)
	}
}

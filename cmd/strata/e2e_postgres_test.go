//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/strata-db/strata/internal/pgtest"
)

// strataProcess runs this test binary as the strata command (cliEnv) in a process of its own, and returns its
// combined output once it exits.
func strataProcess(t *testing.T, args ...string) (string, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// serveProcess starts `strata serve` in a process of its own on a free loopback port, stopped at the test's end, and
// returns its MCP endpoint.
func serveProcess(t *testing.T, data string, extra ...string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	addr := freeLocalAddr(t)
	cmd := exec.Command(self, append([]string{"--data", data, "serve", "--listen", addr}, extra...)...)
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var log []string
	serving := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			mu.Lock()
			log = append(log, sc.Text())
			mu.Unlock()
			if strings.Contains(sc.Text(), "serving") {
				once.Do(func() { close(serving) })
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			mu.Lock()
			t.Logf("strata serve on %s said:\n%s", addr, strings.Join(log, "\n"))
			mu.Unlock()
		}
	})
	select {
	case <-serving:
	case <-time.After(60 * time.Second):
		t.Fatalf("strata serve did not start within 60 s")
	}
	return "http://" + addr + "/mcp"
}

// mcpClient is a go-sdk client session over Streamable HTTP, counting the resource updates it is notified of.
type mcpClient struct {
	t       *testing.T
	ctx     context.Context
	cs      *mcpsdk.ClientSession
	mu      sync.Mutex
	updated map[string]int
}

func connectMCP(t *testing.T, ctx context.Context, endpoint, name string) *mcpClient {
	t.Helper()
	c := &mcpClient{t: t, ctx: ctx, updated: map[string]int{}}
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: name, Version: "1"}, &mcpsdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcpsdk.ResourceUpdatedNotificationRequest) {
			c.mu.Lock()
			c.updated[req.Params.URI]++
			c.mu.Unlock()
		}})
	cs, err := client.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: endpoint}, nil)
	if err != nil {
		t.Fatalf("connecting %s to %s: %v", name, endpoint, err)
	}
	t.Cleanup(func() { cs.Close() })
	c.cs = cs
	return c
}

// call calls a tool and returns its text, its structured content and whether it is an error result.
func (c *mcpClient) call(name, args string) (string, map[string]any, bool) {
	c.t.Helper()
	res, err := c.cs.CallTool(c.ctx, &mcpsdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		c.t.Fatalf("%s %s: %v", name, args, err)
	}
	var m map[string]any
	if b, err := json.Marshal(res.StructuredContent); err == nil {
		_ = json.Unmarshal(b, &m)
	}
	return res.Content[0].(*mcpsdk.TextContent).Text, m, res.IsError
}

func (c *mcpClient) ok(name, args string) map[string]any {
	c.t.Helper()
	text, m, isErr := c.call(name, args)
	if isErr {
		c.t.Fatalf("%s %s failed: %s", name, args, text)
	}
	return m
}

func (c *mcpClient) notified(uri string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.updated[uri]
}

// TestTwoServersOnePostgres: two `strata serve` processes on one PostgreSQL behave as one server. An agent writes
// through the first, on a branch, and promotes into protected main, which makes a plan; a reader connected to the
// second reads the agent's branch and is subscribed to main's catalog; a reviewer approves the plan with `strata
// approve` in a third process; the agent applies it through the first server; the reader, through the second, is
// notified of the change and reads it. Both servers' calls, and the reviewer's, are in the one audit log, which
// verifies.
func TestTwoServersOnePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts server processes")
	}
	data := pgtest.URL(t)
	if out, err := strataProcess(t, "--data", data, "db", "create", "shop"); err != nil {
		t.Fatalf("db create: %v\n%s", err, out)
	}
	s := &session{t: t, e: osEnvironment(), data: data}
	s.must(`{"items":[{"id":1,"price":10},{"id":2,"price":20}]}`, "import", "shop", "catalog", "-")
	first := serveProcess(t, data, "--writes", "branches")
	second := serveProcess(t, data, "--writes", "off")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	agent := connectMCP(t, ctx, first, "agent")
	reader := connectMCP(t, ctx, second, "reader")

	const uri = "strata://shop/catalog"
	if err := reader.cs.Subscribe(ctx, &mcpsdk.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("subscribing through the second server: %v", err)
	}
	br := agent.ok("create_branch", `{"database":"shop","name":"agent/reprice"}`)
	agent.ok("update", fmt.Sprintf(`{"database":"shop","resource":"catalog","path":"/items/0/price","value":12,"branch":"agent/reprice","expected_head":%v}`, br["revision"]))
	// The second server reads what the first wrote, at once: there is one store.
	if r := reader.ok("read", `{"database":"shop","resource":"catalog","path":"/items/0/price","branch":"agent/reprice"}`); r["value"] != 12.0 {
		t.Fatalf("the second server reads the branch as %v", r)
	}
	plan := agent.ok("promote", `{"database":"shop","branch":"agent/reprice","message":"reprice"}`)
	id, _ := plan["plan_id"].(string)
	if !strings.HasPrefix(id, "plan-") || plan["confirmation_required"] != true {
		t.Fatalf("promote into main must be a plan: %v", plan)
	}
	// The reviewer, in a third process, sees the plan and approves it.
	if out, err := strataProcess(t, "--data", data, "plans", "shop"); err != nil || !strings.Contains(out, id) {
		t.Fatalf("strata plans: %v\n%s", err, out)
	}
	if out, err := strataProcess(t, "--data", data, "approve", "shop", id); err != nil || !strings.Contains(out, "approved plan "+id) {
		t.Fatalf("strata approve: %v\n%s", err, out)
	}
	before := reader.notified(uri)
	applied := agent.ok("apply_plan", fmt.Sprintf(`{"plan_id":%q}`, id))
	if applied["branch"] != "main" {
		t.Fatalf("apply_plan: %v", applied)
	}
	for deadline := time.Now().Add(20 * time.Second); reader.notified(uri) == before; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the reader on the second server was not notified of main's change within 20 s")
		}
	}
	if r := reader.ok("read", `{"database":"shop","resource":"catalog","path":"/items/0/price"}`); r["value"] != 12.0 {
		t.Fatalf("main through the second server after the plan was applied: %v", r)
	}
	// One audit log for all three processes, chained and verified.
	if out := s.must("", "audit", "--verify"); !strings.Contains(out, "chain intact") {
		t.Fatalf("strata audit --verify: %s", out)
	}
	for _, want := range []string{`"tool":"apply_plan"`, `"tool":"cli approve"`, `"principal":"` + s.e.user() + `"`} {
		if out := s.must("", "audit", "--json"); !strings.Contains(out, want) {
			t.Errorf("the audit log lacks %s:\n%s", want, out)
		}
	}
	if out := s.must("", "audit", "--tool", "read", "--json"); strings.Count(out, "\n") < 2 {
		t.Errorf("the second server's reads are not in the audit log:\n%s", out)
	}
}

// TestServeThroughPostgresRestart: PostgreSQL restarts under a `strata serve` that an agent keeps writing to with
// idempotency keys. Calls in flight fail with UNAVAILABLE (never another code, never a false success); the same
// server, not restarted, serves again once PostgreSQL is back; every acknowledged append is there once, in order.
func TestServeThroughPostgresRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: restarts a PostgreSQL server")
	}
	srv := pgtest.Server(t)
	s := &session{t: t, e: newSession(t, false, nil).e, data: srv.URL("postgres") + "&connect_timeout=3"}
	s.e.now = nil
	s.must("", "db", "create", "busy")
	s.must(`[]`, "import", "busy", "log", "-")
	sv := startServe(t, s, "--writes", "on")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	agent := connectMCP(t, ctx, sv.url, "agent")

	var mu sync.Mutex
	acked := 0
	var failures []string
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			args := fmt.Sprintf(`{"database":"busy","resource":"log","operations":[{"op":"add","path":"/-","value":%d}],"idempotency_key":"append-%d"}`, i, i)
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := agent.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "patch", Arguments: json.RawMessage(args)})
				if err != nil {
					mu.Lock()
					failures = append(failures, "protocol error: "+err.Error())
					mu.Unlock()
					return
				}
				text := res.Content[0].(*mcpsdk.TextContent).Text
				mu.Lock()
				if !res.IsError {
					acked++
				} else {
					failures = append(failures, text)
				}
				mu.Unlock()
				if !res.IsError {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return acked }
	waitFor := func(n int) {
		for deadline := time.Now().Add(45 * time.Second); count() < n; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("%d appends acknowledged, waiting for %d; failures: %v", acked, n, failures)
			}
		}
	}
	waitFor(10)
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	n := count()
	waitFor(n + 10)
	close(stop)
	<-done

	mu.Lock()
	defer mu.Unlock()
	if len(failures) == 0 {
		t.Fatal("no call failed while PostgreSQL restarted: nothing was tested")
	}
	for _, f := range failures {
		if !strings.HasPrefix(f, "UNAVAILABLE: ") {
			t.Fatalf("a call during the restart failed with %q, want UNAVAILABLE", f)
		}
	}
	var want []string
	for i := range acked {
		want = append(want, strconv.Itoa(i))
	}
	if got := s.must("", "get", "busy", "log"); strings.Join(strings.Fields(got), "") != "["+strings.Join(want, ",")+"]" {
		t.Fatalf("log %s after %d acknowledged appends: one was lost or applied twice", got, acked)
	}
	if out := s.must("", "check", "busy"); !strings.HasSuffix(out, "ok\n") {
		t.Fatalf("check: %s", out)
	}
	t.Logf("%d appends acknowledged; %d calls failed during the restart, e.g. %q", acked, len(failures), failures[0])
}

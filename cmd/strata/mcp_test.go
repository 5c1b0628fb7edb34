package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioMCP runs `strata mcp ARGS` on s's data directory through the CLI entry point and connects the go-sdk client
// (named client, version 1) to it over pipes, as an agent's client does over a subprocess's stdin and stdout. stop ends the session, waits for
// the server, fails t unless it exited 0, and returns what it wrote to stderr.
func (s *session) stdioMCP(t *testing.T, ctx context.Context, client string, args ...string) (cs *mcpsdk.ClientSession, stop func() string) {
	t.Helper()
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	done := make(chan int, 1)
	var stderr strings.Builder
	go func() {
		done <- runIn(s.e, append([]string{"--data", s.data, "mcp"}, args...), serverIn, serverOut, &stderr)
		serverOut.Close()
	}()
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: client, Version: "1"}, nil).Connect(ctx,
		&mcpsdk.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs, func() string {
		t.Helper()
		cs.Close()
		clientOut.Close()
		if code := <-done; code != 0 {
			t.Fatalf("strata mcp exited %d: %s", code, stderr.String())
		}
		return stderr.String()
	}
}

// TestMCPOverStdio runs `strata mcp --writes branches` through the CLI entry point and talks to it with the go-sdk
// client over pipes, as an agent's client would over a subprocess's stdin and stdout.
func TestMCPOverStdio(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, stop := s.stdioMCP(t, ctx, "test", "--writes", "branches")
	names := toolNames(t, ctx, cs)
	if !names["read"] || !names["create_branch"] || !names["put"] {
		t.Fatalf("tools: %v", names)
	}
	call := func(name string, args string) *mcpsdk.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	text := func(r *mcpsdk.CallToolResult) string { return r.Content[0].(*mcpsdk.TextContent).Text }
	// Read what the CLI wrote; the agent works on a branch; main is protected.
	if r := call("read", `{"database":"shop","resource":"doc","path":"/a"}`); r.IsError || !strings.Contains(text(r), "2") {
		t.Fatalf("read: %s", text(r))
	}
	call("create_branch", `{"database":"shop","name":"agent-work"}`)
	if r := call("update", `{"database":"shop","resource":"doc","path":"/a","value":12345678901234567891,"branch":"agent-work"}`); r.IsError {
		t.Fatalf("update on a branch: %s", text(r))
	}
	// A write to main is refused, or becomes a plan waiting for a person's confirmation; either way nothing is
	// written (checked below).
	if r := call("update", `{"database":"shop","resource":"doc","path":"/a","value":1}`); !strings.HasPrefix(text(r), "CONFIRMATION_REQUIRED") && !strings.Contains(text(r), `"confirmation_required":true`) {
		t.Fatalf("a write to main must need confirmation: %s", text(r))
	}
	stop()
	// The person at the terminal sees the agent's change on its branch, exact, and main untouched.
	if got := s.must("", "get", "shop", "doc/a", "--at", "agent-work"); got != "12345678901234567891\n" {
		t.Fatalf("branch value %q", got)
	}
	if got := s.must("", "get", "shop", "doc/a"); got != "2\n" {
		t.Fatalf("main value %q", got)
	}
}

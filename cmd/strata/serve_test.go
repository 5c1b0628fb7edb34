package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// lockedBuffer is a bytes.Buffer safe for one writer and one reader.
type lockedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int // calls of Write
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// served is a `strata serve` running in-process on a random loopback port.
type served struct {
	url    string // http://127.0.0.1:PORT/mcp
	host   string // 127.0.0.1:PORT
	stderr *lockedBuffer
	stop   func() error
}

// startServe runs `strata serve --listen 127.0.0.1:0 ARGS...` on the session's data directory until the test ends
// (or stop is called), and returns where it listens.
func startServe(t *testing.T, s *session, extra ...string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	root := newRootCommand(s.e)
	root.SetArgs(append([]string{"--data", s.data, "serve", "--listen", "127.0.0.1:0"}, extra...))
	pr, pw := io.Pipe()
	root.SetIn(strings.NewReader(""))
	root.SetOut(io.Discard)
	root.SetErr(pw)
	done := make(chan error, 1)
	go func() {
		_, err := root.ExecuteContextC(ctx)
		pw.Close()
		done <- err
	}()
	sv := &served{stderr: &lockedBuffer{}}
	br := bufio.NewReader(pr)
	line, err := br.ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("strata serve did not start: %v (%q, %v)", err, line, <-done)
	}
	sv.stderr.Write([]byte(line))
	copied := make(chan struct{}) // the server's last lines are in sv.stderr once stop returns
	go func() { io.Copy(sv.stderr, br); close(copied) }()
	i := strings.LastIndex(line, "://") // the data location may be a URL too
	j := strings.Index(line, "/mcp")
	if i < 0 || j < i {
		cancel()
		t.Fatalf("no address in %q", line)
	}
	scheme := line[strings.LastIndex(line[:i], " ")+1 : i]
	sv.host = line[i+len("://") : j]
	sv.url = scheme + "://" + sv.host + "/mcp"
	var once sync.Once
	var stopErr error
	sv.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case stopErr = <-done:
				<-copied // the pipe is closed: the copy ends at EOF
			case <-time.After(20 * time.Second):
				t.Error("strata serve did not stop within 20 s of its context ending")
			}
		})
		return stopErr
	}
	t.Cleanup(func() {
		if err := sv.stop(); err != nil {
			t.Errorf("strata serve: %v", err)
		}
	})
	return sv
}

func TestServeRefusesNonLoopback(t *testing.T) {
	s := newSession(t, false, nil)
	for _, addr := range []string{"0.0.0.0:7411", ":7411", "192.0.2.1:7411", "[::]:7411", "example.com:7411"} {
		_, errOut, code := s.run("", "serve", "--listen", addr)
		if code != exitUsage || !strings.Contains(errOut, "loopback") || !strings.Contains(errOut, "tokens") {
			t.Errorf("--listen %s: exit %d, stderr %q; want a usage error naming loopback and tokens", addr, code, errOut)
		}
	}
	if _, errOut, code := s.run("", "serve", "--writes", "yes"); code != exitUsage || !strings.Contains(errOut, "unknown write mode") {
		t.Errorf("--writes yes: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := s.run("", "serve", "--listen", "nonsense"); code != exitUsage {
		t.Errorf("--listen nonsense: exit %d, stderr %q", code, errOut)
	}
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestServeRefusesWebPages holds docs/security.md T9 and the body cap: what a web page (or DNS rebinding) could send is
// refused with 403 before it is parsed, a body over 4 MiB with 413, and the server goes on serving.
func TestServeRefusesWebPages(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	sv := startServe(t, s)
	post := func(body io.Reader, mod func(r *http.Request)) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, sv.url, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if mod != nil {
			mod(req)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<16))
		return res.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name string
		mod  func(r *http.Request)
	}{
		{"evil Host", func(r *http.Request) { r.Host = "evil.example:80" }},
		{"rebound Host", func(r *http.Request) { r.Host = "attacker.example:" + strings.Split(sv.host, ":")[1] }},
		{"evil Origin", func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") }},
		{"Origin null", func(r *http.Request) { r.Header.Set("Origin", "null") }},
		{"Origin on another port", func(r *http.Request) { r.Header.Set("Origin", "http://127.0.0.1:1") }},
		{"cross-site fetch", func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }},
		{"same-site fetch", func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "same-site") }},
		{"text/plain body", func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }},
		{"form body", func(r *http.Request) { r.Header.Set("Content-Type", "application/x-www-form-urlencoded") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := post(strings.NewReader(initializeBody), tc.mod); code != http.StatusForbidden {
				t.Errorf("status %d, want 403: %s", code, body)
			}
		})
	}
	// A body over the cap: refused on its declared length, and when streamed without one.
	huge := strings.Repeat("x", 5<<20)
	if code, body := post(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"`+huge+`"}}`), nil); code != http.StatusRequestEntityTooLarge {
		t.Errorf("huge body: status %d, want 413: %.200s", code, body)
	}
	if code, body := post(io.MultiReader(strings.NewReader(`{"x":"`), strings.NewReader(huge)), func(r *http.Request) { r.ContentLength = -1 }); code != http.StatusRequestEntityTooLarge {
		t.Errorf("huge chunked body: status %d, want 413: %.200s", code, body)
	}
	// Still serving; the legitimate request, with this server's own Origin, passes.
	if code, body := post(strings.NewReader(initializeBody), func(r *http.Request) { r.Header.Set("Origin", "http://"+sv.host) }); code != http.StatusOK {
		t.Errorf("initialize: status %d: %s", code, body)
	}
	if code, body := post(strings.NewReader(initializeBody), func(r *http.Request) { r.Host = "localhost:" + strings.Split(sv.host, ":")[1] }); code != http.StatusOK {
		t.Errorf("initialize with Host localhost: status %d: %s", code, body)
	}
}

// TestServeClient talks to a running `strata serve --writes branches` with the go-sdk client over Streamable HTTP.
func TestServeClient(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	sv := startServe(t, s, "--writes", "branches")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: sv.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := toolNames(t, ctx, cs)
	if !names["read"] || !names["put"] || !names["create_branch"] {
		t.Fatalf("tools: %v", names)
	}
	call := func(name, args string) (*mcpsdk.CallToolResult, string) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res, res.Content[0].(*mcpsdk.TextContent).Text
	}
	if r, text := call("read", `{"database":"shop","resource":"doc","path":"/a"}`); r.IsError || !strings.Contains(text, "2") {
		t.Fatalf("read: %s", text)
	}
	call("create_branch", `{"database":"shop","name":"agent-work"}`)
	if r, text := call("update", `{"database":"shop","resource":"doc","path":"/a","value":12345678901234567891,"branch":"agent-work"}`); r.IsError {
		t.Fatalf("update: %s", text)
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	// Shutting down is clean.
	if err := sv.stop(); err != nil {
		t.Fatalf("strata serve: %v", err)
	}
	if got := sv.stderr.String(); !strings.Contains(got, "strata serve: stopped") {
		t.Errorf("stderr: %q", got)
	}
	if got := s.must("", "get", "shop", "doc/a", "--at", "agent-work"); got != "12345678901234567891\n" {
		t.Fatalf("branch value %q", got)
	}
}

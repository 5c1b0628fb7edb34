package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/transport"
)

// docs/security.md T13: hostile bytes on both transports get the right JSON-RPC error or HTTP status, and the server
// goes on serving.

// TestServeHostileRequests feeds the HTTP handler malformed and oversized requests, each followed by a good one.
func TestServeHostileRequests(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	sv := startServe(t, s, "--token-file", tokenFile(t, "alice "+aliceToken))
	fresh := newRawClient(t, sv.url, aliceToken)
	inSession := newRawClient(t, sv.url, aliceToken)
	inSession.initialize()
	deep := strings.Repeat("[", 10_001) + strings.Repeat("]", 10_001)
	for _, tc := range []struct {
		name    string
		c       *rawClient
		body    string
		mod     func(r *http.Request)
		status  int
		rpcCode string // a JSON-RPC error code the body must carry, if any
	}{
		{"bad JSON", fresh, `{"jsonrpc":"2.0","id":1,"method":`, nil, http.StatusBadRequest, ""},
		{"bad JSON in a session", inSession, `{"jsonrpc":"2.0","id":1,"method":`, nil, http.StatusBadRequest, ""},
		{"not an object", inSession, `"hello"`, nil, http.StatusBadRequest, ""},
		{"empty body", inSession, ``, nil, http.StatusBadRequest, ""},
		{"NUL bytes", inSession, "\x00\x00\x00", nil, http.StatusBadRequest, ""},
		{"invalid UTF-8", inSession, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}", nil, http.StatusBadRequest, ""},
		{"10,001-deep nesting", inSession, `{"jsonrpc":"2.0","id":1,"method":"ping","params":` + deep + `}`, nil, http.StatusBadRequest, ""},
		{"10,001-deep tool arguments", inSession, toolCall(1, "read", `{"database":"shop","resource":"doc","x":`+deep+`}`), nil, http.StatusBadRequest, ""},
		{"duplicate keys", inSession, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","name":"nope","arguments":{"database":"shop","resource":"doc"}}}`, nil, http.StatusBadRequest, ""},
		{"duplicate argument keys", inSession, toolCall(1, "read", `{"database":"shop","database":"other","resource":"doc"}`), nil, http.StatusOK, ""},
		{"unknown method", inSession, `{"jsonrpc":"2.0","id":1,"method":"no/such/method"}`, nil, http.StatusBadRequest, ""},
		{"unknown tool", inSession, toolCall(1, "no_such_tool", `{}`), nil, http.StatusOK, "-32602"},
		{"ping", inSession, `{"jsonrpc":"2.0","id":"p","method":"ping"}`, nil, http.StatusOK, ""},
		{"wrong jsonrpc version", inSession, `{"jsonrpc":"1.0","id":1,"method":"ping"}`, nil, http.StatusBadRequest, ""},
		{"5 MB body", inSession, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("x", 5<<20) + `"}}`, nil, http.StatusRequestEntityTooLarge, ""},
		{"5 MB chunked body", inSession, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("x", 5<<20) + `"}}`, func(r *http.Request) { r.ContentLength = -1 }, http.StatusRequestEntityTooLarge, ""},
		{"text/plain", inSession, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }, http.StatusForbidden, ""},
		{"no content type", inSession, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, func(r *http.Request) { r.Header.Del("Content-Type") }, http.StatusForbidden, ""},
		{"accept only JSON", inSession, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, func(r *http.Request) { r.Header.Set("Accept", "application/json") }, http.StatusBadRequest, ""},
		{"PUT", inSession, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, func(r *http.Request) { r.Method = http.MethodPut }, http.StatusMethodNotAllowed, ""},
		{"two session ids", inSession, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, func(r *http.Request) { r.Header.Add("Mcp-Session-Id", "other") }, http.StatusBadRequest, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.c.post(tc.body, tc.mod)
			if r.code != tc.status {
				t.Errorf("status %d, want %d: %.300s", r.code, tc.status, r.body)
			}
			if tc.rpcCode != "" && !strings.Contains(r.body, `"code":`+tc.rpcCode) {
				t.Errorf("body %.300s: want JSON-RPC error %s", r.body, tc.rpcCode)
			}
			// Still serving, in the session and out of it.
			if g := inSession.post(toolCall(2, "read", `{"database":"shop","resource":"doc","path":"/a"}`), nil); g.code != http.StatusOK || !strings.Contains(g.body, `"result"`) || strings.Contains(g.body, `"isError":true`) {
				t.Fatalf("a good call afterwards: %d %.300s", g.code, g.body)
			}
		})
	}
	if r := newRawClient(t, sv.url, aliceToken).post(initializeBody, nil); r.code != http.StatusOK {
		t.Fatalf("initialize afterwards: %d %s", r.code, r.body)
	}
}

// TestServeSlowClients: a client sending its headers, or its body, slower than the server's timeouts is cut off,
// and other clients are served meanwhile.
func TestServeSlowClients(t *testing.T) {
	oldHeader, oldBody := transport.ReadHeaderTimeout, transport.BodyReadTimeout
	transport.ReadHeaderTimeout, transport.BodyReadTimeout = 300*time.Millisecond, 500*time.Millisecond
	t.Cleanup(func() { transport.ReadHeaderTimeout, transport.BodyReadTimeout = oldHeader, oldBody })
	s := newSession(t, false, nil)
	s.setup()
	sv := startServe(t, s, "--token-file", tokenFile(t, "alice "+aliceToken))

	// trickle sends head then body a byte every 50 ms, and reports what the server answered and when it hung up.
	trickle := func(head, body string, slowHead bool) (status string, cut time.Duration) {
		conn, err := net.Dial("tcp", sv.host)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		got := make(chan string, 1)
		go func() {
			line, _ := bufio.NewReader(conn).ReadString('\n')
			got <- line
		}()
		send := func(s string, slow bool) bool {
			if !slow {
				_, err := io.WriteString(conn, s)
				return err == nil
			}
			for i := range len(s) {
				select {
				case line := <-got:
					got <- line
					return false
				case <-time.After(50 * time.Millisecond):
				}
				if _, err := conn.Write([]byte{s[i]}); err != nil {
					return false
				}
			}
			return true
		}
		if send(head, slowHead) {
			send(body, true)
		}
		select {
		case line := <-got:
			return strings.TrimSpace(line), time.Since(start)
		case <-time.After(10 * time.Second):
			return "still open after 10 s", time.Since(start)
		}
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"slow","version":"1"}}}`
	head := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", sv.host, aliceToken, len(body))

	done := make(chan struct{})
	go func() {
		defer close(done)
		// Meanwhile, others are served.
		for range 5 {
			if r, err := newRawClient(t, sv.url, aliceToken).do(initializeBody, nil); err != nil || r.code != http.StatusOK {
				t.Errorf("a normal client during the slow ones: %v %d", err, r.code)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	// Headers byte by byte (about 10 s to send them all): cut at the header timeout, without an answer.
	status, cut := trickle(head, body, true)
	if strings.HasPrefix(status, "HTTP/1.1 2") || cut > 3*time.Second {
		t.Errorf("slow headers: %q after %v; want the connection cut after about 300 ms", status, cut)
	}
	// Body byte by byte: refused at the body timeout.
	status, cut = trickle(head, body, false)
	if strings.HasPrefix(status, "HTTP/1.1 2") || cut > 4*time.Second {
		t.Errorf("slow body: %q after %v; want a refusal after about 500 ms", status, cut)
	}
	t.Logf("slow body answered %q after %v", status, cut)
	<-done
	if r := newRawClient(t, sv.url, aliceToken).post(initializeBody, nil); r.code != http.StatusOK {
		t.Fatalf("initialize afterwards: %d %s", r.code, r.body)
	}
}

// stdioServer runs `strata mcp` in-process on a fresh data directory; send writes a line; answers are read from
// lines.
type stdioServer struct {
	in    *io.PipeWriter
	lines chan string
	done  chan int
}

func startStdio(t *testing.T) *stdioServer {
	s := newSession(t, false, nil)
	serverIn, in := io.Pipe()
	out, serverOut := io.Pipe()
	ss := &stdioServer{in: in, lines: make(chan string, 1024), done: make(chan int, 1)}
	go func() {
		ss.done <- runIn(s.e, []string{"--data", s.data, "mcp"}, serverIn, serverOut, io.Discard)
		serverOut.Close()
	}()
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			select {
			case ss.lines <- sc.Text():
			default: // nobody listens: drop
			}
		}
		io.Copy(io.Discard, out)
		close(ss.lines)
	}()
	return ss
}

// await waits for an answer containing want.
func (ss *stdioServer) await(want string, timeout time.Duration) (string, bool) {
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-ss.lines:
			if !ok {
				return "", false
			}
			if strings.Contains(line, want) {
				return line, true
			}
		case <-deadline:
			return "", false
		}
	}
}

const finalInitialize = `{"jsonrpc":"2.0","id":"final-init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestMCPStdioBadLines: each bad line gets its JSON-RPC error and the session goes on.
func TestMCPStdioBadLines(t *testing.T) {
	ss := startStdio(t)
	defer func() {
		ss.in.Close()
		if code := <-ss.done; code != 0 {
			t.Errorf("strata mcp exited %d", code)
		}
	}()
	send := func(line string) {
		t.Helper()
		go ss.in.Write([]byte(line + "\n"))
	}
	for _, tc := range []struct{ name, line, want string }{
		{"bad JSON", `{"jsonrpc":"2.0","id":1,"method":`, `"code":-32700`},
		{"garbage", "\xff\xfe\x00 hello", `"code":-32700`},
		{"deep nesting", strings.Repeat("[", 10_001) + strings.Repeat("]", 10_001), `"code":-32700`},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `"code":-32600`},
		{"not a message", `{"jsonrpc":"2.0","id":5}`, `"id":5,"error":{"code":-32600`},
		{"two values", `{"jsonrpc":"2.0","id":6,"method":"ping"} {"x":1}`, `"code":-32700`},
		{"too long", `{"x":"` + strings.Repeat("x", transport.MaxStdioLine) + `"}`, `"code":-32600`},
		{"ping before initialize", `{"jsonrpc":"2.0","id":"p1","method":"ping"}`, `"id":"p1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			send(tc.line)
			if line, ok := ss.await(tc.want, 10*time.Second); !ok {
				t.Fatalf("no answer with %s (got %q)", tc.want, line)
			}
		})
	}
	send(finalInitialize)
	if line, ok := ss.await(`"id":"final-init"`, 10*time.Second); !ok || !strings.Contains(line, `"result"`) {
		t.Fatalf("initialize after the bad lines: %q", line)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`   {"jsonrpc":"2.0","id":"t1","method":"tools/list"}   `)
	if line, ok := ss.await(`"id":"t1"`, 10*time.Second); !ok || !strings.Contains(line, `"read"`) {
		t.Fatalf("tools/list: %q", line)
	}
}

// FuzzStdioFramer feeds arbitrary bytes to `strata mcp` as lines of stdin: no panic, and an initialize that follows
// still gets its answer.
func FuzzStdioFramer(f *testing.F) {
	for _, seed := range []string{
		"",
		"{",
		"\x00\xff\xfe",
		"[]",
		"null",
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"} trailing`,
		`{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"method":"initialize"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":99,"result":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read"}}`,
		finalInitialize + "\n" + finalInitialize,
		strings.Repeat("[", 10_001),
		"\n\n\r\n  \t\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ss := startStdio(t)
		go func() {
			ss.in.Write(data)
			ss.in.Write([]byte("\n" + finalInitialize + "\n"))
		}()
		if _, ok := ss.await(`"id":"final-init"`, 20*time.Second); !ok {
			t.Fatalf("no answer to the initialize after %q", data)
		}
		ss.in.Close()
		select {
		case <-ss.done:
		case <-time.After(20 * time.Second):
			t.Fatal("strata mcp did not end when its input closed")
		}
	})
}

// TestMCPStdioAnswersBeforeEOF: requests piped in and stdin closed at once (strata mcp < requests.jsonl) are all
// answered, and the write among them is made, before the server ends (found in review: the session ended at the
// input's end and dropped the requests still running, answering nothing).
func TestMCPStdioAnswersBeforeEOF(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"put","arguments":{"database":"shop","resource":"piped","value":{"n":1},"branch":"work-piped"}}}`,
		`{"jsonrpc":"2.0","id":"q","method":"tools/call","params":{"name":"query","arguments":{"database":"shop","resource":"doc","query":"[range(300000)] | length"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"create_branch","arguments":{"database":"shop","name":"work-piped"}}}`,
	}, "\n") + "\n"
	out, errOut, code := s.run(in, "mcp", "--writes", "on")
	if code != 0 {
		t.Fatalf("strata mcp exited %d: %s", code, errOut)
	}
	for _, id := range []string{`"id":1,`, `"id":2,`, `"id":"q",`, `"id":4,`} {
		if !strings.Contains(out, id) {
			t.Errorf("no answer to %s in:\n%s", id, out)
		}
	}
	if !strings.Contains(out, "300000") {
		t.Errorf("the query's answer is missing:\n%s", out)
	}
}

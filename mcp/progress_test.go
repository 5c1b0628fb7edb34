package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/query"
)

// progressLog records the progress notifications a client receives, by token.
type progressLog struct {
	mu   sync.Mutex
	byTk map[string][]*mcpsdk.ProgressNotificationParams
	ch   chan struct{} // signalled on every notification
}

func newProgressLog() *progressLog {
	return &progressLog{byTk: map[string][]*mcpsdk.ProgressNotificationParams{}, ch: make(chan struct{}, 1000)}
}

func (l *progressLog) handle(_ context.Context, req *mcpsdk.ProgressNotificationClientRequest) {
	l.mu.Lock()
	k := fmt.Sprint(req.Params.ProgressToken)
	l.byTk[k] = append(l.byTk[k], req.Params)
	l.mu.Unlock()
	select {
	case l.ch <- struct{}{}:
	default:
	}
}

func (l *progressLog) get(token string) []*mcpsdk.ProgressNotificationParams {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*mcpsdk.ProgressNotificationParams(nil), l.byTk[token]...)
}

func (l *progressLog) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ps := range l.byTk {
		n += len(ps)
	}
	return n
}

// progressHarness is a writable server whose engine allows a query a whole minute, with a database shop, and a
// client that records progress notifications.
func progressHarness(t *testing.T, ended chan<- string) (*harness, *progressLog) {
	t.Helper()
	e, err := query.New(query.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	log := newProgressLog()
	h := newHarnessWith(t, t.TempDir(), Config{Writes: gate.WritesOn, Protected: []string{}, Engine: e,
		afterHandler: func(tool string) {
			if ended != nil {
				ended <- tool
			}
		}},
		&mcpsdk.ClientOptions{ProgressNotificationHandler: log.handle})
	h.ok("create_database", `{"database":"shop"}`)
	h.ok("put", `{"database":"shop","resource":"r","value":{"a":1}}`)
	return h, log
}

// withToken is a tool call that asks for progress with token.
func withToken(name, args, token string) *mcpsdk.CallToolParams {
	p := &mcpsdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)}
	if token != "" {
		p.SetProgressToken(token)
	}
	return p
}

func TestProgressAndCancel(t *testing.T) {
	ended := make(chan string, 100)
	h, log := progressHarness(t, ended)
	for len(ended) > 0 { // create_database and put
		<-ended
	}

	// A query that loops far longer than the test (bounded: the engine's deadline is a minute away).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type answer struct {
		res *mcpsdk.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	start := time.Now()
	go func() {
		res, err := h.cs.CallTool(ctx, withToken("query", `{"database":"shop","query":"reduce range(1e12) as $i (0; . + 1)"}`, "slow"))
		done <- answer{res, err}
	}()

	// At least two notifications while it runs, the first at once and then every 250 ms.
	deadline := time.After(10 * time.Second)
	for len(log.get("slow")) < 2 {
		select {
		case a := <-done:
			t.Fatalf("the query returned before two progress notifications: %+v, %v", a.res, a.err)
		case <-deadline:
			t.Fatalf("%d progress notifications after 10 s, want at least 2", len(log.get("slow")))
		case <-log.ch:
		}
	}
	ps := log.get("slow")
	for i, p := range ps {
		if p.Message != "query: running" || p.Total != 0 {
			t.Errorf("notification %d: message %q, total %v", i, p.Message, p.Total)
		}
		if i > 0 && p.Progress <= ps[i-1].Progress {
			t.Errorf("progress does not increase: %v then %v", ps[i-1].Progress, p.Progress)
		}
	}

	// The client cancels: the call ends promptly, long before the query's own deadline.
	cancel()
	cancelled := time.Now()
	select {
	case a := <-done:
		if a.err == nil || !errors.Is(a.err, context.Canceled) {
			t.Errorf("cancelled call: result %+v, error %v; want context.Canceled", a.res, a.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled call did not return within 5 s")
	}
	// On the server, the query's handler returns at the engine's next check, not at its deadline a minute away.
	select {
	case tool := <-ended:
		if tool != "query" {
			t.Errorf("handler %s ended, want query", tool)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server's query handler did not return within 5 s of the cancel")
	}
	t.Logf("ran %v, handler returned %v after cancel", cancelled.Sub(start), time.Since(cancelled))

	// The server stops the query: its notifications stop (one may be in flight), and it goes on serving.
	time.Sleep(600 * time.Millisecond)
	n := len(log.get("slow"))
	time.Sleep(700 * time.Millisecond)
	if m := len(log.get("slow")); m != n {
		t.Errorf("progress notifications went on after the cancel: %d, then %d", n, m)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer ccancel()
	res, err := h.cs.CallTool(cctx, withToken("status", `{}`, ""))
	if err != nil {
		t.Fatalf("status after a cancel: %v", err)
	}
	h.check("status", res)
	if res.IsError {
		t.Errorf("status after a cancel failed: %+v", res)
	}
	// A query still runs after the cancelled one.
	h.ok("query", `{"database":"shop","resource":"r","query":".a"}`)
}

func TestProgressOnlyWhileRunning(t *testing.T) {
	h, log := progressHarness(t, nil)
	before := log.total()
	if before != 0 {
		t.Fatalf("%d progress notifications for calls without a token", before)
	}

	// A fast call with a token: at most the first notification, none after its result.
	res, err := h.cs.CallTool(context.Background(), withToken("status", `{}`, "fast"))
	if err != nil {
		t.Fatal(err)
	}
	h.check("status", res)
	res, err = h.cs.CallTool(context.Background(), withToken("query", `{"database":"shop","resource":"r","query":".a"}`, "fastq"))
	if err != nil {
		t.Fatal(err)
	}
	h.check("query", res)
	time.Sleep(3 * progressInterval)
	for _, tk := range []string{"fast", "fastq"} {
		if ps := log.get(tk); len(ps) > 1 {
			t.Errorf("%s: %d progress notifications for a fast call, want at most 1", tk, len(ps))
		} else if len(ps) == 1 && (ps[0].Progress < 0 || ps[0].Message == "") {
			t.Errorf("%s: first notification %+v", tk, ps[0])
		}
	}
	n := log.total()
	time.Sleep(3 * progressInterval)
	if m := log.total(); m != n {
		t.Errorf("progress notifications after the results: %d, then %d", n, m)
	}

	// Calls without a token get none, fast or slow.
	h.ok("status", `{}`)
	h.ok("query", `{"database":"shop","resource":"r","query":"[range(1000)] | length"}`)
	time.Sleep(3 * progressInterval)
	if m := log.total(); m != n {
		t.Errorf("%d progress notifications for calls without a token", m-n)
	}
}

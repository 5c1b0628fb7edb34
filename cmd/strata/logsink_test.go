package main

import (
	"io"
	"strings"
	"testing"
	"time"

	strataMCP "github.com/strata-db/strata/mcp"
)

// TestLogSink: request lines are gathered into few writes and reach stderr within the flush delay; a warning is
// written at once with the lines before it, in order; the server's own lines (say) come after the log lines logged
// before them; close writes whatever waits.
func TestLogSink(t *testing.T) {
	out := &lockedBuffer{}
	logger, _, _, err := newLogger(&logFlags{format: "json", level: "info"}, out, func(io.Writer) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		logger.Info("request", "n", i)
	}
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(out.String(), "\n") < 100 {
		if time.Now().After(deadline) {
			t.Fatalf("after 5 s, %d of 100 lines were written", strings.Count(out.String(), "\n"))
		}
		time.Sleep(time.Millisecond)
	}
	out.mu.Lock()
	writes := out.writes
	out.mu.Unlock()
	if writes > 10 {
		t.Errorf("100 lines took %d writes", writes)
	}

	logger.Info("before the warning")
	logger.Warn("the warning")
	if s := out.String(); !strings.Contains(s, "before the warning") || !strings.Contains(s, "the warning") ||
		strings.Index(s, "before the warning") > strings.Index(s, "the warning") {
		t.Fatalf("a warning was not written at once, after the line before it:\n%s", s)
	}

	// The text form: say's plain line follows the log lines logged before it.
	text := &lockedBuffer{}
	tl, ts, _, err := newLogger(&logFlags{format: "text", level: "info"}, text, func(io.Writer) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	b := &mcpBackend{logger: tl, logSink: ts}
	tl.Info("request one")
	b.say(text, "strata serve: stopped")
	if s := text.String(); !strings.Contains(s, "request one") || strings.Index(s, "request one") > strings.Index(s, "stopped") {
		t.Fatalf("the server's line came before the log line logged before it:\n%s", s)
	}

	// Size: a burst is written when it reaches logFlushBytes, without waiting.
	burst := &lockedBuffer{}
	bl, _, _, _ := newLogger(&logFlags{format: "json", level: "info"}, burst, func(io.Writer) bool { return false })
	long := strings.Repeat("x", 1000)
	for range 40 {
		bl.Info("request", "pad", long)
	}
	if n := len(burst.String()); n < logFlushBytes {
		t.Fatalf("40 KB logged, %d bytes written at once: want at least %d", n, logFlushBytes)
	}
}

// TestRequestLog: request lines queued by handlers are all written before the server's own line (say) and at close
// (in the order they were queued, except those a full queue made the handler write itself: their times say when);
// a request answered after close is still written.
func TestRequestLog(t *testing.T) {
	out := &lockedBuffer{}
	logger, sink, _, err := newLogger(&logFlags{format: "json", level: "info"}, out, func(io.Writer) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	b := &mcpBackend{logger: logger, logSink: sink, jsonLog: true, requests: newRequestLog(logger, sink)}
	for i := range 3000 { // more than the queue holds: some are written by the caller itself
		b.requests.log(strataMCP.RequestInfo{Method: "tools/call", Tool: "read", Principal: "p", Outcome: "ok", Revision: uint64(i + 1)})
	}
	b.say(out, "strata serve: stopped")
	s := out.String()
	if n := strings.Count(s, `"msg":"request"`); n != 3000 {
		t.Fatalf("%d of 3000 request lines before the server's line", n)
	}
	if strings.LastIndex(s, `"msg":"request"`) > strings.Index(s, "stopped") {
		t.Fatal("a request line came after the server's line")
	}
	b.requests.log(strataMCP.RequestInfo{Method: "tools/call", Tool: "read", Principal: "p", Outcome: "ok", Revision: 9001})
	b.requests.Close()
	b.requests.log(strataMCP.RequestInfo{Method: "tools/call", Tool: "read", Principal: "p", Outcome: "ok", Revision: 9002})
	sink.Flush()
	if s := out.String(); !strings.Contains(s, `"revision":9001`) || !strings.Contains(s, `"revision":9002`) {
		t.Fatalf("a line logged just before or after close is missing:\n%s", s[max(0, len(s)-600):])
	}
}

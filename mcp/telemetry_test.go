package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// observed collects what Config.Observe hears.
type observed struct {
	mu    sync.Mutex
	infos []RequestInfo
}

func (o *observed) observe(ri RequestInfo) { o.mu.Lock(); o.infos = append(o.infos, ri); o.mu.Unlock() }

func (o *observed) take() []RequestInfo {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.infos
	o.infos = nil
	return out
}

// TestObserveRequests: every answered request is told once, with its method, its tool (bounded: a tool the server
// does not have is "unknown"), the principal, the outcome code and the revision a write made.
func TestObserveRequests(t *testing.T) {
	var o observed
	h := newHarness(t, Config{Writes: WritesOn, Principal: "alice", Observe: o.observe})
	o.take() // the handshake and tools/list of the harness
	h.ok("create_database", `{"database":"shop"}`)
	r := h.ok("put", `{"database":"shop","resource":"doc","value":{"a":1}}`)
	h.fail("read", `{"database":"shop","resource":"nope"}`, codeNotFound)
	res, err := h.cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "no_such_tool", Arguments: json.RawMessage(`{}`)})
	if err == nil && !res.IsError {
		t.Fatalf("an unknown tool answered %+v", res)
	}
	if _, err := h.cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	got := o.take()
	want := []string{
		"tools/call create_database alice ok 1", // the database's first revision
		fmt.Sprintf("tools/call put alice ok %d", r.num("revision")),
		"tools/call read alice NOT_FOUND 0",
		"tools/call unknown alice ",
		"tools/list  alice ok 0",
	}
	if len(got) != len(want) {
		t.Fatalf("observed %+v, want %d requests", got, len(want))
	}
	for i, ri := range got {
		line := fmt.Sprintf("%s %s %s %s %d", ri.Method, ri.Tool, ri.Principal, ri.Outcome, ri.Revision)
		if i == 3 {
			// An unknown tool: the go-sdk's answer (a protocol error, or an error result).
			if ri.Tool != UnknownTool || ri.Outcome == "ok" {
				t.Errorf("request %d: %s", i, line)
			}
			continue
		}
		if line != want[i] || ri.Duration <= 0 {
			t.Errorf("request %d: %s (%v), want %s", i, line, ri.Duration, want[i])
		}
	}
}

// TestRequestSpans: with a tracer, each request is a server span named "{mcp.method.name} {tool}" with the MCP
// semantic conventions' attributes; an error result carries error.type = tool_error; a traceparent in
// params._meta makes the span a child of the client's; the commit a put makes is a child span of its request.
func TestRequestSpans(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	h := newHarness(t, Config{Writes: WritesOn, Tracer: tp})
	h.ok("create_database", `{"database":"shop"}`)
	h.ok("put", `{"database":"shop","resource":"doc","value":{"a":1}}`)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	res, err := h.cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "read",
		Arguments: json.RawMessage(`{"database":"shop","resource":"nope"}`),
		Meta:      mcpsdk.Meta{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"}})
	if err != nil || !res.IsError {
		t.Fatalf("read of a missing resource: %v %+v", err, res)
	}
	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range sr.Ended() {
		spans[s.Name()] = s
	}
	attrs := func(s sdktrace.ReadOnlySpan) map[string]string {
		m := map[string]string{}
		for _, kv := range s.Attributes() {
			m[string(kv.Key)] = kv.Value.Emit()
		}
		return m
	}
	put, ok := spans["tools/call put"]
	if !ok {
		t.Fatalf("no span tools/call put among %v", spans)
	}
	a := attrs(put)
	for k, v := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "put",
		"gen_ai.operation.name": "execute_tool", "network.transport": "pipe", "strata.outcome": "ok"} {
		if a[k] != v {
			t.Errorf("put span: %s = %q, want %q (all: %v)", k, a[k], v, a)
		}
	}
	// (mcp.session.id: this client speaks a revision without sessions; cmd/strata's HTTP test sees one.)
	for _, k := range []string{"mcp.protocol.version", "jsonrpc.request.id", "strata.revision"} {
		if a[k] == "" {
			t.Errorf("put span: no %s (all: %v)", k, a)
		}
	}
	if _, ok := a["error.type"]; ok || put.SpanKind().String() != "server" {
		t.Errorf("put span: kind %v, attributes %v", put.SpanKind(), a)
	}
	commit, ok := spans["commit"]
	if !ok || commit.Parent().SpanID() != put.SpanContext().SpanID() {
		t.Errorf("the put's commit is not a child span of its request: %v", spans)
	}
	read := spans["tools/call read"]
	if read == nil {
		t.Fatalf("no span tools/call read among %v", spans)
	}
	if a := attrs(read); a["error.type"] != "tool_error" || a["strata.outcome"] != codeNotFound || read.Status().Code.String() != "Error" {
		t.Errorf("failed read span: status %v, attributes %v", read.Status(), a)
	}
	if got := read.SpanContext().TraceID().String(); got != traceID || read.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("failed read span: trace %s, parent %s; want the client's trace context from params._meta", got, read.Parent().SpanID())
	}
}

// discardSpans takes spans and drops them.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// BenchmarkRequestSpan is what tracing adds to a request: its span made, with the MCP semantic conventions'
// attributes and the request id, ended and handed to a batching processor (the exporter drops it). Compare with
// BenchmarkReadTool, the whole round trip.
func BenchmarkRequestSpan(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardSpans{}))
	defer tp.Shutdown(context.Background())
	tracer := tp.Tracer(tracerName)
	s := &server{cfg: Config{Transport: "stdio"}}
	req := &mcpsdk.CallToolRequest{Params: &mcpsdk.CallToolParamsRaw{Name: "read", Arguments: json.RawMessage(`{}`),
		Meta: mcpsdk.Meta{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}}
	res := &mcpsdk.CallToolResult{}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, span := s.startSpan(ctx, tracer, "tools/call", "read", "", req)
		endSpan(span, res, nil, "ok", 0)
	}
}

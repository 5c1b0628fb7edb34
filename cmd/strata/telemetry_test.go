package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// metricsURL waits for strata serve to say where its metrics are.
func metricsURL(t *testing.T, sv *served) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		out := sv.stderr.String()
		if i := strings.Index(out, "metrics at http://"); i >= 0 {
			rest := out[i+len("metrics at "):]
			return rest[:strings.Index(rest, "/metrics")+len("/metrics")]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("strata serve did not say where its metrics are: %s", sv.stderr.String())
	return ""
}

// scrape reads /metrics: the families by name, and the text as served.
func scrape(t *testing.T, url string) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, res.StatusCode, err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams, string(body)
}

// value is the value of the series of a family with the given labels (a counter's or a gauge's, or a histogram's
// count); 0 when there is no such series.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return 0
}

// httpGet answers a GET: its status and body.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

const (
	valueMarker = "VALUE-MARKER-5417" // in a document: never in a log line
	jqMarker    = "JQ-OUTPUT-MARK-93" // what a jq program outputs: never in a log line
	wrongToken  = "wrong-0123456789abcdefghijklmnopqrstuvwxyzAB"
)

// TestServeMetricsAndLogs is what an operator of strata serve sees: after a known sequence of calls, /metrics has
// moved by exactly that much (tool calls by tool and outcome, their durations, revisions and commits per database
// class, query routes, refused requests, sessions), passes Prometheus' lint, and the JSON log has one line per
// request with neither the right token nor a wrong one, no document value and no jq output. /healthz and /readyz
// answer on both listeners without credentials, and /readyz stops being ready when the data directory goes.
func TestServeMetricsAndLogs(t *testing.T) {
	s := newSession(t, false, nil)
	cfg := writeFile(t, "strata.json", `{"database_classes": {"shop": ["shop"]}}`, 0o600)
	sv := startServe(t, s, "--writes", "on", "--config", cfg, "--token-file", tokenFile(t, "alice "+aliceToken),
		"--metrics-listen", "127.0.0.1:0")
	murl := metricsURL(t, sv)
	base := strings.TrimSuffix(murl, "/metrics")
	for _, u := range []string{"http://" + sv.host + "/healthz", "http://" + sv.host + "/readyz", base + "/healthz", base + "/readyz"} {
		if code, body := httpGet(t, u); code != http.StatusOK || body != "ok\n" {
			t.Errorf("GET %s: %d %q, want 200 ok", u, code, body)
		}
	}

	ctx := context.Background()
	cs := connect(t, ctx, sv.url, aliceToken, nil)
	call := func(name, args string) *mcpsdk.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	call("create_database", `{"database":"shop"}`)
	before, _ := scrape(t, murl)

	call("put", `{"database":"shop","resource":"doc","value":{"note":"`+valueMarker+`","n":1}}`)
	// Overwriting on main makes a plan (--writes on); a large new resource is stored in nodes of its own.
	call("put", `{"database":"shop","resource":"doc","value":{"note":"`+valueMarker+`","n":2}}`)
	call("put", `{"database":"shop","resource":"big","value":"`+strings.Repeat(valueMarker, 2000)+`"}`)
	call("read", `{"database":"shop","resource":"doc"}`)
	call("read", `{"database":"shop","resource":"doc","path":"/n"}`)
	if res := call("read", `{"database":"shop","resource":"nope"}`); !res.IsError {
		t.Fatal("a read of a missing resource succeeded")
	}
	if res := call("query", `{"database":"shop","resource":"doc","query":"\"`+jqMarker+`\""}`); res.IsError {
		t.Fatalf("query: %+v", res.Content)
	}
	// A wrong token is refused (and counted); a session of a protocol revision with sessions stays open.
	wrong := newRawClient(t, sv.url, wrongToken)
	if r := wrong.post(initializeBody, nil); r.code != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %d %s", r.code, r.body)
	}
	session := newRawClient(t, sv.url, aliceToken)
	session.initialize()

	after, text := scrape(t, murl)
	delta := func(name string, labels ...string) float64 {
		return value(after, name, labels...) - value(before, name, labels...)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"strata_mcp_tool_calls_total", []string{"tool", "put", "outcome", "ok"}, 3},
		{"strata_mcp_tool_calls_total", []string{"tool", "read", "outcome", "ok"}, 2},
		{"strata_mcp_tool_calls_total", []string{"tool", "read", "outcome", "NOT_FOUND"}, 1},
		{"strata_mcp_tool_calls_total", []string{"tool", "query", "outcome", "ok"}, 1},
		{"strata_mcp_tool_call_duration_seconds", []string{"tool", "read"}, 3},
		{"strata_mcp_requests_total", []string{"method", "tools/call", "outcome", "ok"}, 6},
		{"strata_plans_created_total", nil, 1},
		{"strata_plans_pending", nil, 1},
		{"strata_revisions_total", []string{"class", "shop"}, 2},
		{"strata_commits_total", []string{"class", "shop", "result", "ok"}, 2},
		{"strata_commit_batch_writes", nil, 2},
		{"strata_store_commit_duration_seconds", []string{"backend", "bolt"}, 3}, // and the plan, saved in a transaction of its own
		{"strata_query_runs_total", []string{"route", "in-process"}, 1},
		{"strata_http_refused_requests_total", []string{"reason", "unauthenticated"}, 1},
		{"strata_mcp_sessions_open", nil, 1},
	} {
		if got := delta(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v moved by %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if delta("strata_written_bytes_total", "class", "shop") <= 0 || value(after, "strata_cache_misses_total", "cache", "node") <= 0 {
		t.Errorf("no bytes written or no node cache lookups counted")
	}
	for _, name := range []string{"strata_build_info", "strata_ready", "go_goroutines", "process_resident_memory_bytes",
		"strata_plans_pending", "strata_query_worker_starts_total", "strata_store_bolt_commit_write_duration_seconds"} {
		if after[name] == nil {
			t.Errorf("no %s in /metrics", name)
		}
	}
	problems, err := promlint.New(strings.NewReader(text)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "strata_") {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}

	// The data directory goes: not ready (the check is made at most once a second).
	if err := os.RemoveAll(s.data); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := httpGet(t, "http://"+sv.host+"/readyz")
		if code == http.StatusServiceUnavailable && body == "not ready\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz with the data directory gone: %d %q", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, _ := httpGet(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while not ready: %d, want 200 (the process serves)", code)
	}
	if err := sv.stop(); err != nil {
		t.Fatal(err)
	}

	// The log: every line JSON; one request line per call; no token, document value or jq output anywhere.
	logs := sv.stderr.String()
	for _, secret := range []string{aliceToken, wrongToken, valueMarker, jqMarker} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds %q:\n%s", secret, logs)
		}
	}
	var requests, puts int
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("a log line that is not JSON: %q", line)
			continue
		}
		if rec["msg"] != "request" {
			continue
		}
		requests++
		if rec["level"] != "INFO" || rec["method"] == nil || rec["principal"] != "alice" || rec["outcome"] == nil || rec["duration_ms"] == nil {
			t.Errorf("request line %v: want level, method, principal, outcome, duration", rec)
		}
		if rec["tool"] == "put" && rec["outcome"] == "ok" && rec["revision"] != nil {
			puts++
		}
	}
	if requests < 8 || puts != 2 {
		t.Errorf("%d request lines, %d of puts with their revision; want one per request:\n%s", requests, puts, logs)
	}
	if !strings.Contains(logs, `"msg":"not ready"`) {
		t.Errorf("the log does not say why the server stopped being ready:\n%s", logs)
	}
}

// TestServeMetricsListen: --metrics-listen is loopback only without tokens, like --listen.
func TestServeMetricsListen(t *testing.T) {
	s := newSession(t, false, nil)
	_, errOut, code := s.run("", "serve", "--metrics-listen", "0.0.0.0:9464")
	if code != exitUsage || !strings.Contains(errOut, "--metrics-listen") || !strings.Contains(errOut, "loopback") {
		t.Errorf("--metrics-listen 0.0.0.0:9464 without tokens: exit %d, %q", code, errOut)
	}
	_, errOut, code = s.run("", "serve", "--log-format", "yaml")
	if code != exitUsage || !strings.Contains(errOut, "--log-format") {
		t.Errorf("--log-format yaml: exit %d, %q", code, errOut)
	}
	_, errOut, code = s.run("", "mcp", "--log-level", "loud")
	if code != exitUsage || !strings.Contains(errOut, "--log-level") {
		t.Errorf("--log-level loud: exit %d, %q", code, errOut)
	}
	bad := newSession(t, false, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"})
	_, errOut, code = bad.run("", "mcp")
	if code != exitUsage || !strings.Contains(errOut, "OTEL_EXPORTER_OTLP_ENDPOINT=collector:4318") {
		t.Errorf("an OTLP endpoint that is not a URL: exit %d, %q", code, errOut)
	}
}

// TestMCPLogText: strata mcp with --log-format text writes the serving line and one line per request as text on
// stderr, and nothing but the protocol on stdout.
func TestMCPLogText(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- runIn(s.e, []string{"--data", s.data, "mcp", "--log-format", "text"}, serverIn, io.MultiWriter(serverOut, &stdout), &stderr)
		serverOut.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcpsdk.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "read", Arguments: json.RawMessage(`{"database":"shop","resource":"doc","path":"/a"}`)}); err != nil || res.IsError {
		t.Fatalf("read: %v %+v", err, res)
	}
	cs.Close()
	clientOut.Close()
	if code := <-done; code != 0 {
		t.Fatalf("strata mcp exited %d: %s", code, stderr.String())
	}
	errOut := stderr.String()
	if !strings.HasPrefix(errOut, "strata mcp: serving ") {
		t.Errorf("stderr does not start with the plain serving line: %q", errOut)
	}
	if !strings.Contains(errOut, "level=INFO msg=request method=tools/call tool=read principal=ada") || !strings.Contains(errOut, "outcome=ok") {
		t.Errorf("no text request line on stderr: %q", errOut)
	}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if !strings.HasPrefix(line, `{"jsonrpc":"2.0"`) {
			t.Errorf("stdout holds a line that is not the protocol: %q", line)
		}
	}
}

// otlpReceiver is a fake OpenTelemetry collector: OTLP/HTTP (protobuf) on loopback, keeping the spans it gets.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	srv   *httptest.Server
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want OTLP/HTTP protobuf at /v1/traces", http.StatusBadRequest)
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		var ex coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &ex); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range ex.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// attrs are a span's attributes as text.
func attrs(s *tracepb.Span) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = fmt.Sprint(v.IntValue)
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = fmt.Sprint(v.BoolValue)
		default:
			m[kv.Key] = kv.Value.String()
		}
	}
	return m
}

// TestServeTraces: with OTEL_EXPORTER_OTLP_ENDPOINT set, each request is a span exported over OTLP/HTTP, named
// "{mcp.method.name} {tool}" with the MCP semantic conventions' attributes (the session of a revision with
// sessions, the JSON-RPC id, the trace context the client sent in params._meta); a failed call carries
// error.type = tool_error; a put's commit is its child span. Without the variable nothing is exported.
func TestServeTraces(t *testing.T) {
	rcv := newOTLPReceiver(t)
	s := newSession(t, false, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.srv.URL})
	sv := startServe(t, s, "--writes", "on")
	c := newRawClient(t, sv.url, "")
	c.initialize()
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	for i, body := range []string{
		toolCall(2, "create_database", `{"database":"shop"}`),
		toolCall(3, "put", `{"database":"shop","resource":"doc","value":{"a":1}}`),
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read","arguments":{"database":"shop","resource":"nope"},` +
			`"_meta":{"traceparent":"00-` + traceID + `-00f067aa0ba902b7-01"}}}`,
	} {
		if r := c.post(body, nil); r.code != http.StatusOK {
			t.Fatalf("call %d: %d %s", i, r.code, r.body)
		}
	}
	if err := sv.stop(); err != nil { // flushes the spans
		t.Fatal(err)
	}
	rcv.mu.Lock()
	spans := map[string]*tracepb.Span{}
	for _, sp := range rcv.spans {
		spans[sp.Name] = sp
	}
	rcv.mu.Unlock()
	put := spans["tools/call put"]
	if put == nil {
		t.Fatalf("no span tools/call put among %v", spans)
	}
	a := attrs(put)
	for k, v := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "put", "gen_ai.operation.name": "execute_tool",
		"mcp.protocol.version": "2025-06-18", "mcp.session.id": c.sid, "jsonrpc.request.id": "3", "network.transport": "tcp"} {
		if a[k] != v {
			t.Errorf("put span: %s = %q, want %q (all: %v)", k, a[k], v, a)
		}
	}
	if put.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("put span kind %v, want server", put.Kind)
	}
	if commit := spans["commit"]; commit == nil || !bytes.Equal(commit.ParentSpanId, put.SpanId) {
		t.Errorf("the put's commit is not a child span of its request (%v)", spans)
	}
	read := spans["tools/call read"]
	if read == nil {
		t.Fatalf("no span tools/call read among %v", spans)
	}
	if a := attrs(read); a["error.type"] != "tool_error" || read.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("failed read span: status %v, attributes %v", read.Status, a)
	}
	if got := fmt.Sprintf("%x", read.TraceId); got != traceID || fmt.Sprintf("%x", read.ParentSpanId) != "00f067aa0ba902b7" {
		t.Errorf("failed read span: trace %s parent %x; want the trace context of params._meta", got, read.ParentSpanId)
	}
	for name, sp := range spans {
		for k, v := range attrs(sp) {
			if strings.Contains(v, `"a":1`) {
				t.Errorf("span %s attribute %s holds a document value: %q", name, k, v)
			}
		}
	}
}

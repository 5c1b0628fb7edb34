package mcp

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/strata-db/strata/audit"
)

// What an operator sees of the requests (docs/design.md §6, README "Operating Strata"): one receiving middleware,
// around the audit's, tells Config.Observe of every request once it is answered (the request log and the metrics
// of the binary hang there), and, with Config.Tracer, makes each request a span following OpenTelemetry's MCP
// semantic conventions: named "{mcp.method.name} {tool}", a child of the trace context the client sent in
// params._meta (traceparent), with error.type = tool_error on an isError result. Commits, queries and diffs are
// child spans of it (packages snapshots, query and gate). Nothing here reads or records arguments or results: no
// document value, no jq program or its output, no token.

// RequestInfo is what Config.Observe hears of one answered request.
type RequestInfo struct {
	// Method is the MCP method: tools/call, resources/read, initialize, tools/list, ...
	Method string
	// Tool is, for tools/call, the tool (UnknownTool when the server has no tool of that name), for prompts/get the
	// prompt (or UnknownTool); otherwise empty. Its values are bounded: it can be a metric's label.
	Tool      string
	Principal string
	// Outcome is how the request ended: ok, an error code (NOT_FOUND, ...), INPUT_REQUIRED (a confirmation
	// asked of the client's user), PROTOCOL_ERROR or INTERNAL. Bounded too.
	Outcome string
	// Revision is the revision a write made (0 for none); Database the database the call named, if any (audited
	// methods only).
	Revision uint64
	Database string
	Duration time.Duration
}

// UnknownTool is RequestInfo.Tool for a call of a tool (or prompt) the server does not have.
const UnknownTool = "unknown"

// requestNote carries the audit record of a request out of the audit middleware to the telemetry one.
type requestNote struct{ rec audit.Record }

type noteKey struct{}

// noteRecord hands the request's audit record to the telemetry middleware around, if there is one.
func noteRecord(ctx context.Context, rec audit.Record) {
	if n, ok := ctx.Value(noteKey{}).(*requestNote); ok {
		n.rec = rec
	}
}

const tracerName = "github.com/strata-db/strata/mcp"

// metaPropagator reads the W3C trace context and baggage a client puts in params._meta (unprefixed keys, as
// SEP-414 and the semantic conventions say).
var metaPropagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// telemetryMiddleware observes and traces every request (see above). It is installed only when Config.Observe or
// Config.Tracer is set.
func (s *server) telemetryMiddleware(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
	var tracer trace.Tracer
	if s.cfg.Tracer != nil {
		tracer = s.cfg.Tracer.Tracer(tracerName)
	}
	known := map[string]bool{}
	for _, t := range s.tools {
		known[t.name] = true
	}
	for _, p := range prompts {
		known["prompt "+p.name] = true
	}
	return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
		if strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req) // not requests: no answer, nothing to time
		}
		start := time.Now()
		target, resourceURI := "", ""
		switch p := req.GetParams().(type) {
		case *mcpsdk.CallToolParamsRaw:
			target = UnknownTool
			if p != nil && known[p.Name] {
				target = p.Name
			}
		case *mcpsdk.GetPromptParams:
			target = UnknownTool
			if p != nil && known["prompt "+p.Name] {
				target = p.Name
			}
		case *mcpsdk.ReadResourceParams:
			resourceURI = p.URI
		case *mcpsdk.SubscribeParams:
			resourceURI = p.URI
		case *mcpsdk.UnsubscribeParams:
			resourceURI = p.URI
		}
		var span trace.Span
		if tracer != nil {
			ctx, span = s.startSpan(ctx, tracer, method, target, resourceURI, req)
		}
		note := &requestNote{}
		res, err := next(context.WithValue(ctx, noteKey{}, note), method, req)
		outcome := note.rec.Outcome
		if outcome == "" {
			outcome = outcomeOf(res, err) // a method the audit does not record
		}
		if span != nil {
			endSpan(span, res, err, outcome, note.rec.Revision)
		}
		if s.cfg.Observe != nil {
			s.cfg.Observe(RequestInfo{Method: method, Tool: target, Principal: s.actor.Name(), Outcome: outcome,
				Revision: note.rec.Revision, Database: note.rec.Database, Duration: time.Since(start)})
		}
		return res, err
	}
}

// startSpan begins the span of a request: a child of the trace context in params._meta when the client sent one.
func (s *server) startSpan(ctx context.Context, tracer trace.Tracer, method, target, resourceURI string, req mcpsdk.Request) (context.Context, trace.Span) {
	if p := req.GetParams(); p != nil {
		if meta := p.GetMeta(); len(meta) > 0 {
			carrier := propagation.MapCarrier{}
			for _, k := range metaPropagator.Fields() {
				if v, ok := meta[k].(string); ok {
					carrier[k] = v
				}
			}
			if len(carrier) > 0 {
				ctx = metaPropagator.Extract(ctx, carrier)
			}
		}
	}
	name := method
	if target != "" {
		name += " " + target
	}
	attrs := []attribute.KeyValue{attribute.String("mcp.method.name", method)}
	transport := "pipe"
	if s.cfg.Transport == audit.TransportHTTP {
		transport = "tcp"
	}
	attrs = append(attrs, attribute.String("network.transport", transport))
	if ss, ok := req.GetSession().(*mcpsdk.ServerSession); ok && ss != nil {
		if id := ss.ID(); id != "" {
			attrs = append(attrs, attribute.String("mcp.session.id", id))
		}
	}
	if pv, ok := req.(interface{ ProtocolVersion() string }); ok {
		if v := pv.ProtocolVersion(); v != "" {
			attrs = append(attrs, attribute.String("mcp.protocol.version", v))
		}
	}
	if id, ok := requestID(ctx); ok {
		attrs = append(attrs, attribute.String("jsonrpc.request.id", clipAttr(id)))
	}
	switch method {
	case "tools/call":
		attrs = append(attrs, attribute.String("gen_ai.tool.name", target), attribute.String("gen_ai.operation.name", "execute_tool"))
	case "prompts/get":
		attrs = append(attrs, attribute.String("gen_ai.prompt.name", target))
	}
	if resourceURI != "" {
		attrs = append(attrs, attribute.String("mcp.resource.uri", clipAttr(resourceURI)))
	}
	return tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

// maxAttr bounds a span attribute taken from the client's request: a span is queued whole until it is exported.
const maxAttr = 512

func clipAttr(s string) string {
	if len(s) <= maxAttr {
		return s
	}
	return strings.ToValidUTF8(s[:maxAttr], "") + "…"
}

// endSpan records how a request ended: error.type (tool_error for an isError result, the JSON-RPC code for a
// protocol error), Strata's own code, the revision a write made.
func endSpan(span trace.Span, res mcpsdk.Result, err error, outcome string, revision uint64) {
	attrs := []attribute.KeyValue{attribute.String("strata.outcome", outcome)}
	if revision != 0 {
		attrs = append(attrs, attribute.Int64("strata.revision", int64(revision)))
	}
	var je *jsonrpc.Error
	switch tr, _ := res.(*mcpsdk.CallToolResult); {
	case err != nil && errors.As(err, &je):
		code := fmt.Sprint(je.Code)
		attrs = append(attrs, attribute.String("error.type", code), attribute.String("rpc.response.status_code", code))
		span.SetStatus(codes.Error, clipAttr(je.Message))
	case err != nil:
		attrs = append(attrs, attribute.String("error.type", "_OTHER"))
		span.SetStatus(codes.Error, "")
	case tr != nil && tr.IsError:
		attrs = append(attrs, attribute.String("error.type", "tool_error"))
		span.SetStatus(codes.Error, outcome)
	}
	span.SetAttributes(attrs...)
	span.End()
}

// requestID is the JSON-RPC id of the request ctx serves, as text. The go-sdk keeps it in the request's context
// under a key of its own whose type it does not export (idContextKey); that type is found once, by walking a
// request's context with reflect, and the id is then asked for with a key of that type. A go-sdk that stops
// keeping it there leaves the attribute out (TestRequestSpans notices).
func requestID(ctx context.Context) (string, bool) {
	k := idKey.Load()
	if k == nil {
		if idKeyTries.Add(1) > 16 {
			return "", false
		}
		t := findIDKeyType(ctx)
		if t == nil {
			return "", false
		}
		key := reflect.Zero(t).Interface()
		k = &key
		idKey.Store(k)
	}
	id, ok := ctx.Value(*k).(jsonrpc.ID)
	if !ok || !id.IsValid() {
		return "", false
	}
	return fmt.Sprint(id.Raw()), true
}

var (
	idKey      atomic.Pointer[any]
	idKeyTries atomic.Int32
)

func findIDKeyType(ctx context.Context) reflect.Type {
	for c := ctx; c != nil; {
		v := reflect.ValueOf(c)
		if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
			return nil
		}
		e := v.Elem()
		if kf := e.FieldByName("key"); kf.IsValid() && kf.Kind() == reflect.Interface && !kf.IsNil() {
			if t := kf.Elem().Type(); t.Name() == "idContextKey" && t.PkgPath() == "github.com/modelcontextprotocol/go-sdk/mcp" {
				return t
			}
		}
		pf := e.FieldByName("Context")
		if !pf.IsValid() || pf.Kind() != reflect.Interface || pf.IsNil() || !pf.CanInterface() {
			return nil
		}
		c, _ = pf.Interface().(context.Context)
	}
	return nil
}

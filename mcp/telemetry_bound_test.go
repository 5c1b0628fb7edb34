package mcp

import (
	"context"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A client-chosen resource URI is copied whole into the request's span (and into its status description): a 4 MiB
// body makes a multi-MiB span, and the batch exporter's queue holds 2048 of them (gigabytes) while the collector is
// slow or unreachable. Client-supplied span text must be bounded, like metric labels.
func TestSpanAttributesBounded(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	h := newHarness(t, Config{Tracer: tp})
	uri := "strata://shop/" + strings.Repeat("a", 1<<20)
	_, _ = h.cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: uri})
	for _, s := range sr.Ended() {
		if s.Name() != "resources/read" {
			continue
		}
		for _, kv := range s.Attributes() {
			if n := len(kv.Value.Emit()); n > 4096 {
				t.Errorf("span %s: attribute %s holds %d bytes of the client's input", s.Name(), kv.Key, n)
			}
		}
		if n := len(s.Status().Description); n > 4096 {
			t.Errorf("span %s: status description holds %d bytes", s.Name(), n)
		}
		return
	}
	t.Fatal("no resources/read span")
}

package gate

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/strata-db/strata/revision"
)

// A diff is a span of its own under the request that asks for it, when that request is traced (the binary
// configures OpenTelemetry; the library only uses its API). Commits and queries have theirs in packages snapshots
// and query.

const tracerName = "github.com/strata-db/strata/gate"

// diffSpan starts the span of a diff under the caller's, if the caller's is recording; end records the result.
func diffSpan(ctx context.Context) (context.Context, func(*revision.DiffResult, error)) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, func(*revision.DiffResult, error) {}
	}
	ctx, span := parent.TracerProvider().Tracer(tracerName).Start(ctx, "diff")
	return ctx, func(d *revision.DiffResult, err error) {
		if d != nil {
			span.SetAttributes(attribute.Int("strata.diff.operations", len(d.Operations)), attribute.Bool("strata.diff.truncated", d.Truncated))
		}
		if err != nil {
			span.SetStatus(codes.Error, "diff failed")
			span.SetAttributes(attribute.String("error.type", Code(err)))
		}
		span.End()
	}
}

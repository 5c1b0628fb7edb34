package query

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// A query is a child span of the request that runs it, when that request is traced (the binary configures
// OpenTelemetry; the library only uses its API). Without a recording span in the context nothing is made.

const tracerName = "github.com/strata-db/strata/query"

// Run runs one query: it resolves the input, reads the program's leading literal path by pointer, and runs the
// rest in-process or in a worker (see Isolation), returning one page of results. When the caller's span is
// recording, the query is a span "query" under it, with the route it took.
func (e *Engine) Run(ctx context.Context, req Request) (*Result, error) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return e.run(ctx, req)
	}
	ctx, span := parent.TracerProvider().Tracer(tracerName).Start(ctx, "query")
	defer span.End()
	res, err := e.run(ctx, req)
	if res != nil {
		span.SetAttributes(attribute.String("strata.query.route", res.Plan.Route),
			attribute.Bool("strata.query.cached", res.Plan.Cached), attribute.Int("strata.query.results", len(res.Results)))
	}
	if err != nil {
		span.SetStatus(codes.Error, "query failed")
		span.SetAttributes(attribute.String("error.type", errorType(err)))
	}
	return res, err
}

// errorType is a low-cardinality name for a query's error.
func errorType(err error) string {
	switch {
	case errors.Is(err, ErrTimeout):
		return "timeout"
	case errors.Is(err, ErrLimit):
		return "limit"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	case errors.Is(err, ErrQuery):
		return "query_error"
	}
	return "other"
}

package gate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/strata-db/strata/snapshots"
)

// TestDatabaseClasses: a database's class is the first class, in name order, with a matching pattern, else
// "other"; bad classes stop the configuration with a message that names the fault.
func TestDatabaseClasses(t *testing.T) {
	s, err := ParseSettings(strings.NewReader(`{"database_classes": {"prod": ["shop", "billing-*"], "dev": ["*-dev", "shop"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	class := s.DatabaseClass()
	for db, want := range map[string]string{"shop": "dev", "billing-eu": "prod", "cart-dev": "dev", "cart": OtherClass} {
		if got := class(db); got != want {
			t.Errorf("class of %s: %s, want %s", db, got, want)
		}
	}
	for cfg, want := range map[string]string{
		`{"database_classes": {"Prod": ["shop"]}}`: "lower-case letters",
		`{"database_classes": {"prod": []}}`:       "no database pattern",
		`{"database_classes": {"prod": [""]}}`:     "empty pattern",
		`{"database_class": {"prod": ["x"]}}`:      "unknown field",
	} {
		if _, err := ParseSettings(strings.NewReader(cfg)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", cfg, err, want)
		}
	}
}

// TestGateReady: the gate is ready over a working data directory, and not while the audit log cannot be appended
// to (writes are refused then) or the directory is gone.
func TestGateReady(t *testing.T) {
	ctx := context.Background()
	logPath := filepath.Join(t.TempDir(), "audit.log")
	g := fixture(t, logPath)
	if err := g.Ready(ctx); err != nil {
		t.Fatalf("ready: %v", err)
	}
	g.auditFailed.Store(true)
	if err := g.Ready(ctx); !errors.Is(err, snapshots.ErrNotReady) || !strings.Contains(err.Error(), "audit log") {
		t.Fatalf("with the audit log failing: %v", err)
	}
	g.auditFailed.Store(false)
	if err := os.RemoveAll(g.dir.Path()); err != nil {
		t.Fatal(err)
	}
	if err := g.Ready(ctx); !errors.Is(err, snapshots.ErrNotReady) {
		t.Fatalf("with the data directory gone: %v", err)
	}
}

// A plan is not approved or rejected while the audit log cannot record it, as no write runs then (found in security
// review: decisions went through); once the log works again, the decision is made.
func TestNoDecisionWithoutAudit(t *testing.T) {
	ctx := context.Background()
	g := fixture(t, filepath.Join(t.TempDir(), "audit.log"))
	agent := actor(t, g, Principal{Name: "agent", Mode: WritesBranches})
	op := actor(t, g, Operator("op"))
	v, _ := agent.Open(ctx, "shop")
	ov, _ := op.Open(ctx, "shop")
	out, err := v.Write(ctx, Change{Op: OpUpdate, Resource: "customers", Path: "/alice/city", Value: []byte(`"Bergen"`)})
	if err != nil || out.Plan == nil {
		t.Fatalf("a write to main: %+v %v, want a plan", out, err)
	}
	id := out.Plan.Plan.ID
	g.auditFailed.Store(true)
	for _, approve := range []bool{true, false} {
		if _, err := ov.DecidePlan(ctx, id, approve, ""); Code(err) != CodeUnavailable || !strings.Contains(err.Error(), "audit log") {
			t.Fatalf("deciding (approve %v) with the audit log failing: %v, want UNAVAILABLE", approve, err)
		}
	}
	if err := v.DeclinePlan(ctx, out.Plan.Plan, "agent"); Code(err) != CodeUnavailable {
		t.Fatalf("declining with the audit log failing: %v, want UNAVAILABLE", err)
	}
	if p, err := ov.ReviewPlan(ctx, id); err != nil || p.State != snapshots.PlanPending {
		t.Fatalf("the plan after refused decisions: %+v %v, want it pending", p, err)
	}
	g.auditFailed.Store(false)
	if p, err := ov.DecidePlan(ctx, id, true, ""); err != nil || p.State != snapshots.PlanApproved {
		t.Fatalf("deciding once the log works: %+v %v", p, err)
	}
}

// TestEndReturnsRecord: Call.End hands the front end the record it appended, with the revision a write made.
func TestEndReturnsRecord(t *testing.T) {
	ctx := context.Background()
	g := fixture(t, "")
	a := actor(t, g, Principal{Name: "agent", Mode: WritesOn})
	cctx, call := a.Call(ctx, CallInfo{Tool: "put", Database: "shop"})
	v, err := a.Open(cctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.CreateBranch(cctx, "feature-x", snapshots.Ref{}); err != nil {
		t.Fatal(err)
	}
	out, err := v.Write(cctx, Change{Op: "put", Resource: "notes", Value: []byte(`{"n":1}`), Branch: "feature-x"})
	if err != nil {
		t.Fatal(err)
	}
	rec := call.End(OutcomeOf(nil))
	if rec.Revision == 0 || rec.Revision != out.Result.Revision || rec.Tool != "put" || rec.Principal != "agent" || rec.Outcome != "ok" {
		t.Fatalf("record %+v for revision %d", rec, out.Result.Revision)
	}
	if again := call.End("ok"); again.Tool != "" {
		t.Fatalf("a second End returned %+v", again)
	}
}

// TestDiffSpan: under a recording span a diff is a child span "diff" with its size.
func TestDiffSpan(t *testing.T) {
	g := fixture(t, "")
	a := actor(t, g, Principal{Name: "agent"})
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
	v, err := a.Open(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	from, _ := v.Resolve(ctx, snapshots.Ref{Revision: 2})
	to, _ := v.Resolve(ctx, snapshots.Ref{Revision: 5})
	if _, err := v.Diff(ctx, from, to, "orders", nil, nil); err != nil {
		t.Fatal(err)
	}
	parent.End()
	spans := sr.Ended()
	if len(spans) != 2 || spans[0].Name() != "diff" || spans[0].Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("spans %v", spans)
	}
}

package query

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/itchyny/gojq"

	"github.com/strata-db/strata/revision"
)

// BenchmarkSplit measures (h), whole-document jq (docs/benchmarks.md), on programs that split over the array's
// elements (split.go), at n = 1,000, 100,000 and 1,000,000 (the last skipped under -short), each way:
//
//	cold          a fresh engine and a fresh node cache: every node read from the store and decoded
//	fresh-engine  a fresh engine, the node cache warm: what `strata bench` times as "(h) jq"
//	after-commit  the engine that answered the revision before, on a revision one single-field commit later
//	              (a new commit each iteration): what is left when the unchanged nodes' results are reused
//	plain         a fresh engine with splitting off, the node cache warm: how the program ran before split.go
//	gojq          gojq on the document's JSON text, as the gojq command runs it
//
// cpu-ms/op is the CPU time (user and system, every thread, and worker processes that ended) per operation, on
// Unix: steadier than wall time on a shared machine, and it shows the use of both cores (cpu-ms above ns/op).
//
//	go test -run='^$' -bench=BenchmarkSplit -benchtime=5x ./query/
func BenchmarkSplit(b *testing.B) {
	progs := []struct{ name, prog string }{
		{"count", `[.[] | select(.score > 90)] | length`},
		{"stream", `.[] | select(.id == {{N}}) | .name`},
		{"sum", `map(.score) | add`},
	}
	for _, n := range benchN {
		if n >= 1_000_000 && testing.Short() {
			continue
		}
		fx := fixtureFor(b, n)
		for _, p := range progs {
			prog := benchProgram(p.prog, n)
			for _, how := range []string{"cold", "fresh-engine", "after-commit", "plain", "gojq"} {
				b.Run(fmt.Sprintf("%s/n=%d/%s", p.name, n, how), func(b *testing.B) {
					benchSplit(b, fx, prog, how)
				})
			}
		}
	}
}

func benchSplit(b *testing.B, fx *benchFixture, prog, how string) {
	ctx := context.Background()
	warm := revision.New(fx.ns, nil)
	run := func(e *Engine, f *revision.Forest, root revision.Value) *Result {
		r, err := e.Run(ctx, Request{Forest: f, Root: root, Revision: 1, Resource: "users", Program: prog})
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Results) != 1 {
			b.Fatalf("%d results", len(r.Results))
		}
		return r
	}
	newEngine := func(o Options) *Engine {
		o.Timeout = time.Minute
		e, err := New(o)
		if err != nil {
			b.Fatal(err)
		}
		return e
	}
	var code *gojq.Code
	var shared *Engine
	root := fx.root
	switch how {
	case "fresh-engine", "plain":
		e := newEngine(Options{})
		run(e, warm, fx.root) // fill the node cache
		e.Close()
	case "after-commit":
		shared = newEngine(Options{})
		defer shared.Close()
		run(shared, warm, root)
	case "gojq":
		q, err := gojq.Parse(prog)
		if err != nil {
			b.Fatal(err)
		}
		if code, err = gojq.Compile(q); err != nil {
			b.Fatal(err)
		}
	}
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		switch how {
		case "cold":
			e := newEngine(Options{})
			run(e, revision.New(fx.ns, nil), fx.root)
			e.Close()
		case "fresh-engine":
			e := newEngine(Options{})
			run(e, warm, fx.root)
			e.Close()
		case "plain":
			e := newEngine(Options{noSplit: true})
			run(e, warm, fx.root)
			e.Close()
		case "after-commit":
			b.StopTimer()
			c0 := cpuTime()
			el := (i*7919 + 13) % fx.n
			op := revision.Operation{Op: "replace", Path: "/users/" + strconv.Itoa(el) + "/score",
				Value: []byte(strconv.Itoa(90 + i%10)), HasValue: true}
			next, _, err := warm.Apply(ctx, root, []revision.Operation{op})
			if err != nil {
				b.Fatal(err)
			}
			root = next
			cpu0 += cpuTime() - c0
			b.StartTimer()
			r := run(shared, warm, root)
			if r.Plan.Split == "" || r.Plan.Chunks > 3 {
				b.Fatalf("after a commit: %+v", r.Plan)
			}
		case "gojq":
			if err := gojqRun(fx.doc, code, io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
}

package query

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/workload"

	"github.com/itchyny/gojq"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// Benchmarks on the docs/benchmarks.md workload: a resource holding an array of n small objects
// ({"id":i,"name":"user-i","email":"useri@example.com","tags":["a","b"],"score":i%100,"active":true}), n = 1,000,
// 100,000 and 1,000,000 (≈ 96 KB, 9.8 MB and 110 MB of JSON; 1,000,000 is skipped under -short).
//
//	go test -run='^$' -bench=. -benchtime=5x ./query/
//
// Each query runs four ways: Strata cold (a fresh engine and a fresh node cache over the same in-memory node store:
// every node decoded, the input materialised or streamed to a worker), Strata warm (the same engine again: the
// materialised input comes from its cache), and gojq on the same document's JSON text as the gojq command runs it
// (json.Decoder with UseNumber, then the program, then each result marshalled), with the text already in memory.
//
// TestBenchReport (STRATA_QUERY_BENCH=1) prints the medians as a table with ratios.

var benchN = []int{1_000, 100_000, 1_000_000}

// benchQueries are the measured programs. {{N}} is replaced by n-1, {{H}} by n/2.
var benchQueries = []struct {
	name, prog string
}{
	{"whole/bounded", `.[] | select(.id == {{N}}) | .name`},          // a scan in-process
	{"whole/worker", `map(select(.score > 90) | tostring) | length`}, // not bounded, does not split: a worker
	{"point/read", `.[{{H}}].name`},                                  // a pure pointer read
	{"point/pushdown", `.[{{H}}] | {id, name, n: (.tags | length)}`}, // pointer read, then jq on the subtree
}

func benchProgram(p string, n int) string {
	return strings.NewReplacer("{{N}}", fmt.Sprint(n-1), "{{H}}", fmt.Sprint(n/2)).Replace(p)
}

type benchFixture struct {
	n    int
	doc  []byte
	ns   store.NodeStore
	root revision.Value
}

var (
	benchMu       sync.Mutex
	benchFixtures = map[int]*benchFixture{}
)

func userDoc(n int) []byte { return workload.JSON(n) }

func fixtureFor(tb testing.TB, n int) *benchFixture {
	benchMu.Lock()
	defer benchMu.Unlock()
	if fx := benchFixtures[n]; fx != nil {
		return fx
	}
	fx := &benchFixture{n: n, doc: userDoc(n)}
	ms := store.NewMem()
	f := revision.New(ms, nil)
	root, _, err := f.ImportBytes(context.Background(), append(append([]byte(`{"users":`), fx.doc...), '}'))
	if err != nil {
		tb.Fatal(err)
	}
	fx.ns, fx.root = ms, root
	benchFixtures[n] = fx
	return fx
}

// gojqRun is the stand-in for the gojq command on a file: decode the text as gojq does, run, marshal each result.
func gojqRun(doc []byte, code *gojq.Code, w io.Writer) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	iter := code.Run(v)
	for {
		x, ok := iter.Next()
		if !ok {
			break
		}
		if err, ok := x.(error); ok {
			return err
		}
		b, _ := gojq.Marshal(x)
		bw.Write(b)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// benchVariant runs one query one way, once.
func benchVariant(tb testing.TB, fx *benchFixture, prog, how string, warm *Engine) {
	ctx := context.Background()
	switch how {
	case "gojq":
		q, err := gojq.Parse(prog)
		if err != nil {
			tb.Fatal(err)
		}
		code, err := gojq.Compile(q)
		if err != nil {
			tb.Fatal(err)
		}
		if err := gojqRun(fx.doc, code, io.Discard); err != nil {
			tb.Fatal(err)
		}
	case "cold", "warm":
		e := warm
		f := revision.New(fx.ns, nil) // a fresh node cache
		if how == "cold" {
			var err error
			if e, err = New(Options{Timeout: time.Minute}); err != nil {
				tb.Fatal(err)
			}
			defer e.Close()
		}
		r, err := e.Run(ctx, Request{Forest: f, Root: fx.root, Revision: 1, Resource: "users", Program: prog})
		if err != nil {
			tb.Fatal(err)
		}
		if len(r.Results) == 0 {
			tb.Fatal("no result")
		}
	}
}

func BenchmarkQuery(b *testing.B) {
	for _, n := range benchN {
		if n >= 1_000_000 && testing.Short() {
			continue
		}
		fx := fixtureFor(b, n)
		warm, err := New(Options{Timeout: time.Minute, CacheBytes: 2 << 30})
		if err != nil {
			b.Fatal(err)
		}
		for _, q := range benchQueries {
			prog := benchProgram(q.prog, n)
			for _, how := range []string{"strata-cold", "strata-warm", "gojq"} {
				b.Run(fmt.Sprintf("%s/n=%d/%s", q.name, n, how), func(b *testing.B) {
					v := strings.TrimPrefix(how, "strata-")
					if v == "warm" {
						benchVariant(b, fx, prog, v, warm) // fill the cache
					}
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						benchVariant(b, fx, prog, v, warm)
					}
				})
			}
		}
		warm.Close()
	}
}

// TestBenchReport measures every query every way a few times and prints the medians with ratios to gojq.
// STRATA_QUERY_BENCH=1 enables it; STRATA_QUERY_BENCH_N (e.g. "1000,100000") picks sizes, STRATA_QUERY_BENCH_RUNS
// the repetitions (default 5).
func TestBenchReport(t *testing.T) {
	if os.Getenv("STRATA_QUERY_BENCH") == "" {
		t.Skip("set STRATA_QUERY_BENCH=1")
	}
	sizes := benchN
	if s := os.Getenv("STRATA_QUERY_BENCH_N"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			var n int
			fmt.Sscan(f, &n)
			sizes = append(sizes, n)
		}
	}
	runs := 5
	if s := os.Getenv("STRATA_QUERY_BENCH_RUNS"); s != "" {
		fmt.Sscan(s, &runs)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\n| query | n | Strata cold | Strata warm | gojq (library, same JSON) | cold ÷ gojq | warm ÷ gojq | route |\n|---|---|---|---|---|---|---|---|\n")
	for _, n := range sizes {
		fx := fixtureFor(t, n)
		warm, err := New(Options{Timeout: time.Minute, CacheBytes: 2 << 30})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range benchQueries {
			prog := benchProgram(q.prog, n)
			med := map[string]time.Duration{}
			for _, how := range []string{"gojq", "cold", "warm"} {
				if how == "warm" {
					benchVariant(t, fx, prog, how, warm)
				}
				var ds []time.Duration
				for i := 0; i < runs; i++ {
					t0 := time.Now()
					benchVariant(t, fx, prog, how, warm)
					ds = append(ds, time.Since(t0))
				}
				sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
				med[how] = ds[len(ds)/2]
			}
			r, _ := warm.Run(context.Background(), Request{Forest: revision.New(fx.ns, nil), Root: fx.root, Revision: 1, Resource: "users", Program: prog})
			route := r.Plan.Route
			if r.Plan.Pointer != "" {
				route += " " + r.Plan.Pointer
			}
			fmt.Fprintf(&out, "| `%s` | %d | %s | %s | %s | %.2f | %.2f | %s |\n", prog, n, dur(med["cold"]), dur(med["warm"]), dur(med["gojq"]),
				float64(med["cold"])/float64(med["gojq"]), float64(med["warm"])/float64(med["gojq"]), route)
		}
		warm.Close()
	}
	t.Log(out.String())
}

func dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.0f µs", float64(d)/1e3)
}

// TestWorkerOverhead measures what shipping an input to a worker costs: the trivial program length, run in-process
// (IsolateNone; cold: materialised from a fresh node cache; warm: from the engine's cache) and in a worker
// (IsolateAll, a warm pool: the input's JSON streamed from the nodes and decoded in the worker as it arrives).
// STRATA_QUERY_BENCH=1 enables it.
func TestWorkerOverhead(t *testing.T) {
	if os.Getenv("STRATA_QUERY_BENCH") == "" {
		t.Skip("set STRATA_QUERY_BENCH=1")
	}
	sizes := benchN
	if s := os.Getenv("STRATA_QUERY_BENCH_N"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			var n int
			fmt.Sscan(f, &n)
			sizes = append(sizes, n)
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\n| n | JSON | in-process cold | in-process warm | worker, node cache cold | worker, node cache warm |\n|---|---|---|---|---|---|\n")
	for _, n := range sizes {
		fx := fixtureFor(t, n)
		inproc, _ := New(Options{Isolate: IsolateNone, Timeout: time.Minute, CacheBytes: 2 << 30})
		worker, _ := New(Options{Isolate: IsolateAll, Timeout: time.Minute, WorkerMemory: 256 << 20})
		warmForest := revision.New(fx.ns, nil)
		run := func(e *Engine, f *revision.Forest) time.Duration {
			t0 := time.Now()
			r, err := e.Run(context.Background(), Request{Forest: f, Root: fx.root, Revision: 1, Resource: "users", Program: "length"})
			if err != nil || joined(r.Results) != fmt.Sprint(n) {
				t.Fatal(err)
			}
			return time.Since(t0)
		}
		median := func(f func() time.Duration) time.Duration {
			var ds []time.Duration
			for i := 0; i < 5; i++ {
				ds = append(ds, f())
			}
			sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
			return ds[2]
		}
		cold := median(func() time.Duration {
			e, _ := New(Options{Isolate: IsolateNone, Timeout: time.Minute})
			defer e.Close()
			return run(e, revision.New(fx.ns, nil))
		})
		run(inproc, warmForest)
		warm := median(func() time.Duration { return run(inproc, warmForest) })
		run(worker, warmForest)
		wcold := median(func() time.Duration { return run(worker, revision.New(fx.ns, nil)) })
		wwarm := median(func() time.Duration { return run(worker, warmForest) })
		fmt.Fprintf(&out, "| %d | %.1f MB | %s | %s | %s | %s |\n", n, float64(len(fx.doc))/1e6, dur(cold), dur(warm), dur(wcold), dur(wwarm))
		inproc.Close()
		worker.Close()
	}
	t.Log(out.String())
}

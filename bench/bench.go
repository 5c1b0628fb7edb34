// Package bench is Strata's benchmark suite (docs/benchmarks.md "The suite"): the same versioned-document workload run on
// Strata and, side by side, on an in-repo naive baseline (a full JSON copy per revision in bbolt), git, and SQLite,
// PostgreSQL and Dolt when their binaries are on the machine.
//
// The workload: an array of N small objects is loaded, then K revisions each change one field of one random element
// (durably: every system fsyncs its commits). Then: a snapshot and a branch, a read of one element at revision K/2,
// a diff of K/2 against K, the whole document materialised as JSON text at K/2, a whole-document jq query, an MCP
// round trip for a point read (Strata only), and the throughput of 8 concurrent writers over one.
//
// Every figure is the median over Options.Runs runs (each on a fresh store), with the min and max. Within a run, a
// repeated operation's value is the median of its repetitions.
//
//	rep, err := bench.Run(ctx, bench.Options{Quick: true})
//	fmt.Print(rep.Markdown())
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/strata-db/strata/internal/pgserver"
)

// Systems lists every system the suite knows, in the order tables show them.
var Systems = []string{"strata", "baseline", "git", "sqlite", "postgres", "strata-pg", "dolt", "dolt-rows"}

// DefaultN are the document sizes of a full run.
var DefaultN = []int{10_000, 100_000}

// Options configures a run. The zero value runs the full suite on every system found.
type Options struct {
	// N are the numbers of elements of the document (default DefaultN; with Quick, 10,000).
	N []int
	// Systems to run (default: all of Systems; those whose binaries are missing are skipped with a note).
	Systems []string
	// Quick runs N = 10,000 (unless N is set) with fewer repetitions: a smoke test of well under a minute.
	Quick bool
	// Runs per figure (default 3; with Quick, 2).
	Runs int
	// K is the number of single-field revisions after the load (default 100; with Quick, 40).
	K int
	// TempDir is where the stores are made (default os.TempDir()); everything made there is removed.
	TempDir string
	// Progress, if set, receives a progress bar (a terminal).
	Progress io.Writer
	// Log, if set, receives a line per step (when Progress is not a terminal, for example).
	Log io.Writer
}

func (o *Options) fill() error {
	if o.Runs <= 0 {
		o.Runs = 3
		if o.Quick {
			o.Runs = 2
		}
	}
	if o.K <= 0 {
		o.K = 100
		if o.Quick {
			o.K = 40
		}
	}
	if o.K < 2 {
		return fmt.Errorf("bench: K must be at least 2")
	}
	if len(o.N) == 0 {
		o.N = DefaultN
		if o.Quick {
			o.N = []int{10_000}
		}
	}
	for j, n := range o.N {
		if n < 1 {
			return fmt.Errorf("bench: N must be at least 1, not %d", n)
		}
		if slices.Contains(o.N[:j], n) {
			return fmt.Errorf("bench: N = %d given twice", n)
		}
	}
	if len(o.Systems) == 0 {
		o.Systems = Systems
	}
	for _, s := range o.Systems {
		if !slices.Contains(Systems, s) {
			return fmt.Errorf("bench: unknown system %q (known: %s)", s, strings.Join(Systems, ", "))
		}
	}
	if o.TempDir == "" {
		o.TempDir = os.TempDir()
	}
	return nil
}

// reps is how many times a run repeats a cheap operation (snapshot, read, diff, …).
func (o *Options) reps(n int) int {
	switch {
	case o.Quick:
		return 3
	case n >= 1_000_000:
		return 3
	default:
		return 7
	}
}

// concurrentCommits is how many commits each phase of (j) makes, given the system's median commit (ms): as many as
// fit in about 30 s per phase, between 16 and 400 (64 with --quick). A few dozen commits are only a few group
// commits for a fast system, too few for a steady state; hundreds of slow ones would take an hour.
func (o *Options) concurrentCommits(commitMs float64) int {
	most := 400
	if o.Quick {
		most = 64
	}
	if commitMs <= 0 {
		return 16
	}
	return max(16, min(most, int(30_000/commitMs)/8*8))
}

// Measurement is one figure: a sample of one run, or a statistic over the runs.
type Measurement struct {
	Workload string  `json:"workload"` // the operation, such as "commit" (see Metrics)
	System   string  `json:"system"`
	N        int     `json:"n"`
	Metric   string  `json:"metric"` // "median", "min", "max", or "run" (one run's value)
	Value    float64 `json:"value"`
	Unit     string  `json:"unit"`
}

// Report is the outcome of Run.
type Report struct {
	Started  time.Time
	Elapsed  time.Duration
	Machine  string
	N        []int
	K        int
	Runs     int
	Systems  []string          // the systems measured, in table order
	Skipped  map[string]string // system → why it was not measured
	Notes    []string
	samples  map[key][]float64
	Duration map[int]time.Duration // wall time per N
}

type key struct {
	workload, system string
	n                int
}

// Stat is the summary of one figure over the runs.
type Stat struct {
	Median, Min, Max float64
	Runs             int
}

// Summarize returns the median, min and max of xs (the median of an even count is the mean of the middle two).
func Summarize(xs []float64) Stat {
	if len(xs) == 0 {
		return Stat{}
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	m := len(s) / 2
	med := s[m]
	if len(s)%2 == 0 {
		med = (s[m-1] + s[m]) / 2
	}
	return Stat{Median: med, Min: s[0], Max: s[len(s)-1], Runs: len(s)}
}

// Stat returns the summary of a figure, and whether it was measured.
func (r *Report) Stat(workload, system string, n int) (Stat, bool) {
	xs := r.samples[key{workload, system, n}]
	if len(xs) == 0 {
		return Stat{}, false
	}
	return Summarize(xs), true
}

func (r *Report) add(workload, system string, n int, v float64) {
	if r.samples == nil {
		r.samples = map[key][]float64{}
	}
	k := key{workload, system, n}
	r.samples[k] = append(r.samples[k], v)
}

// Measurements returns every figure: each run's value and the median, min and max, in table order.
func (r *Report) Measurements() []Measurement {
	var out []Measurement
	for _, n := range r.N {
		for _, m := range Metrics {
			for _, sys := range r.Systems {
				xs := r.samples[key{m.ID, sys, n}]
				if len(xs) == 0 {
					continue
				}
				st := Summarize(xs)
				out = append(out,
					Measurement{m.ID, sys, n, "median", st.Median, m.Unit},
					Measurement{m.ID, sys, n, "min", st.Min, m.Unit},
					Measurement{m.ID, sys, n, "max", st.Max, m.Unit})
				for _, x := range xs {
					out = append(out, Measurement{m.ID, sys, n, "run", x, m.Unit})
				}
			}
		}
	}
	return out
}

// Metric describes one row of the tables.
type Metric struct {
	ID, Label, Unit string
	HigherBetter    bool
}

// Metrics are the rows of the tables, in order. Times are in milliseconds.
var Metrics = []Metric{
	{ID: "load", Label: "(a) initial load", Unit: "ms"},
	{ID: "load-rate", Label: "(a) load throughput", Unit: "MB/s", HigherBetter: true},
	{ID: "commit", Label: "(b) single-field commit, p50 of K", Unit: "ms"},
	{ID: "new-bytes", Label: "(b) new bytes per revision (stored)", Unit: "B"},
	{ID: "disk", Label: "(c) disk ÷ JSON after K revisions", Unit: "x"},
	{ID: "disk-used", Label: "(c) bbolt pages in use ÷ JSON (file minus preallocation)", Unit: "x"},
	{ID: "snapshot", Label: "(d) create snapshot", Unit: "ms"},
	{ID: "branch", Label: "(d) create branch", Unit: "ms"},
	{ID: "read-old", Label: "(e) read one element at K/2, warm (read once before)", Unit: "ms"},
	{ID: "read-old-cold", Label: "(e) read one element at K/2, its first read", Unit: "ms"},
	{ID: "diff", Label: "(f) diff K/2 against K", Unit: "ms"},
	{ID: "materialise", Label: "(g) export whole document at K/2", Unit: "ms"},
	{ID: "materialise-rate", Label: "(g) export throughput", Unit: "MB/s", HigherBetter: true},
	{ID: "materialise-values", Label: "(g) materialise at K/2 as Go values (baseline: json.Unmarshal)", Unit: "ms"},
	{ID: "jq", Label: "(h) jq `[.[] | select(.score > 90)] | length`", Unit: "ms"},
	{ID: "jq-after-commit", Label: "(h) the same jq one single-field commit later, same engine", Unit: "ms"},
	{ID: "jq-literal", Label: "(h) jq literal path `.[N/2].name`", Unit: "ms"},
	{ID: "mcp", Label: "(i) MCP round trip over pipes (as stdio), point read at K/2", Unit: "ms"},
	{ID: "concurrent", Label: "(j) 8 writers' commits/s ÷ serial", Unit: "x", HigherBetter: true},
}

// system is one store under test. A value serves one run: open, load, K commits, then the measurements.
type system interface {
	// open makes a fresh, empty store in dir.
	open(ctx context.Context, dir string) error
	// load stores the document as revision 0 (d.json is its compact JSON; d.file holds the same bytes).
	load(ctx context.Context, d *doc) error
	// commit makes revision k (1…K): element i's score becomes score. Durable when it returns.
	commit(ctx context.Context, k, i, score int) error
	// diskBytes is what the store occupies on disk.
	diskBytes(ctx context.Context) (int64, error)
	snapshot(ctx context.Context, name string, k int) error
	branch(ctx context.Context, name string, k int) error
	// readElement returns element i at revision k, as JSON.
	readElement(ctx context.Context, k, i int) ([]byte, error)
	// diff returns how many elements differ between revisions a and b.
	diff(ctx context.Context, a, b int) (int, error)
	// export writes the whole document at revision k as JSON text to w.
	export(ctx context.Context, k int, w io.Writer) error
	// jq returns the number of elements whose score is over 90 at revision k (the jq program, or its equivalent).
	jq(ctx context.Context, k int) (int, error)
	close() error
}

// newBytesReporter is a system that knows what a commit stored.
type newBytesReporter interface{ lastNewBytes() int64 }

// usedBytesReporter is a bbolt-based system: it also knows the bytes in use below the file's preallocated tail.
type usedBytesReporter interface{ usedBytes() (int64, error) }

// valueMaterialiser decodes the whole document at a revision into Go values ([]any, map[string]any, …).
type valueMaterialiser interface {
	materialise(ctx context.Context, k int) (any, error)
}

// incrementalQuerier runs the jq program at revision k-1, then again at k (one single-field commit later) in the
// same engine, and returns the second answer and how long the second run took.
type incrementalQuerier interface {
	jqAfterCommit(ctx context.Context, k int) (int, time.Duration, error)
}

// literalQuerier runs a literal-path jq program.
type literalQuerier interface {
	jqLiteral(ctx context.Context, k, i int) ([]byte, error)
}

// mcpReader reads an element through an MCP server.
type mcpReader interface {
	mcpRead(ctx context.Context, k, i int) ([]byte, error)
}

// concurrentCommitter can take commits from several goroutines at once.
type concurrentCommitter interface {
	concurrentCommit(ctx context.Context, i, score int) error
}

// concurrentPreparer is a concurrentCommitter whose writers need sessions of their own (client processes): (j)
// opens them before its clock starts, so that neither phase times a process start.
type concurrentPreparer interface {
	prepareConcurrent(ctx context.Context, writers int) error
}

// detect reports whether a system can run here, and why not. stop, when not nil, ends what its systems share (a
// server) at the end of the suite.
func detect(name string) (mk func() system, stop func() error, why string) {
	switch name {
	case "strata":
		return func() system { return strataBolt{&strataSystem{}} }, nil, ""
	case "strata-pg":
		bins, err := pgserver.FindBins()
		if err != nil {
			return nil, nil, err.Error()
		}
		srv := &pgServer{bins: bins}
		return func() system { return &strataSystem{pg: srv} }, srv.stop, ""
	case "baseline":
		return func() system { return &naiveSystem{} }, nil, ""
	case "git":
		p, err := lookPath("git")
		if err != nil {
			return nil, nil, "git not found on PATH"
		}
		return func() system { return &gitSystem{bin: p} }, nil, ""
	case "sqlite":
		p, err := lookPath("sqlite3")
		if err != nil {
			return nil, nil, "sqlite3 not found on PATH"
		}
		return func() system { return &sqliteSystem{bin: p} }, nil, ""
	case "postgres":
		bins, why := findPostgres()
		if why != "" {
			return nil, nil, why
		}
		srv := &pgServer{bins: bins}
		return func() system { return &pgSystem{srv: srv} }, srv.stop, ""
	case "dolt", "dolt-rows":
		return detectDolt(name)
	}
	return nil, nil, "unknown system"
}

// Run runs the suite.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	rep := &Report{Started: time.Now(), Machine: machine(), N: opts.N, K: opts.K, Runs: opts.Runs,
		Skipped: map[string]string{}, Duration: map[int]time.Duration{}}
	root, err := os.MkdirTemp(opts.TempDir, "strata-bench-")
	if err != nil {
		return nil, err
	}
	// Peers run as other processes (PostgreSQL as another user, in its own directory), which read files placed
	// here by path: a relative TempDir would not name them there.
	if abs, aerr := filepath.Abs(root); aerr == nil {
		root = abs
	}
	defer removeAll(root) // after the servers are stopped (deferred below), which may still be writing there
	makers := map[string]func() system{}
	for _, name := range Systems {
		if !slices.Contains(opts.Systems, name) {
			continue
		}
		mk, stop, why := detect(name)
		if mk == nil {
			rep.Skipped[name] = why
			continue
		}
		if stop != nil {
			defer stop()
		}
		makers[name] = mk
		rep.Systems = append(rep.Systems, name)
	}

	total := len(opts.N) * opts.Runs * len(rep.Systems)
	var bar *progressbar.ProgressBar
	if opts.Progress != nil {
		bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(opts.Progress),
			progressbar.OptionSetDescription("bench"), progressbar.OptionShowCount(), progressbar.OptionSetWidth(30),
			progressbar.OptionClearOnFinish(), progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(100*time.Millisecond))
		defer bar.Finish()
	}
	step := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if bar != nil {
			bar.Describe(msg)
		}
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, "bench: %s\n", msg)
		}
	}
	for _, n := range opts.N {
		t0 := time.Now()
		for run := 0; run < opts.Runs; run++ {
			w := newWorkload(n, opts.K, run)
			dfile, err := w.doc.writeFile(root)
			if err != nil {
				return nil, err
			}
			for _, name := range rep.Systems {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				step("N=%d run %d/%d: %s", n, run+1, opts.Runs, name)
				settle()
				dir, err := os.MkdirTemp(root, name+"-")
				if err != nil {
					return nil, err
				}
				err = runOne(ctx, &opts, rep, name, makers[name](), w, dir, step)
				os.RemoveAll(dir)
				if err != nil {
					if ctx.Err() != nil {
						return nil, ctx.Err()
					}
					// One system's failure does not lose the others' figures: it is noted, and its missing
					// figures show as dashes.
					note := fmt.Sprintf("Failed: %s, N=%d, run %d: %v", name, n, run+1, err)
					rep.Notes = append(rep.Notes, note)
					step("%s", note)
				}
				if bar != nil {
					bar.Add(1)
				}
			}
			os.Remove(dfile)
		}
		rep.Duration[n] = time.Since(t0)
	}
	rep.Elapsed = time.Since(rep.Started)
	return rep, nil
}

// settle runs before each system's turn. The system before it may have written gigabytes (the baseline writes 100
// copies of the document, 10 GB at N = 1,000,000) that the kernel is still writing back, and the next system's fsyncs
// and reads would queue behind them: in one full run, Strata, which follows the peers of the size before, committed
// at 1.79 ms p50 against 605 µs in a run of its own minutes later. Flushing first starts every system on a quiet
// disk. A variable, so that a test can see when it runs.
var settle = syncDisks

// removeAll removes the suite's directory, trying again for a few seconds while a server that just stopped (as
// another OS user, say) finishes writing into it.
func removeAll(dir string) {
	for i := 0; i < 50; i++ {
		if err := os.RemoveAll(dir); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runOne runs the workload once on one system and records its figures.
func runOne(ctx context.Context, o *Options, rep *Report, name string, s system, w *workload, dir string, step func(string, ...any)) (err error) {
	n, K := w.n, w.k
	if err := s.open(ctx, dir); err != nil {
		return err
	}
	defer func() {
		if cerr := s.close(); err == nil {
			err = cerr
		}
	}()
	rec := func(workload string, v float64) { rep.add(workload, name, n, v) }
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	mb := float64(len(w.doc.json)) / 1e6

	// (a)
	t0 := time.Now()
	if err := s.load(ctx, w.doc); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	d := time.Since(t0)
	rec("load", ms(d))
	rec("load-rate", mb/d.Seconds())

	// (b)
	lat := make([]float64, 0, K)
	var nb []float64
	for k := 1; k <= K; k++ {
		// A system's driver may not look at ctx (the SQL shells do not): the suite does, between operations.
		if err := ctx.Err(); err != nil {
			return err
		}
		c := w.changes[k-1]
		t0 := time.Now()
		if err := s.commit(ctx, k, c.i, c.score); err != nil {
			return fmt.Errorf("commit %d: %w", k, err)
		}
		lat = append(lat, ms(time.Since(t0)))
		if r, ok := s.(newBytesReporter); ok {
			nb = append(nb, float64(r.lastNewBytes()))
		}
	}
	rec("commit", Summarize(lat).Median)
	if len(nb) > 0 {
		rec("new-bytes", Summarize(nb).Median)
	}

	// (c)
	size, err := s.diskBytes(ctx)
	if err != nil {
		return fmt.Errorf("disk: %w", err)
	}
	rec("disk", float64(size)/float64(len(w.doc.json)))
	if u, ok := s.(usedBytesReporter); ok {
		used, err := u.usedBytes()
		if err != nil {
			return fmt.Errorf("disk: %w", err)
		}
		rec("disk-used", float64(used)/float64(len(w.doc.json)))
	}

	reps := o.reps(n)
	half := K / 2
	// timedChecked times fn, reps times, and records the median; check, when set, verifies each answer once the
	// clock has stopped (parsing an answer to check it is not part of the operation).
	timedChecked := func(what string, fn func(r int) ([]byte, error), check func(r int, got []byte) error) error {
		xs := make([]float64, 0, reps)
		for r := 0; r < reps; r++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			t0 := time.Now()
			got, err := fn(r)
			took := time.Since(t0)
			if err == nil && check != nil {
				err = check(r, got)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			xs = append(xs, ms(took))
		}
		rec(what, Summarize(xs).Median)
		return nil
	}
	timed := func(what string, fn func(r int) error) error {
		return timedChecked(what, func(r int) ([]byte, error) { return nil, fn(r) }, nil)
	}
	// (d)
	if err := timed("snapshot", func(r int) error { return s.snapshot(ctx, fmt.Sprintf("snap-%d", r), half) }); err != nil {
		return err
	}
	if err := timed("branch", func(r int) error { return s.branch(ctx, fmt.Sprintf("branch-%d", r), half) }); err != nil {
		return err
	}
	// (e) a different element each repetition, checked against the workload: its first read (cold: nothing of it
	// cached in the process), then docs/benchmarks.md's target, the same read again (warm).
	rng := rand.New(rand.NewPCG(uint64(n), 99))
	pick := make([]int, reps)
	for r := range pick {
		pick[r] = rng.IntN(n)
	}
	var cold, warm []float64
	for _, i := range pick {
		for k := 0; k < 2; k++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			t0 := time.Now()
			b, err := s.readElement(ctx, half, i)
			took := ms(time.Since(t0))
			if err != nil {
				return fmt.Errorf("read-old: %w", err)
			}
			if err := w.checkElement(b, half, i); err != nil {
				return fmt.Errorf("read-old: %w", err)
			}
			if k == 0 {
				cold = append(cold, took)
			} else {
				warm = append(warm, took)
			}
		}
	}
	rec("read-old-cold", Summarize(cold).Median)
	rec("read-old", Summarize(warm).Median)
	// (f) The answers of (f) and (h) are worked out before the clock starts: w.changedBetween and w.over90 are not
	// free (the latter is O(N)).
	wantDiff, wantJQ := w.changedBetween(half, K), w.over90(K)
	if err := timed("diff", func(int) error {
		got, err := s.diff(ctx, half, K)
		if err != nil {
			return err
		}
		if want := wantDiff; got != want {
			return fmt.Errorf("%d elements differ, want %d", got, want)
		}
		return nil
	}); err != nil {
		return err
	}
	// (g)
	var xs []float64
	if err := timed("materialise", func(int) error {
		var cw countingWriter
		t0 := time.Now()
		err := s.export(ctx, half, &cw)
		xs = append(xs, time.Since(t0).Seconds())
		if err == nil && cw.n < int64(len(w.doc.json)) {
			err = fmt.Errorf("wrote %d bytes, want at least %d", cw.n, len(w.doc.json))
		}
		return err
	}); err != nil {
		return err
	}
	rec("materialise-rate", mb/Summarize(xs).Median)
	if vm, ok := s.(valueMaterialiser); ok {
		if err := timed("materialise-values", func(int) error {
			v, err := vm.materialise(ctx, half)
			if err != nil {
				return err
			}
			if a, ok := v.([]any); !ok || len(a) != n {
				return fmt.Errorf("materialised %T, want %d elements", v, n)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	// (h)
	if err := timed("jq", func(int) error {
		got, err := s.jq(ctx, K)
		if err != nil {
			return err
		}
		if want := wantJQ; got != want {
			return fmt.Errorf("jq counted %d, want %d", got, want)
		}
		return nil
	}); err != nil {
		return err
	}
	if iq, ok := s.(incrementalQuerier); ok && K >= 1 {
		xs := make([]float64, 0, reps)
		for r := 0; r < reps; r++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			got, took, err := iq.jqAfterCommit(ctx, K)
			if err == nil && got != wantJQ {
				err = fmt.Errorf("counted %d, want %d", got, wantJQ)
			}
			if err != nil {
				return fmt.Errorf("jq-after-commit: %w", err)
			}
			xs = append(xs, ms(took))
		}
		rec("jq-after-commit", Summarize(xs).Median)
	}
	if lq, ok := s.(literalQuerier); ok {
		if err := timed("jq-literal", func(r int) error {
			got, err := lq.jqLiteral(ctx, K, pick[r])
			if err != nil {
				return err
			}
			want := fmt.Sprintf("%q", fmt.Sprintf("user-%d", pick[r]))
			if string(got) != want {
				return fmt.Errorf("got %s, want %s", got, want)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	// (i)
	if mr, ok := s.(mcpReader); ok {
		// The first call starts the server and the session (initialize); it is not a round trip of (i).
		if _, err := mr.mcpRead(ctx, half, pick[0]); err != nil {
			return fmt.Errorf("mcp: %w", err)
		}
		if err := timedChecked("mcp", func(r int) ([]byte, error) { return mr.mcpRead(ctx, half, pick[r]) },
			func(r int, got []byte) error { return w.checkElement(got, half, pick[r]) }); err != nil {
			return err
		}
	}
	// (j)
	if cc, ok := s.(concurrentCommitter); ok {
		step("N=%d: %s, concurrent writers", n, name)
		ratio, err := concurrency(ctx, cc, n, o.concurrentCommits(Summarize(lat).Median))
		if err != nil {
			return fmt.Errorf("concurrent: %w", err)
		}
		rec("concurrent", ratio)
	}
	return nil
}

// concurrency measures m commits from one goroutine, then m commits from 8, and returns the second's throughput over
// the first's.
func concurrency(ctx context.Context, cc concurrentCommitter, n, m int) (float64, error) {
	const writers = 8
	if p, ok := cc.(concurrentPreparer); ok {
		if err := p.prepareConcurrent(ctx, writers); err != nil {
			return 0, err
		}
	}
	rng := rand.New(rand.NewPCG(uint64(n), 1234))
	score := 100_000
	t0 := time.Now()
	for j := 0; j < m; j++ {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		score++
		if err := cc.concurrentCommit(ctx, rng.IntN(n), score); err != nil {
			return 0, err
		}
	}
	serial := float64(m) / time.Since(t0).Seconds()
	errs := make(chan error, writers)
	t0 = time.Now()
	for wr := 0; wr < writers; wr++ {
		go func(wr int) {
			r := rand.New(rand.NewPCG(uint64(n), uint64(wr)))
			for j := wr; j < m; j += writers {
				if err := ctx.Err(); err != nil {
					errs <- err
					return
				}
				if err := cc.concurrentCommit(ctx, r.IntN(n), 200_000+j); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}(wr)
	}
	var first error
	for wr := 0; wr < writers; wr++ {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return 0, first
	}
	conc := float64(m) / time.Since(t0).Seconds()
	return conc / serial, nil
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// machine describes this computer in one line.
func machine() string {
	s := fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if name, ok := strings.CutPrefix(line, "model name"); ok {
				s += ", " + strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			s += fmt.Sprintf(", %.0f GiB RAM", float64(kb)/(1<<20))
		}
	}
	return s
}

var errNotFound = errors.New("not found")

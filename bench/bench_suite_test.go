package bench

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/testenv"
)

// fakeSystem answers every operation of the workload correctly and at once, from answers computed before the run,
// and ignores its context (as the shell-driven peers, sqlite and postgres, do: their statements go to a process
// over a pipe). onLoad, when set, runs at the end of load.
type fakeSystem struct {
	w       *workload
	diffAns int
	jqAns   int
	onLoad  func()
	mu      sync.Mutex
	commits int
	calls   []string
}

func newFakeSystem(w *workload) *fakeSystem {
	return &fakeSystem{w: w, diffAns: w.changedBetween(w.k/2, w.k), jqAns: w.over90(w.k)}
}

func (f *fakeSystem) note(op string) {
	f.mu.Lock()
	f.calls = append(f.calls, op)
	f.mu.Unlock()
}

func (f *fakeSystem) open(context.Context, string) error { f.note("open"); return nil }
func (f *fakeSystem) load(context.Context, *doc) error {
	f.note("load")
	if f.onLoad != nil {
		f.onLoad()
	}
	return nil
}
func (f *fakeSystem) commit(context.Context, int, int, int) error {
	f.mu.Lock()
	f.commits++
	f.mu.Unlock()
	f.note("commit")
	return nil
}
func (f *fakeSystem) diskBytes(context.Context) (int64, error)    { f.note("disk"); return 1, nil }
func (f *fakeSystem) snapshot(context.Context, string, int) error { f.note("snapshot"); return nil }
func (f *fakeSystem) branch(context.Context, string, int) error   { f.note("branch"); return nil }
func (f *fakeSystem) diff(context.Context, int, int) (int, error) {
	f.note("diff")
	return f.diffAns, nil
}
func (f *fakeSystem) jq(context.Context, int) (int, error) { f.note("jq"); return f.jqAns, nil }
func (f *fakeSystem) close() error                         { return nil }
func (f *fakeSystem) export(_ context.Context, _ int, w io.Writer) error {
	f.note("export")
	_, err := w.Write(f.w.doc.json)
	return err
}
func (f *fakeSystem) readElement(_ context.Context, k, i int) ([]byte, error) {
	f.note("read")
	return element(i, f.w.scoreAt(k, i)), nil
}

// TestRunOneStopsWhenCancelled: once the suite's context is cancelled (Ctrl-C, SIGTERM: cmd/strata's root
// cancels it), a system's turn stops at the next operation. It did not: runOne never looked at the context, so a
// peer whose driver ignores it (sqlite, postgres: statements over a pipe) ran all K commits and every measurement
// to the end — `strata bench --n 1000 --k 3000 --systems sqlite`, sent SIGTERM 3 s in, ran 15 s more and printed a
// full report; at N = 1,000,000 a turn is many minutes.
func TestRunOneStopsWhenCancelled(t *testing.T) {
	w := newWorkload(100, 50, 0)
	f := newFakeSystem(w)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.onLoad = cancel
	o := &Options{Quick: true}
	if err := o.fill(); err != nil {
		t.Fatal(err)
	}
	rep := &Report{}
	err := runOne(ctx, o, rep, "fake", f, w, t.TempDir(), func(string, ...any) {})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("runOne after the context was cancelled returned %v, want context.Canceled", err)
	}
	if f.commits != 0 || len(f.calls) > 2 {
		t.Errorf("after cancel (during load), runOne went on: %d commits, calls %v", f.commits, f.calls[min(2, len(f.calls)):min(8, len(f.calls))])
	}
}

// TestChecksOutsideTheClock: the answers of (f) diff and (h) jq are checked against the workload, and the
// check is not part of the operation (runOne's own comment: "verifies each answer once the clock has stopped"). It
// was inside the clock: the diff figure included w.changedBetween (≈ 10–14 µs at K = 100, a quarter of Strata's
// 46 µs diff at N = 1,000) and the jq figure w.over90 (O(N): 1.3 ms at N = 1,000,000). With a system that answers
// at once and a workload whose answers are dear to compute, the figures must stay near zero.
func TestChecksOutsideTheClock(t *testing.T) {
	const n, k = 300_000, 4000
	w := newWorkload(n, k, 0)
	f := newFakeSystem(w)
	// What the checks alone cost here.
	cost := func(fn func()) time.Duration {
		best := time.Duration(1 << 62)
		for range 3 {
			t0 := time.Now()
			fn()
			best = min(best, time.Since(t0))
		}
		return best
	}
	diffCheck := cost(func() { w.changedBetween(k/2, k) })
	jqCheck := cost(func() { w.over90(k) })
	o := &Options{Quick: true, K: k}
	if err := o.fill(); err != nil {
		t.Fatal(err)
	}
	rep := &Report{}
	if err := runOne(context.Background(), o, rep, "fake", f, w, t.TempDir(), func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		metric string
		check  time.Duration
	}{{"diff", diffCheck}, {"jq", jqCheck}} {
		st, ok := rep.Stat(c.metric, "fake", n)
		if !ok {
			t.Fatalf("no %s figure", c.metric)
		}
		got := time.Duration(st.Median * float64(time.Millisecond))
		t.Logf("%s: measured %v, the check alone %v", c.metric, got, c.check)
		if got > c.check/2 {
			t.Errorf("%s of a system that answers at once measured %v: the answer's check (%v here) is inside the clock", c.metric, got, c.check)
		}
	}
}

// TestConcurrentSessionsOpenedBeforeTheClock: (j) compares 8 writers' commits/s with one writer's. For
// SQLite (and PostgreSQL), each writer is a client process of its own, opened by the pool on first use — inside the
// timed phases: the serial phase paid for one process start, the concurrent phase for seven more (≈ 20 ms each
// here against a 1.5 ms commit), so at --quick's 64 commits SQLite's ratio (0.45–0.86× in runs here) was mostly
// process starts. The sessions must be open before the clock starts.
func TestConcurrentSessionsOpenedBeforeTheClock(t *testing.T) {
	bin := testenv.Tool(t, "sqlite3", "apt-get install -y sqlite3")
	s := &watchedSQLite{sqliteSystem: &sqliteSystem{bin: bin}}
	ctx := context.Background()
	dir := t.TempDir()
	if err := s.open(ctx, dir); err != nil {
		t.Fatal(err)
	}
	defer s.close()
	w := newWorkload(50, 2, 0)
	if _, err := w.doc.writeFile(dir); err != nil {
		t.Fatal(err)
	}
	if err := s.load(ctx, w.doc); err != nil {
		t.Fatal(err)
	}
	if _, err := concurrency(ctx, s, 50, 16); err != nil {
		t.Fatal(err)
	}
	if at, end := s.atFirst, s.sessions(); end > at {
		t.Errorf("(j) opened %d of its %d sqlite3 sessions inside the timed phases (%d were open at the first timed commit)", end-at, end, at)
	}
}

// watchedSQLite notes how many writer sessions were open when the first timed commit of (j) began.
type watchedSQLite struct {
	*sqliteSystem
	once    sync.Once
	atFirst int
}

func (s *watchedSQLite) sessions() int {
	s.writers.mu.Lock()
	defer s.writers.mu.Unlock()
	return len(s.writers.all)
}

func (s *watchedSQLite) concurrentCommit(ctx context.Context, i, score int) error {
	s.once.Do(func() { s.atFirst = s.sessions() })
	return s.sqliteSystem.concurrentCommit(ctx, i, score)
}

// TestDuplicateN: a size given twice (--n 1000,1000) ran it twice and pooled both into one figure, which the
// table then called "the median of 1 run" (with a min–max), and printed the table twice; the JSON held every
// measurement twice. It must be refused, as other bad sizes are.
func TestDuplicateN(t *testing.T) {
	// TempDir does not exist: nothing runs, whatever happens; the sizes must be refused before that.
	o := Options{N: []int{50, 50}, Runs: 1, K: 2, Systems: []string{"baseline"}, TempDir: filepath.Join(t.TempDir(), "missing")}
	_, err := Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "50") || !strings.Contains(err.Error(), "twice") {
		t.Errorf("N = [50 50]: error %v, want one saying that 50 was given twice", err)
	}
}

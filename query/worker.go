package query

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// WorkerEnv is the environment variable that makes a process started by the engine act as a query worker.
const WorkerEnv = "STRATA_QUERY_WORKER"

// WorkerMain turns the process into a query worker when the engine started it, and returns at once otherwise. A
// binary that runs queries through an Engine (with workers, the default) must call it first thing in main, before
// flags are parsed or anything else starts; tests call it from TestMain:
//
//	func main() {
//		query.WorkerMain()
//		…
//	}
//
// A worker reads requests on stdin and answers on stdout until stdin closes, then exits. It never returns.
func WorkerMain() {
	if os.Getenv(WorkerEnv) != "1" {
		return
	}
	os.Exit(serveWorker(os.Stdin, os.Stdout))
}

// workerGrace is how long past a query's deadline the engine waits for its worker to stop by itself before killing
// it.
const workerGrace = 150 * time.Millisecond

// workerStart bounds how long a new worker may take to say hello.
const workerStart = 10 * time.Second

// pool runs programs in worker processes: re-executions of the current binary (see WorkerMain), each under a memory
// limit (RLIMIT_DATA on Linux), killed at the deadline. Idle workers are kept for the next query.
type pool struct {
	exe    string
	base   int64 // Options.WorkerMemory
	slots  chan struct{}
	mu     sync.Mutex
	idle   []*worker
	closed bool
	wg     sync.WaitGroup
	stats  *engineStats // the engine's: starts and ends of workers are counted there
}

type worker struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	inBuf   *bufio.Writer
	out     *bufio.Reader
	stderr  *tailBuffer
	exited  chan struct{}
	queries int
}

func newPool(exe string, workers int, base int64) *pool {
	return &pool{exe: exe, base: base, slots: make(chan struct{}, workers), stats: &engineStats{}}
}

// acquire takes a free worker slot and an idle worker (or starts one).
func (p *pool) acquire(ctx context.Context) (*worker, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.slots
		return nil, fmt.Errorf("%w: the engine is closed", ErrUnavailable)
	}
	var w *worker
	if n := len(p.idle); n > 0 {
		w, p.idle = p.idle[n-1], p.idle[:n-1]
	}
	p.mu.Unlock()
	if w != nil {
		select {
		case <-w.exited:
			w = nil
		default:
		}
	}
	if w == nil {
		var err error
		if w, err = p.start(ctx); err != nil {
			<-p.slots
			return nil, err
		}
	}
	return w, nil
}

// release returns a worker to the pool, or ends it when it should not serve again.
func (p *pool) release(w *worker, keep bool) {
	p.mu.Lock()
	if keep && !p.closed {
		p.idle = append(p.idle, w)
		w = nil
	}
	p.mu.Unlock()
	if w != nil {
		w.kill()
	}
	<-p.slots
}

func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, w := range idle {
		w.kill()
	}
	p.wg.Wait()
}

func (p *pool) start(ctx context.Context) (*worker, error) {
	cmd := exec.Command(p.exe)
	// A worker gets no environment of the server's (no secrets, no proxies), only what makes it a worker, and the
	// server's time zone: localtime, mktime and strflocaltime must answer as in-process (found in review: a worker
	// answered in /etc/localtime's zone while the server ran under TZ).
	cmd.Env = []string{WorkerEnv + "=1", "GOTRACEBACK=none"}
	for _, k := range []string{"TZ", "ZONEINFO"} {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Dir = os.TempDir()
	setWorkerAttrs(cmd)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	w := &worker{cmd: cmd, in: in, inBuf: bufio.NewWriterSize(in, 64<<10), out: bufio.NewReaderSize(out, 64<<10),
		stderr: &tailBuffer{max: 4096}, exited: make(chan struct{})}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: cannot start a worker process: %v", ErrUnavailable, err)
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		_ = cmd.Wait()
		close(w.exited)
	}()
	hello := make(chan error, 1)
	go func() {
		typ, b, err := readFrame(w.out, nil)
		if err == nil && (typ != frameHello || string(b) != protocolVersion) {
			err = errors.New("it did not answer as a query worker")
		}
		hello <- err
	}()
	t := time.NewTimer(workerStart)
	defer t.Stop()
	select {
	case err = <-hello:
	case <-t.C:
		err = errors.New("it did not answer in time")
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		w.kill()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %s started but %v (the binary must call query.WorkerMain first thing in main)", ErrUnavailable, p.exe, err)
	}
	p.stats.started.Add(1)
	return w, nil
}

func (w *worker) kill() {
	_ = w.in.Close()
	if w.cmd.Process != nil {
		_ = w.cmd.Process.Kill()
	}
}

// workerJob is one request to a worker, with the function that streams its input.
type workerJob struct {
	req        wireRequest
	sendInput  func(w io.Writer) error
	inputBytes int64
	deadline   time.Time
}

type workerAnswer struct {
	results [][]byte
	more    bool
	vmData  int64
	err     error
}

// run sends a job to a worker and waits for its answer until the deadline (plus a grace period); past it, or
// when ctx ends, the worker is killed.
func (p *pool) run(ctx context.Context, prog string, job *workerJob) (*page, error) {
	w, err := p.acquire(ctx)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// Waiting for a worker, or for one to start (slow on a loaded machine), took the whole deadline: the
			// program never ran, so it is not its timeout.
			return nil, fmt.Errorf("%w: no query worker process was ready before the query's deadline (all were busy, or starting one took too long); retry shortly", ErrUnavailable)
		}
		return nil, err
	}
	keep := false
	defer func() { p.release(w, keep) }()

	answer := make(chan workerAnswer, 1)
	sendErr := make(chan error, 1)
	go func() {
		hdr, _ := json.Marshal(&job.req)
		err := writeFrame(w.inBuf, frameQuery, hdr)
		if err == nil {
			err = job.sendInput(&chunkWriter{w: w.inBuf})
		}
		if err == nil {
			err = writeFrame(w.inBuf, frameInput, nil)
		}
		if err == nil {
			err = w.inBuf.Flush()
		}
		sendErr <- err
	}()
	go func() { answer <- w.readAnswer() }()

	t := time.NewTimer(time.Until(job.deadline) + workerGrace)
	defer t.Stop()
	select {
	case a := <-answer:
		var answered *answeredError
		if a.err != nil && !errors.As(a.err, &answered) {
			// The worker ended without an answer: it crashed (memory, stack) or its pipe broke.
			p.stats.crashed.Add(1)
			w.kill()
			<-w.exited
			<-sendErr
			return nil, w.crashError(prog, job.req.Budget, a.err)
		}
		if err := <-sendErr; err != nil {
			return nil, fmt.Errorf("%w: sending the input to a worker: %v", ErrQuery, err)
		}
		// Keep the worker unless this query let it grow: a worker never serves with much more memory mapped than a
		// fresh one would need, so every query's limit means the same.
		keep = job.inputBytes <= p.base/(2*inputFactor) && a.vmData < p.base/2
		if !keep {
			p.stats.retired.Add(1)
		}
		w.queries++
		if answered != nil {
			return nil, answered.e.toError(prog)
		}
		if a.results == nil {
			a.results = [][]byte{}
		}
		return &page{results: a.results, more: a.more}, nil
	case <-t.C:
		p.stats.timedOut.Add(1)
		w.kill()
		<-sendErr
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, ctx.Err()
		}
		return nil, &QueryError{Program: prog, Offset: -1, Msg: timeoutText(ctx), Err: ErrTimeout}
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			p.stats.timedOut.Add(1)
		} else {
			p.stats.canceled.Add(1)
		}
		w.kill()
		<-sendErr
		return nil, ctxError(ctx, prog)
	}
}

// readAnswer reads result frames up to the done or error frame. A worker-side error (a QueryError) comes back in
// workerAnswer.results == nil with err set to the decoded error wrapped so run can tell it from a crash.
func (w *worker) readAnswer() workerAnswer {
	var a workerAnswer
	for {
		typ, b, err := readFrame(w.out, nil) // a fresh buffer: results are kept as they are
		if err != nil {
			a.err = err
			return a
		}
		switch typ {
		case frameResult:
			a.results = append(a.results, b)
		case frameDone:
			var d wireDone
			if err := json.Unmarshal(b, &d); err != nil {
				a.err = err
				return a
			}
			a.more, a.vmData = d.More, d.VmData
			return a
		case frameError:
			var we wireError
			if err := json.Unmarshal(b, &we); err != nil {
				a.err = err
				return a
			}
			a.err, a.vmData = &answeredError{we}, we.VmData
			return a
		default:
			a.err = fmt.Errorf("unexpected frame %q from worker", typ)
			return a
		}
	}
}

// answeredError is an error the worker reported for the query (not a crash).
type answeredError struct{ e wireError }

func (e *answeredError) Error() string { return e.e.Msg }

// crashError explains why a worker stopped without answering. The worker's own output is never passed on.
func (w *worker) crashError(prog string, budget int64, err error) error {
	var ae *answeredError
	if errors.As(err, &ae) {
		return ae.e.toError(prog)
	}
	tail := w.stderr.String()
	switch {
	case strings.Contains(tail, "stack overflow") || strings.Contains(tail, "stack exceeds"):
		return limitErr(prog, "the query nested too deeply and was stopped (its worker ran out of stack)")
	case strings.Contains(tail, "out of memory") || strings.Contains(tail, "cannot allocate memory"):
		return limitErr(prog, "the query used more than its %s memory limit and was stopped", sizeText(int(budget)))
	}
	return limitErr(prog, "the query's worker process stopped (it used more memory or stack than allowed, or crashed); nothing else was affected")
}

// tailBuffer keeps the first max bytes written to it (where the Go runtime puts the reason of a fatal error) and
// discards the rest.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.max - len(t.b); room > 0 {
		t.b = append(t.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// --- the worker side ---------------------------------------------------------------------------------------------

// workerStack is the largest goroutine stack a worker allows: deep recursion (tojson of a value nested millions
// deep) ends the worker quickly instead of growing towards Go's 1 GB default.
const workerStack = 128 << 20

// serveWorker is the worker's loop. It returns the exit code.
func serveWorker(stdin io.Reader, stdout io.Writer) int {
	debug.SetMaxStack(workerStack)
	rd := bufio.NewReaderSize(stdin, 64<<10)
	out := bufio.NewWriterSize(stdout, 64<<10)
	if err := writeFrame(out, frameHello, []byte(protocolVersion)); err != nil {
		return 1
	}
	if err := out.Flush(); err != nil {
		return 1
	}
	base := dataSegment()
	progs := newLRU[string, *program](64)
	var buf []byte
	for {
		typ, b, err := readFrame(rd, buf)
		if err == io.EOF {
			return 0
		}
		if err != nil || typ != frameQuery {
			return 1
		}
		var req wireRequest
		if err := json.Unmarshal(b, &req); err != nil {
			return 1
		}
		// The limit is relative to what the worker has mapped now, so every query gets the same room; the engine
		// retires a worker whose footprint has grown (Go keeps heap it once mapped), which bounds the drift.
		setDataLimit(dataSegment() + req.Budget)
		// Collect rarely: the memory limit, not the heap's growth, decides when the garbage collector must work.
		// Decoding a large input then costs no collections at all.
		debug.SetMemoryLimit(req.Budget*3/4 + 16<<20)
		debug.SetGCPercent(400)
		// Decode the input while it arrives: a reader fills a buffer of the announced size, and the decoder waits
		// only when it catches up with it.
		if req.InputSize < 0 || req.InputSize > req.Budget {
			return 1
		}
		in := newInputBuffer(rd, int(req.InputSize))
		ans := workerQuery(&req, in.parse, progs)
		if !in.finish() {
			return 1 // the input stream broke: the protocol is out of step
		}
		if ans.err != nil {
			we := fromError(ans.err)
			we.VmData = dataSegment() - base
			eb, _ := json.Marshal(we)
			err = writeFrame(out, frameError, eb)
		} else {
			for _, r := range ans.results {
				if err = writeFrame(out, frameResult, r); err != nil {
					break
				}
			}
			if err == nil {
				db, _ := json.Marshal(&wireDone{More: ans.more, VmData: dataSegment() - base})
				err = writeFrame(out, frameDone, db)
			}
		}
		if err == nil {
			err = out.Flush()
		}
		if err != nil {
			return 1
		}
		if req.InputSize > 1<<20 {
			runtime.GC() // drop this query's garbage now rather than carry it into the next
		}
	}
}

// inputBuffer receives a query's input frames into a buffer of the announced size, on a goroutine of its own.
type inputBuffer struct {
	buf    []byte
	mu     sync.Mutex
	cond   *sync.Cond
	filled int
	done   bool
	ok     bool
}

func newInputBuffer(r io.Reader, size int) *inputBuffer {
	b := &inputBuffer{buf: make([]byte, size)}
	b.cond = sync.NewCond(&b.mu)
	go func() {
		var fb []byte
		ok := false
		for {
			typ, f, err := readFrame(r, fb)
			if err != nil || typ != frameInput {
				break
			}
			if len(f) == 0 {
				ok = true
				break
			}
			if b.filled+len(f) > size {
				// More than announced: keep reading to the end marker so the stream stays in step, but the
				// text is cut, so decoding fails.
				fb = f
				continue
			}
			copy(b.buf[b.filled:], f)
			b.mu.Lock()
			b.filled += len(f)
			b.cond.Broadcast()
			b.mu.Unlock()
			fb = f
		}
		b.mu.Lock()
		b.done, b.ok = true, ok
		b.cond.Broadcast()
		b.mu.Unlock()
	}()
	return b
}

// wait blocks until n bytes have arrived or the input ended, and returns how many have.
func (b *inputBuffer) wait(n int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.filled < n && !b.done {
		b.cond.Wait()
	}
	return b.filled
}

// parse decodes the input as it arrives. Its strings share the buffer's memory.
func (b *inputBuffer) parse() (any, error) {
	s := unsafe.String(unsafe.SliceData(b.buf), len(b.buf))
	if len(b.buf) == 0 {
		s = ""
	}
	return parseStream(s, b.wait(0), b.wait)
}

// finish waits for the end of the input and reports whether the stream is still in step.
func (b *inputBuffer) finish() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for !b.done {
		b.cond.Wait()
	}
	return b.ok
}

// workerQuery answers one request inside a worker; parse decodes its input.
func workerQuery(req *wireRequest, parse func() (any, error), progs *lru[string, *program]) workerAnswer {
	d := time.Duration(req.TimeoutNS)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	at := time.Now().Add(d)
	if req.Caller {
		at = at.Add(time.Hour) // so that the message blames the caller's deadline
	}
	ctx = context.WithValue(ctx, timeoutKey{}, timeoutInfo{limit: time.Duration(req.LimitNS), at: at})
	key := req.Program + "\x00" + strings.Join(req.Vars, ",")
	prog, ok := progs.get(key)
	if !ok {
		var err error
		if prog, err = analyse(req.Program, req.Vars); err != nil {
			return workerAnswer{err: err}
		}
		progs.put(key, prog, 1)
	}
	values, err := decodeValues(req.Values, len(req.Vars))
	if err != nil {
		return workerAnswer{err: err}
	}
	code, err := prog.code(req.Stop)
	if err != nil {
		return workerAnswer{err: err}
	}
	x, err := parse()
	if err != nil {
		return workerAnswer{err: queryErr(req.Program, -1, "the worker could not read its input: %v", err)}
	}
	switch req.Mode {
	case "transform":
		b, err := runTransform(ctx, req.Program, code, x, values, req.MaxBytes)
		if err != nil {
			return workerAnswer{err: err}
		}
		return workerAnswer{results: [][]byte{b}}
	default:
		p, err := runPage(ctx, req.Program, code, x, values, req.Skip, req.Limit, req.MaxBytes)
		if err != nil {
			return workerAnswer{err: err}
		}
		return workerAnswer{results: p.results, more: p.more}
	}
}

func decodeValues(s string, n int) ([]any, error) {
	if n == 0 {
		return nil, nil
	}
	v, err := parseJSON(s)
	if err != nil {
		return nil, err
	}
	a, ok := v.([]any)
	if !ok || len(a) != n {
		return nil, errors.New("malformed parameter values")
	}
	return a, nil
}

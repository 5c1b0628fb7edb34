package query

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
)

// Isolation says which programs run in worker processes.
type Isolation int

const (
	// IsolateAuto runs bounded programs (see bounded.go) and programs that split over an array's elements (see
	// split.go) in the server process, and every other program in a worker. The default.
	IsolateAuto Isolation = iota
	// IsolateAll runs every program in a worker. Pure path reads (a program that is only a literal path) still
	// read in-process: they run no jq at all.
	IsolateAll
	// IsolateNone runs every program in the server process: no memory containment. A program like
	// "x" * 2000000000 can then exhaust the server's memory, and tojson of a very deep value can crash it. For tests
	// and for embedding with trusted programs only.
	IsolateNone
)

// Options configures an Engine. The zero value gives the defaults.
type Options struct {
	// Timeout bounds each query, including reading its input (default 5 s). A caller's earlier deadline wins.
	Timeout time.Duration
	// MaxResults is the largest page (default 1000); Request.Limit cannot raise it.
	MaxResults int
	// DefaultLimit is the page size when Request.Limit is 0 (default 100).
	DefaultLimit int
	// MaxOutputBytes bounds the JSON text of one page (default 1 MiB). A page ends early, with a cursor, before
	// the result that would cross it; a single result larger than it is an ErrLimit error.
	MaxOutputBytes int
	// MaxProgramBytes bounds the program text (default 64 KiB).
	MaxProgramBytes int
	// MaxParamBytes bounds the parameters as JSON (default 64 KiB).
	MaxParamBytes int
	// MaxTransformBytes bounds the value a transform produces, as JSON (default 256 MiB).
	MaxTransformBytes int

	// Isolate chooses which programs run in worker processes (default IsolateAuto).
	Isolate Isolation
	// Workers is how many worker processes may run at once (default 2). Queries beyond it wait, within their
	// deadline. Negative disables workers: programs that need one fail with ErrUnavailable.
	Workers int
	// WorkerMemory is the memory a worker may use for one query beyond its start-up footprint, plus 8 bytes per
	// byte of input JSON it is sent (default 256 MiB). Past it the worker dies and the query fails with ErrLimit.
	WorkerMemory int64
	// MaxInputBytes bounds the input, in bytes of JSON, that a worker is sent to read whole (default 2 GiB; a worker
	// may use 8 bytes of memory per byte of it). A value's size is not bounded by what requests carry: copy doubles
	// a resource in O(1), its nodes shared, so a few small calls can make one of petabytes. Over it, LIMIT_EXCEEDED.
	MaxInputBytes int64
	// WorkerPath is the binary to run as a worker (default: this one, os.Executable). It must call WorkerMain.
	WorkerPath string

	// MaxConcurrent caps the programs running at once, in-process and in workers together, across every caller of
	// the engine (default 4). A query beyond it waits for a slot within its deadline, then fails with
	// ErrUnavailable.
	MaxConcurrent int

	// CacheBytes bounds the cache of materialised values, estimated at 4 bytes of Go heap per byte of JSON, and of
	// the results split programs keep per node of an array (split.go), estimated too (default 512 MiB; negative
	// disables it).
	CacheBytes int64
	// Programs bounds the cache of compiled programs (default 256).
	Programs int

	// noSplit runs every program the plain way, never split over an array's elements (split.go): for benchmarks
	// that compare the two.
	noSplit bool

	// CursorKey authenticates cursors (HMAC-SHA256). Default: 32 random bytes per Engine, so cursors do not
	// outlive the process. Set it (≥ 16 bytes) to keep cursors valid across restarts and replicas.
	CursorKey []byte
}

// inputFactor is the memory a worker may use per byte of input JSON, on top of WorkerMemory: decoded, the docs/benchmarks.md
// workload takes 4 bytes of Go heap per byte of text, and the text itself stays in memory.
const inputFactor = 8

func (o *Options) fill() error {
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	def(&o.MaxResults, 1000)
	def(&o.DefaultLimit, 100)
	o.DefaultLimit = min(o.DefaultLimit, o.MaxResults)
	def(&o.MaxOutputBytes, 1<<20)
	def(&o.MaxProgramBytes, 64<<10)
	def(&o.MaxParamBytes, 64<<10)
	def(&o.MaxTransformBytes, 256<<20)
	if o.Workers == 0 {
		o.Workers = 2
	}
	if o.WorkerMemory <= 0 {
		o.WorkerMemory = 256 << 20
	}
	if o.MaxInputBytes <= 0 {
		o.MaxInputBytes = 2 << 30
	}
	if o.CacheBytes == 0 {
		o.CacheBytes = 512 << 20
	}
	def(&o.Programs, 256)
	def(&o.MaxConcurrent, 4)
	if o.CursorKey == nil {
		o.CursorKey = make([]byte, 32)
		if _, err := rand.Read(o.CursorKey); err != nil {
			return err
		}
	} else if len(o.CursorKey) < 16 {
		return errors.New("query: CursorKey must be at least 16 bytes")
	}
	return nil
}

// Engine runs jq programs over revisions. It is safe for concurrent use; compiled programs and materialised values
// are shared by all queries.
type Engine struct {
	opts  Options
	progs *lru[string, *program]
	mat   *materialCache

	poolOnce sync.Once
	pool     *pool
	poolErr  error
	closed   chan struct{}
	closeMu  sync.Once
	slots    chan struct{} // one token per program running (Options.MaxConcurrent)
	stats    engineStats
}

// New returns an engine. Worker processes start on first use.
func New(opts Options) (*Engine, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	e := &Engine{opts: opts, progs: newLRU[string, *program](int64(opts.Programs)), closed: make(chan struct{}),
		slots: make(chan struct{}, opts.MaxConcurrent)}
	if opts.CacheBytes > 0 {
		e.mat = newMaterialCache(opts.CacheBytes, 4*opts.Timeout)
		e.mat.stats = &e.stats
	}
	return e, nil
}

// Close stops the engine's worker processes. Queries still running fail.
func (e *Engine) Close() error {
	e.closeMu.Do(func() {
		close(e.closed)
		e.poolOnce.Do(func() {}) // no pool may start after Close
		if e.pool != nil {
			e.pool.close()
		}
	})
	return nil
}

func (e *Engine) workers() (*pool, error) {
	e.poolOnce.Do(func() {
		select {
		case <-e.closed:
			e.poolErr = fmt.Errorf("%w: the engine is closed", ErrUnavailable)
			return
		default:
		}
		if e.opts.Workers < 0 {
			e.poolErr = fmt.Errorf("%w: this program needs an isolated worker process, and workers are disabled", ErrUnavailable)
			return
		}
		exe := e.opts.WorkerPath
		if exe == "" {
			var err error
			if exe, err = os.Executable(); err != nil {
				e.poolErr = fmt.Errorf("%w: %v", ErrUnavailable, err)
				return
			}
		}
		e.pool = newPool(exe, e.opts.Workers, e.opts.WorkerMemory)
		e.pool.stats = &e.stats
	})
	return e.pool, e.poolErr
}

// Request is one query.
type Request struct {
	Forest   *revision.Forest
	Root     revision.Value // the revision's root: an object whose members are the resources
	Revision uint64         // the revision's number (cursors are bound to it)

	// Resource, when set, is the input; otherwise the input is the root (all resources).
	Resource string
	// Visible, when set, hides resources: the root the program sees holds only those for which it returns true,
	// and a hidden Resource is "not found". Hidden data never reaches the program.
	Visible func(resource string) bool

	Program string
	Params  map[string]any // available to the program as $name
	Limit   int            // page size (default Options.DefaultLimit, at most Options.MaxResults)
	Cursor  string         // from a previous Result.NextCursor, to continue
	Caller  string         // the principal; a cursor only works for the caller it was issued to
	// Bind is anything else a cursor is bound to: a front end names there the database and the reference its caller
	// gave (MCP: every argument but cursor and limit), so that a cursor is refused with other ones. (Found in review:
	// a cursor of branch b's query, sent with revision 2, read branch b on.)
	Bind string
}

// Result is one page of a query's results.
type Result struct {
	Results    []json.RawMessage // each result as compact JSON; numbers keep their exact text
	More       bool              // there are results after this page
	NextCursor string            // set when More: pass it as Request.Cursor for the next page
	Revision   uint64            // the revision that was read
	Plan       Plan              // how the query ran
}

// Plan describes how a query ran.
type Plan struct {
	Route   string // "read" (a path read, no jq), "in-process" (a bounded program) or "worker"
	Pointer string // the leading path read by pointer before any jq ran (a JSON Pointer); "" for none
	Cached  bool   // in-process: the materialised input came from the cache (split: every result did)
	Why     string // worker: why the program is not bounded ("" under IsolateAll)

	// Split names how an in-process program was split over the elements of the array it read (split.go):
	// "stream", "collect", "collect | length", "collect | add" or "collect | g"; "" when it was not. Chunks is how
	// many leaves of the array's tree f then ran on, Reused how many chunks (leaves or whole subtrees) had their
	// result in the cache.
	Split          string
	Chunks, Reused int
}

// Route names.
const (
	RouteRead      = "read"
	RouteInProcess = "in-process"
	RouteWorker    = "worker"
)

// Query resolves ref in db and runs the program there. With a cursor, the revision the cursor was issued for is
// read instead of ref (cursors never go stale: revisions are immutable).
func (e *Engine) Query(ctx context.Context, db *snapshots.DB, ref snapshots.Ref, req Request) (*Result, error) {
	if req.Cursor != "" {
		rev, err := CursorRevision(req.Cursor)
		if err != nil {
			return nil, err
		}
		ref = snapshots.Ref{Revision: rev}
	}
	st, err := db.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	req.Forest, req.Root, req.Revision = db.Forest(), st.Root, st.Rev.Number
	return e.Run(ctx, req)
}

// params are a request's parameters, normalised to the values gojq takes.
type params struct {
	names  []string
	values []any
	canon  []byte // canonical JSON of the whole map, for cursors
	text   string // JSON array of values, in names order, for workers
}

func (e *Engine) params(prog string, in map[string]any) (*params, error) {
	p := &params{}
	for name := range in {
		if err := validParam(name); err != nil {
			return nil, queryErr(prog, -1, "%v", err)
		}
		p.names = append(p.names, name)
	}
	slices.Sort(p.names)
	obj := make(map[string]any, len(in))
	for _, name := range p.names {
		raw, err := json.Marshal(in[name])
		if err != nil {
			return nil, queryErr(prog, -1, "parameter %s is not JSON: %v", name, err)
		}
		if len(raw) > e.opts.MaxParamBytes {
			return nil, limitErr("", "parameter %s is larger than the %s limit for parameters", name, sizeText(e.opts.MaxParamBytes))
		}
		v, err := parseJSON(string(raw))
		if err != nil {
			return nil, queryErr(prog, -1, "parameter %s: %v", name, err)
		}
		p.values = append(p.values, v)
		obj[name] = v
	}
	var err error
	if p.canon, err = appendJSON(nil, obj, e.opts.MaxParamBytes); err != nil {
		return nil, limitErr("", "the parameters are larger than the %s limit", sizeText(e.opts.MaxParamBytes))
	}
	arr, _ := appendJSON(nil, p.values, 0)
	if p.values == nil {
		arr = []byte("[]")
	}
	p.text = string(arr)
	return p, nil
}

// program returns the analysed program from the cache, or analyses it.
func (e *Engine) program(text string, names []string) (*program, error) {
	if len(text) > e.opts.MaxProgramBytes {
		return nil, limitErr("", "the program is %d bytes; the limit is %s", len(text), sizeText(e.opts.MaxProgramBytes))
	}
	if strings.TrimSpace(text) == "" {
		return nil, queryErr("", -1, "the program is empty (use . for the whole input)")
	}
	key := text + "\x00" + strings.Join(names, ",")
	if p, ok := e.progs.get(key); ok {
		return p, nil
	}
	p, err := analyse(text, names)
	if err != nil {
		return nil, err
	}
	e.progs.put(key, p, 1)
	return p, nil
}

// deadline gives ctx the engine's per-query deadline.
func (e *Engine) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	at := time.Now().Add(e.opts.Timeout)
	ctx, cancel := context.WithDeadline(ctx, at)
	return context.WithValue(ctx, timeoutKey{}, timeoutInfo{limit: e.opts.Timeout, at: at}), cancel
}

// run is Run (trace.go) without its span.
func (e *Engine) run(ctx context.Context, req Request) (*Result, error) {
	if req.Forest == nil || !req.Root.IsValid() {
		return nil, errors.New("query: Request needs Forest and Root")
	}
	ps, err := e.params(req.Program, req.Params)
	if err != nil {
		return nil, err
	}
	prog, err := e.program(req.Program, ps.names)
	if err != nil {
		return nil, err
	}
	limit := req.Limit
	if limit <= 0 {
		limit = e.opts.DefaultLimit
	}
	limit = min(limit, e.opts.MaxResults)

	binding := &cursorBinding{program: req.Program, params: ps.canon, resource: req.Resource, root: req.Root.Hash(), caller: req.Caller, bind: req.Bind}
	offset := uint64(0)
	if req.Cursor != "" {
		var ok bool
		if offset, ok = verifyCursor(e.opts.CursorKey, binding, req.Cursor, req.Revision); !ok {
			return nil, &QueryError{Offset: -1, Err: ErrBadCursor,
				Msg: "the cursor does not belong to this query: it was altered, or the program, parameters, resource, revision or caller differ from the first page's"}
		}
		if offset > 1<<40 {
			return nil, &QueryError{Offset: -1, Err: ErrBadCursor, Msg: "the cursor is not valid: pass next_cursor exactly as it was returned, with the same program, params and resource"}
		}
	}

	ctx, cancel := e.deadline(ctx)
	defer cancel()
	src, err := e.source(ctx, &req)
	if err != nil {
		return nil, err
	}
	src, k, ptr, err := e.descend(ctx, src, prog, ps)
	if err != nil {
		return nil, err
	}
	res := &Result{Revision: req.Revision, Plan: Plan{Pointer: ptr}}

	var pg *page
	switch {
	case prog.plan.whole() && k == len(prog.plan.steps):
		res.Plan.Route = RouteRead
		e.stats.read.Add(1)
		pg, err = e.readPage(ctx, prog.text, src, int(offset))
	default:
		pg, err = e.execute(ctx, prog, ps, src, k, "run", int(offset), limit, e.opts.MaxOutputBytes, &res.Plan)
	}
	if err != nil {
		return nil, err
	}
	res.Results = make([]json.RawMessage, len(pg.results))
	for i, b := range pg.results {
		res.Results[i] = b
	}
	res.More = pg.more
	if pg.more {
		res.NextCursor = makeCursor(e.opts.CursorKey, binding, req.Revision, offset+uint64(len(pg.results)))
	}
	return res, nil
}

// execute runs the program (after k pushed-down steps) on src, in-process or in a worker.
func (e *Engine) execute(ctx context.Context, prog *program, ps *params, src *source, k int, mode string, skip, limit, maxBytes int, plan *Plan) (*page, error) {
	select {
	case e.slots <- struct{}{}:
		defer func() { <-e.slots }()
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %d queries are running, the most this server runs at once, and none finished in time; retry shortly", ErrUnavailable, cap(e.slots))
	case <-e.closed:
		return nil, fmt.Errorf("%w: the engine is closed", ErrUnavailable)
	}
	if mode == "run" && !e.opts.noSplit {
		if pg, ok, err := e.runSplit(ctx, prog, ps, src, k, skip, limit, maxBytes, plan); ok {
			e.stats.inProcess.Add(1) // a split program runs in-process, leaf by leaf
			return pg, err
		}
	}
	stop := -1
	if prog.plan.term != nil {
		stop = k
	}
	inProcess := e.opts.Isolate == IsolateNone || e.opts.Isolate == IsolateAuto && prog.bounded
	if inProcess && e.opts.Isolate == IsolateAuto && src.size() > e.maxInProcessInput() {
		// Materialised, the input would take more of the server's heap than the cache of materialised values may
		// hold. Its size is not bounded by what a request carries: copy doubles a resource in O(1), its nodes
		// shared (found in review: a 1 MiB put and 8 copies, 268 MB of JSON, grew the heap by 300 MB). Such an
		// input goes to a worker, whose memory is limited.
		inProcess = false
		plan.Why = fmt.Sprintf("the input is %d bytes of JSON, more than the server materialises in-process", src.size())
	}
	if inProcess {
		// Only bounded programs share cached inputs. gojq does modify its input in places: del and delpaths
		// (deleteEmpty) rewrite every map they walk, which on a shared value is a concurrent map write, a fatal
		// error. So under IsolateNone other programs get a private copy.
		cache := e.mat
		if !prog.bounded {
			cache = nil
		}
		x, hit, err := src.materialize(ctx, cache)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctxError(ctx, prog.text)
			}
			return nil, err
		}
		if x.long && e.opts.Isolate != IsolateNone {
			// A number of more than maxNumberText digits: gojq could spend minutes on it in one step.
			inProcess = false
			plan.Why = fmt.Sprintf("the input holds a number longer than %d characters", maxNumberText)
		} else {
			plan.Route, plan.Cached = RouteInProcess, hit
			e.stats.inProcess.Add(1)
			code, err := prog.code(stop)
			if err != nil {
				return nil, err
			}
			if mode == "transform" {
				b, err := runTransform(ctx, prog.text, code, x.v, ps.values, maxBytes)
				if err != nil {
					return nil, err
				}
				return &page{results: [][]byte{b}}, nil
			}
			return runPage(ctx, prog.text, code, x.v, ps.values, skip, limit, maxBytes)
		}
	}
	plan.Route = RouteWorker
	e.stats.worker.Add(1)
	if e.opts.Isolate == IsolateAuto && plan.Why == "" {
		plan.Why = "the program " + prog.why
	}
	pool, err := e.workers()
	if err != nil {
		return nil, err
	}
	dl, _ := ctx.Deadline()
	size := src.size()
	if size > e.opts.MaxInputBytes {
		return nil, limitErr(prog.text, "the program reads its input whole, and the input is %s of JSON, over the %s a query may read whole: "+
			"query a path inside it (a smaller part of the value), or a program over its elements (.[] | …)", sizeText(int(size)), sizeText(int(e.opts.MaxInputBytes)))
	}
	job := &workerJob{
		req: wireRequest{Mode: mode, Program: prog.text, Vars: ps.names, Values: ps.text, Stop: stop, Skip: skip,
			Limit: limit, MaxBytes: maxBytes, TimeoutNS: int64(time.Until(dl)), LimitNS: int64(e.opts.Timeout),
			Budget: e.opts.WorkerMemory + inputFactor*size, InputSize: size},
		sendInput:  func(w io.Writer) error { return src.writeJSON(ctx, w) },
		inputBytes: size,
		deadline:   dl,
	}
	if ti, ok := ctx.Value(timeoutKey{}).(timeoutInfo); ok && dl.Before(ti.at) {
		job.req.Caller = true
	}
	return pool.run(ctx, prog.text, job)
}

// maxInProcessInput is the largest input, in bytes of JSON, a program runs on in the server process: what the cache
// of materialised values may hold (Options.CacheBytes, at materialFactor bytes of heap per byte), or 128 MiB
// without one.
func (e *Engine) maxInProcessInput() int64 {
	if e.opts.CacheBytes > 0 {
		return e.opts.CacheBytes / materialFactor
	}
	return 128 << 20
}

// readPage answers a program that is only a literal path: the value's JSON, streamed from its nodes.
func (e *Engine) readPage(ctx context.Context, prog string, src *source, offset int) (*page, error) {
	if offset > 0 {
		return &page{results: [][]byte{}}, nil
	}
	if n := src.size(); n > int64(e.opts.MaxOutputBytes) {
		return nil, limitErr(prog, "the value is %d bytes of JSON, over the %s output limit; select part of it (a deeper path, a slice such as .[0:100], or .[] to page through its elements)", n, sizeText(e.opts.MaxOutputBytes))
	}
	var b strings.Builder
	if err := src.writeJSON(ctx, &b); err != nil {
		if ctx.Err() != nil {
			return nil, ctxError(ctx, prog)
		}
		return nil, err
	}
	out := escapeDEL([]byte(b.String()))
	if n := len(out); n > e.opts.MaxOutputBytes {
		// Each DEL is stored as one byte and written as six (\u007f): the stored size can be under the limit and the
		// result over it.
		return nil, limitErr(prog, "the value is %d bytes of JSON, over the %s output limit; select part of it (a deeper path, a slice such as .[0:100], or .[] to page through its elements)", n, sizeText(e.opts.MaxOutputBytes))
	}
	return &page{results: [][]byte{out}}, nil
}

// escapeDEL writes each DEL (U+007F) of a value's stored JSON text as gojq writes it, \u007f: Strata stores it
// as is (it needs no escaping in JSON), and a result must be the text gojq would print. A DEL byte can only be
// inside a string, so the text stays the same value.
func escapeDEL(b []byte) []byte {
	if bytes.IndexByte(b, 0x7f) < 0 {
		return b
	}
	return bytes.ReplaceAll(b, []byte{0x7f}, []byte(`\u007f`))
}

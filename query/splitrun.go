package query

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math/big"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/itchyny/gojq"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// How a split program (split.go) runs: the array's tree is walked from its root; a chunk whose result is in the
// cache is not read further; the leaves left are read and run in parallel; inner results are summed up from their
// children's; then the outputs are joined, in order, as far as the answer needs them.

// chunkResult is what f gave on the elements of one chunk. It is kept in the engine's cache under the chunk's hash
// and the program's, and never changes once made.
type chunkResult struct {
	n    int   // outputs, up to err
	err  error // the error that ends the outputs; nil when f succeeded on every element
	iok  bool  // every output is an integer or null (then isum is their sum, for add)
	isum any
	leaf bool
	vals []any            // leaf: the outputs; an elemRef stands for one of the leaf's own elements
	kids []revision.Chunk // inner: the chunks below, in order
}

// elemRef is an output that is element i of its leaf itself (projection): materialised whole only when needed.
type elemRef int32

// projectionMark is the value of a member that every projected element holds and no program can name: if one ever
// reached an output, the encoder would refuse it (a Go type it does not know) rather than print a partial object.
type projectionMark struct{}

// markKey is the marking member's name. A program could name it (a jq string may hold \u0000), and one that does is
// not projected (projectable), so no program that sees a projected element reads it.
const markKey = "\x00strata: a projected element"

var theMark = &projectionMark{}

// errGiveUp ends a split run that cannot answer exactly; the program then runs the plain way.
var errGiveUp = errors.New("the split run gave up")

// splitSlack is what a split run may keep beyond materialFactor bytes per byte of its input's JSON.
var splitSlack int64 = 64 << 20

// splitLeaves is how many leaves a worker reads with one store call; splitWorkers caps the goroutines of one run.
const (
	splitLeaves  = 16
	splitWorkers = 4
)

// qnode is a chunk in one run: its result once known, and the nodes below it that the run has looked at.
type qnode struct {
	c     revision.Chunk
	res   *chunkResult
	kids  []*qnode
	elems []revision.Value // a leaf read during the walk (a root)
}

// splitRun is one run of a split program.
type splitRun struct {
	e      *Engine
	sp     *splitPlan
	f      *revision.Forest
	ctx    context.Context
	values []any
	salt   [32]byte
	lits   []any // the values sp.fast compares with; nil when it is not used in this run

	budget int64        // the memory the kept outputs may take in this run, estimated
	used   atomic.Int64 // what they take so far

	fatal  error // a store or context error met while joining outputs
	giveUp bool
	reused int // chunks whose result came from the cache
	leaves int // leaves run
}

// runSplit runs a split program on src. ok is false when the program does not split here (see split.go) or the run
// gave up: the caller then runs it the plain way.
func (e *Engine) runSplit(ctx context.Context, prog *program, ps *params, src *source, k, skip, limit, maxBytes int, plan *Plan) (*page, bool, error) {
	if e.opts.Isolate == IsolateAll || src.null || src.filter || src.v.Kind() != revision.Array {
		return nil, false, nil
	}
	stop := -1
	if prog.plan.term != nil {
		stop = k
	}
	sp := prog.split(stop)
	if sp == nil {
		return nil, false, nil
	}
	root, err := revision.ArrayChunk(src.v)
	if err != nil {
		return nil, false, nil
	}
	run := &splitRun{e: e, sp: sp, f: src.f, ctx: ctx, values: ps.values,
		budget: materialFactor*int64(src.v.Size()) + splitSlack}
	run.salt = splitSalt(prog, stop, ps)
	if sp.fast != nil {
		run.lits = fastValues(ctx, sp.lits, ps.values)
	}

	pg, err := run.answer(root, prog.text, skip, limit, maxBytes)
	if errors.Is(err, errGiveUp) || run.giveUp {
		return nil, false, nil
	}
	if run.fatal != nil {
		err = run.fatal
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, true, ctxError(ctx, prog.text)
		}
		return nil, true, err
	}
	plan.Route, plan.Split = RouteInProcess, sp.name()
	plan.Chunks, plan.Reused = run.leaves, run.reused
	plan.Cached = run.leaves == 0
	return pg, true, nil
}

// splitSalt identifies what a chunk's result depends on besides the chunk: the program (its text and how many steps
// were read by pointer determine f) and the parameters' values.
func splitSalt(prog *program, k int, ps *params) [32]byte {
	h := sha256.New()
	field := func(b []byte) {
		h.Write(binary.AppendUvarint(nil, uint64(len(b))))
		h.Write(b)
	}
	field([]byte("strata split result v1"))
	field([]byte(prog.text))
	field([]byte(strconv.Itoa(k)))
	for _, v := range prog.vars {
		field([]byte(v))
	}
	field(ps.canon)
	var s [32]byte
	h.Sum(s[:0])
	return s
}

func (run *splitRun) key(h store.Hash) store.Hash {
	var b [64]byte
	copy(b[:32], run.salt[:])
	copy(b[32:], h[:])
	return sha256.Sum256(b[:])
}

func (run *splitRun) cached(h store.Hash) *chunkResult {
	if run.e.mat == nil {
		return nil
	}
	if m, ok := run.e.mat.lru.get(run.key(h)); ok {
		if r, ok := m.v.(*chunkResult); ok {
			return r
		}
	}
	return nil
}

func (run *splitRun) keep(h store.Hash, r *chunkResult, cost int64) {
	if run.e.mat != nil {
		run.e.mat.lru.put(run.key(h), material{v: r}, cost)
	}
}

// answer computes the program's page.
func (run *splitRun) answer(root revision.Chunk, prog string, skip, limit, maxBytes int) (*page, error) {
	nodes, err := run.resolve([]revision.Chunk{root})
	if err != nil {
		return nil, err
	}
	top := nodes[0]
	sp := run.sp
	one := func(v any) iter.Seq[any] { return func(yield func(any) bool) { yield(v) } }
	switch {
	case sp.kind == splitStream:
		seq := func(yield func(any) bool) {
			if err := run.emit(top, skip, yield); err != nil {
				yield(err)
			}
		}
		return pageOf(run.ctx, prog, seq, skip, skip, limit, maxBytes)
	case top.res.err != nil:
		return pageOf(run.ctx, prog, one(top.res.err), 0, skip, limit, maxBytes)
	case sp.final == finalLength:
		return pageOf(run.ctx, prog, run.then(top.res.n), 0, skip, limit, maxBytes)
	case sp.final == finalAdd && top.res.iok:
		return pageOf(run.ctx, prog, run.then(top.res.isum), 0, skip, limit, maxBytes)
	}
	arr := make([]any, 0, top.res.n)
	err = run.emit(top, 0, func(v any) bool {
		arr = append(arr, v)
		return true
	})
	if err != nil {
		return nil, err
	}
	if sp.final == finalArray {
		return pageOf(run.ctx, prog, one(arr), 0, skip, limit, maxBytes)
	}
	return pageOf(run.ctx, prog, outputs(run.ctx, sp.g, arr, run.values), 0, skip, limit, maxBytes)
}

// then is the outputs of h on v, for length | h and add | h (v alone without h).
func (run *splitRun) then(v any) iter.Seq[any] {
	if run.sp.then == nil {
		return func(yield func(any) bool) { yield(v) }
	}
	return outputs(run.ctx, run.sp.then, v, run.values)
}

// emit yields the outputs of n from output number skip on, resolving the chunks below n that the run has not looked
// at yet, and element references. It returns the error that ends n's outputs, or a store or context error (then
// also recorded in run.fatal), or errGiveUp.
func (run *splitRun) emit(n *qnode, skip int, yield func(any) bool) error {
	r := n.res
	if r.leaf {
		var elems []revision.Value
		for i := skip; i < r.n; i++ {
			v := r.vals[i]
			if ref, ok := v.(elemRef); ok {
				if elems == nil {
					var err error
					if elems, err = run.elements(n); err != nil {
						return run.fail(err)
					}
				}
				x, err := run.f.Materialize(run.ctx, elems[ref])
				if err != nil {
					return run.fail(err)
				}
				if hasLongNumber(x) {
					run.giveUp = true
					return errGiveUp
				}
				v = x
			}
			if !yield(v) {
				return nil
			}
		}
		return r.err
	}
	if n.kids == nil && len(r.kids) > 0 {
		kids, err := run.resolve(r.kids)
		if err != nil {
			return run.fail(err)
		}
		n.kids = kids
	}
	if skip == 0 {
		// Everything below is wanted (a collected array, or a stream from here): read the leaves whose outputs
		// refer to their elements with one store call.
		if err := run.prefetch(n.kids); err != nil {
			return run.fail(err)
		}
	}
	stopped := false
	for _, kid := range n.kids {
		kr := kid.res
		if kr.err == nil && skip >= kr.n {
			skip -= kr.n
			continue
		}
		err := run.emit(kid, skip, func(v any) bool {
			if !yield(v) {
				stopped = true
				return false
			}
			return true
		})
		if err != nil || stopped {
			return err
		}
		skip = 0
	}
	return nil
}

func (run *splitRun) fail(err error) error {
	if errors.Is(err, errGiveUp) {
		run.giveUp = true
		return err
	}
	run.fatal = err
	return err
}

// prefetch reads the elements of the leaves among nodes whose outputs refer to them.
func (run *splitRun) prefetch(nodes []*qnode) error {
	var read []revision.Chunk
	var at []*qnode
	for _, n := range nodes {
		if n.res.leaf && n.elems == nil && slices.ContainsFunc(n.res.vals, isRef) {
			read = append(read, n.c)
			at = append(at, n)
		}
	}
	if len(read) < 2 {
		return nil
	}
	cc, err := run.f.ReadChunks(run.ctx, read)
	if err != nil {
		return err
	}
	for i, n := range at {
		n.elems = cc[i].Elements
	}
	return nil
}

func isRef(v any) bool {
	_, ok := v.(elemRef)
	return ok
}

// elements reads a leaf's elements again (its result came from the cache, or the walk did not keep them).
func (run *splitRun) elements(n *qnode) ([]revision.Value, error) {
	if n.elems != nil {
		return n.elems, nil
	}
	cc, err := run.f.ReadChunks(run.ctx, []revision.Chunk{n.c})
	if err != nil {
		return nil, err
	}
	n.elems = cc[0].Elements
	return n.elems, nil
}

// resolve gives the result of every chunk in cs: from the cache, or by running the leaves below it that are not
// cached (in parallel) and summing up.
func (run *splitRun) resolve(cs []revision.Chunk) ([]*qnode, error) {
	var todo []*qnode
	nodes := make([]*qnode, len(cs))
	for i, c := range cs {
		n, err := run.walk(c, &todo)
		if err != nil {
			return nil, err
		}
		nodes[i] = n
	}
	if err := run.runLeaves(todo); err != nil {
		return nil, err
	}
	for _, n := range nodes {
		run.sum(n)
	}
	return nodes, nil
}

// walk looks c up in the cache, else reads it and walks the chunks below it; leaves to run go to todo.
func (run *splitRun) walk(c revision.Chunk, todo *[]*qnode) (*qnode, error) {
	if err := run.ctx.Err(); err != nil {
		return nil, err
	}
	n := &qnode{c: c}
	if r := run.cached(c.Hash); r != nil {
		run.reused++
		n.res = r
		return n, nil
	}
	if c.IsLeaf() {
		*todo = append(*todo, n)
		return n, nil
	}
	cc, err := run.f.ReadChunks(run.ctx, []revision.Chunk{c})
	if err != nil {
		return nil, err
	}
	if cc[0].Children == nil {
		n.elems = cc[0].Elements
		if n.elems == nil {
			n.elems = []revision.Value{}
		}
		*todo = append(*todo, n)
		return n, nil
	}
	for _, kc := range cc[0].Children {
		kid, err := run.walk(kc, todo)
		if err != nil {
			return nil, err
		}
		n.kids = append(n.kids, kid)
	}
	return n, nil
}

// sum makes the result of an inner node from its children's, and keeps it.
func (run *splitRun) sum(n *qnode) {
	if n.res != nil {
		return
	}
	r := &chunkResult{iok: true, kids: make([]revision.Chunk, len(n.kids))}
	var sums []any
	for i, kid := range n.kids {
		run.sum(kid)
		r.kids[i] = kid.c
		if r.err != nil {
			continue
		}
		kr := kid.res
		r.n += kr.n
		if kr.err != nil {
			r.err, r.iok = kr.err, false
			continue
		}
		r.iok = r.iok && kr.iok
		if r.iok && kr.isum != nil {
			sums = append(sums, kr.isum)
		}
	}
	if r.iok && run.sp.final == finalAdd {
		r.isum, r.iok = run.add(sums)
	}
	n.res = r
	run.keep(n.c.Hash, r, 128+48*int64(len(r.kids))+estimate(r.isum, 1<<20))
}

// add sums integers with gojq's add (exact: integers overflow into big integers). It is quick (a node's worth of
// integers), so it runs to the end whatever the deadline; ok is false if it somehow did not give an integer.
func (run *splitRun) add(xs []any) (sum any, ok bool) {
	switch len(xs) {
	case 0:
		return nil, true
	case 1:
		return xs[0], true
	}
	v, _ := run.sp.add.Run(xs).Next()
	switch v.(type) {
	case int, *big.Int:
		return v, true
	}
	return nil, false
}

// runLeaves runs f on the leaves in todo, in parallel, in batches read with one store call each.
func (run *splitRun) runLeaves(todo []*qnode) error {
	if len(todo) == 0 {
		return nil
	}
	run.leaves += len(todo)
	workers := min(runtime.GOMAXPROCS(0), splitWorkers, (len(todo)+splitLeaves-1)/splitLeaves)
	ctx, cancel := context.WithCancel(run.ctx)
	defer cancel()
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(splitLeaves)) - splitLeaves
				if i >= len(todo) || ctx.Err() != nil {
					return
				}
				if err := run.runBatch(ctx, todo[i:min(i+splitLeaves, len(todo))]); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return run.ctx.Err()
}

func (run *splitRun) runBatch(ctx context.Context, batch []*qnode) error {
	var read []revision.Chunk
	var at []int
	for i, n := range batch {
		if n.elems == nil {
			read = append(read, n.c)
			at = append(at, i)
		}
	}
	if len(read) > 0 {
		cc, err := run.f.ReadChunks(ctx, read)
		if err != nil {
			return err
		}
		for j, i := range at {
			batch[i].elems = cc[j].Elements
		}
	}
	for _, n := range batch {
		r, cost, err := run.runLeaf(ctx, n.elems)
		n.elems = nil // the node's memory is the node cache's business
		if err != nil {
			return err
		}
		if run.used.Add(cost) > run.budget {
			return errGiveUp
		}
		n.res = r
		run.keep(n.c.Hash, r, cost)
	}
	return nil
}

// fastValues computes the values a cond compares with: each must be exactly one value (not an error) and not a
// number too long for gojq, else the condition is left to gojq (nil).
func fastValues(ctx context.Context, lits []*gojq.Code, values []any) []any {
	out := make([]any, len(lits))
	for i, code := range lits {
		n := 0
		for v := range outputs(ctx, code, nil, values) {
			if _, isErr := v.(error); isErr || n > 0 || hasLongNumber(v) {
				return nil
			}
			out[i] = v
			n++
		}
		if n != 1 {
			return nil
		}
	}
	return out
}

// test evaluates a cond on an object element (see cond).
func (run *splitRun) test(ctx context.Context, c *cond, ev revision.Value) (bool, error) {
	switch c.op {
	case gojq.OpAnd:
		if ok, err := run.test(ctx, c.l, ev); !ok || err != nil {
			return false, err
		}
		return run.test(ctx, c.r, ev)
	case gojq.OpOr:
		if ok, err := run.test(ctx, c.l, ev); ok || err != nil {
			return ok, err
		}
		return run.test(ctx, c.r, ev)
	}
	x, _, err := run.f.MaterializeMember(ctx, ev, c.key)
	if err != nil {
		return false, err
	}
	if hasLongNumber(x) {
		return false, errGiveUp
	}
	l, r := x, run.lits[c.lit]
	if c.swap {
		l, r = r, l
	}
	cmp := gojq.Compare(l, r)
	switch c.op {
	case gojq.OpEq:
		return cmp == 0, nil
	case gojq.OpNe:
		return cmp != 0, nil
	case gojq.OpLt:
		return cmp < 0, nil
	case gojq.OpLe:
		return cmp <= 0, nil
	case gojq.OpGt:
		return cmp > 0, nil
	case gojq.OpGe:
		return cmp >= 0, nil
	}
	return false, errGiveUp
}

// leafOutputs collects the outputs of f on one leaf, with what the result will cost in memory.
type leafOutputs struct {
	r       *chunkResult
	cost    int64
	aliases bool // some output may share the memory of the leaf's node
	budget  int64
}

func newLeafOutputs(budget int64) *leafOutputs {
	return &leafOutputs{r: &chunkResult{leaf: true, iok: true}, budget: budget}
}

// add takes one output (an elemRef for an element itself).
func (o *leafOutputs) add(v any) error {
	switch v.(type) {
	case nil, *big.Int:
	default:
		if _, ok := intOf(v); !ok {
			o.r.iok = false
		}
	}
	if _, isRef := v.(elemRef); !isRef {
		switch v.(type) {
		case nil, bool, int, float64:
		default:
			o.aliases = true
		}
		o.cost += estimate(v, o.budget)
	}
	o.r.vals = append(o.r.vals, v)
	if o.cost > o.budget {
		return errGiveUp
	}
	return nil
}

// fail ends the outputs with the error f raised.
func (o *leafOutputs) fail(e error) {
	o.r.err, o.r.iok = e, false
	o.cost += 512
	var ve gojq.ValueError
	if errors.As(e, &ve) {
		o.cost += estimate(ve.Value(), o.budget)
	}
}

// done finishes the result: its count, the sum of its integers for add, its cost (raw: the bytes of the leaf's
// elements, counted when outputs may share them).
func (o *leafOutputs) done(run *splitRun, raw int64) (*chunkResult, int64, error) {
	r := o.r
	r.n = len(r.vals)
	if r.iok && run.sp.final == finalAdd {
		ints := make([]any, 0, len(r.vals))
		for _, v := range r.vals {
			if i, ok := intOf(v); ok {
				v = i // zero as an int, as gojq's add makes it
			}
			if v != nil {
				ints = append(ints, v)
			}
		}
		r.isum, r.iok = run.add(ints)
	}
	cost := o.cost + 128 + 16*int64(len(r.vals))
	if o.aliases {
		cost += raw
	}
	return r, cost, nil
}

// runLeaf runs .[] | f on the elements of one leaf, and returns the result with its estimated memory. On a leaf of
// objects, f = .k and f = select(c) [| rest] with c a cond run without gojq (rest in gojq on the elements c keeps).
func (run *splitRun) runLeaf(ctx context.Context, elems []revision.Value) (*chunkResult, int64, error) {
	sp := run.sp
	raw := int64(0)
	for _, ev := range elems {
		raw += int64(len(ev.Encoding()))
	}
	out := newLeafOutputs(run.budget)
	switch {
	case sp.member != "" && allObjects(elems):
		for _, ev := range elems {
			x, _, err := run.f.MaterializeMember(ctx, ev, sp.member)
			if err != nil {
				return nil, 0, err
			}
			if hasLongNumber(x) {
				return nil, 0, errGiveUp
			}
			if err := out.add(x); err != nil {
				return nil, 0, err
			}
		}
	case run.lits != nil && allObjects(elems):
		var kept []int
		for j, ev := range elems {
			ok, err := run.test(ctx, sp.fast, ev)
			if err != nil {
				return nil, 0, err
			}
			if ok {
				kept = append(kept, j)
			}
		}
		if sp.rest == nil {
			for _, j := range kept {
				if err := out.add(elemRef(j)); err != nil {
					return nil, 0, err
				}
			}
			break
		}
		if len(kept) == 0 {
			break
		}
		if err := run.runGojq(ctx, sp.rest, elems, kept, out); err != nil {
			return nil, 0, err
		}
	default:
		if err := run.runGojq(ctx, sp.each, elems, nil, out); err != nil {
			return nil, 0, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	return out.done(run, raw)
}

// runGojq runs code (.[] | something) on the elements of a leaf at the positions in at (nil, not empty: all of
// them), projected when the plan says so, into out.
func (run *splitRun) runGojq(ctx context.Context, code *gojq.Code, elems []revision.Value, at []int, out *leafOutputs) (err error) {
	sp := run.sp
	if at == nil {
		at = make([]int, len(elems))
		for j := range at {
			at[j] = j
		}
	}
	in := make([]any, len(at))
	var refs map[unsafe.Pointer]int32
	for i, j := range at {
		ev := elems[j]
		var x any
		if sp.keys != nil && ev.Kind() == revision.Object {
			if x, err = run.f.MaterializeMembers(ctx, ev, sp.keys); err != nil {
				return err
			}
			m := x.(map[string]any)
			for _, v := range m {
				if hasLongNumber(v) {
					return errGiveUp
				}
			}
			m[markKey] = theMark
			if refs == nil {
				refs = make(map[unsafe.Pointer]int32, len(at))
			}
			refs[reflect.ValueOf(m).UnsafePointer()] = int32(j)
		} else {
			if x, err = run.f.Materialize(ctx, ev); err != nil {
				return err
			}
			if hasLongNumber(x) {
				return errGiveUp
			}
		}
		in[i] = x
	}
	defer func() {
		if p := recover(); p != nil {
			err = errGiveUp // the plain run reports the panic its own way
		}
	}()
	for v := range outputs(ctx, code, in, run.values) {
		if e, isErr := v.(error); isErr {
			var halt *gojq.HaltError
			if errors.As(e, &halt) {
				return errGiveUp
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			out.fail(e)
			return nil
		}
		if m, isMap := v.(map[string]any); isMap {
			if j, isRef := refs[reflect.ValueOf(m).UnsafePointer()]; isRef {
				v = elemRef(j)
			} else if _, marked := m[markKey]; marked {
				return fmt.Errorf("%w: a projected element reached an output", errGiveUp)
			}
		}
		if err := out.add(v); err != nil {
			return err
		}
	}
	return nil
}

// estimate is a rough count of the heap a value holds, stopping once it passes max. Shared parts count once per
// use, so values built from many references to one part are over-estimated, never under.
func estimate(v any, max int64) int64 {
	var n int64
	var walk func(v any)
	walk = func(v any) {
		if n > max {
			return
		}
		switch v := v.(type) {
		case nil, bool:
			n += 16
		case int, float64:
			n += 24
		case string:
			n += 32 + int64(len(v))
		case json.Number:
			n += 32 + int64(len(v))
		case *big.Int:
			n += 64 + int64(len(v.Bits()))*8
		case []any:
			n += 40 + 16*int64(len(v))
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			n += 64 + 48*int64(len(v))
			for k, x := range v {
				n += int64(len(k))
				walk(x)
			}
		default:
			n += 64
		}
	}
	walk(v)
	return n
}

func allObjects(elems []revision.Value) bool {
	for _, ev := range elems {
		if ev.Kind() != revision.Object {
			return false
		}
	}
	return true
}

package query

import (
	"slices"

	"github.com/itchyny/gojq"
)

// Split programs: programs that decompose over the elements of the array they read.
//
// An array of more than about 1 KiB is stored as a tree of content-addressed nodes (revision.Chunk). A program of
// one of these shapes, where f sees one element at a time,
//
//	.[] | f                          the outputs of f on each element, in order
//	[.[] | f] | g,  map(f) | g       g on the array of those outputs (also with no g)
//	[.[] | f] | length [| h]         how many outputs there are (then h on that number)
//	[.[] | f] | add [| h],  add      their sum
//
// gives the same answer when f runs on each leaf of the tree separately and the leaves' outputs are joined in order:
// `.[]` hands f one element and nothing else, and f has no way to see the array, the other elements or their
// positions. So the engine runs f leaf by leaf, on both cores, and keeps each leaf's outputs (and each inner node's
// count and sum) in the cache of materialised values under the node's hash, with the program and its parameters.
// A revision one commit later shares all but a few nodes with the one before: its answer costs the new nodes, plus g.
// ("length op c" with c not reading the input counts as "length | . op c", and so for add.)
//
// What makes a program split (splitOf), checked on the parsed program after the pushed-down path:
//   - its shape is one of the above exactly (a leading ". |" and parentheses aside), with no function definitions
//     around it (they could redefine map, length or add) and no binding ("… as $x |"), label or try around it;
//   - f is bounded (bounded.go) and finite (a number of outputs per element fixed by the program text): the
//     outputs of every element are kept, so f must not be able to make many of them; and bounded functions are
//     all deterministic (no now, no input, $ENV is {}), so a result kept for a node holds for every later query;
//   - g and h are bounded (or g is exactly length or add): they run in-process on the joined outputs.
//
// Such a program runs in-process even where the plain program would not be bounded ([…] | g builds an array that
// g uses): the array holds a number of outputs fixed by the program per element, each no larger than its element
// plus what the program text builds, and g is bounded. A run also stops keeping outputs, and gives up the split,
// once they take an estimated 4 bytes per byte of the input's JSON plus 64 MiB (what materialising the input would
// take); the cache keeps what fits its budget (Options.CacheBytes), with the materialised values.
//
// At run time the input must be a stored array (an object, a string, null… run the plain way, and report jq's
// errors the plain way). The leaves' outputs are joined in order; when f fails on an element, the outputs before
// it and then its error are what the plain run gives (a `.[] | f` stream), or the error alone ([.[] | f] fails as
// a whole). Errors are kept too: they are deterministic. Nothing is kept from a leaf that ran into the deadline, a
// panic or a number too long for gojq; the last two give up the split and run the program the plain way.
//
// add splits only where addition is associative and exact: when every output is an integer or null, the sum of
// the sums of the leaves is the sum (integers are exact in gojq: they overflow into big integers). Anything else
// (floats, whose sum depends on the order of additions; strings; mixed types, whose error message quotes the
// running sum) is summed by gojq's add over all the outputs joined in order, which is the plain answer.
//
// Projection. When f reads each element only through literal member names (.score, .a.b, {name}, select(.x > 1))
// and otherwise only passes the element itself on as its output (select's), the elements are materialised with
// those members only (revision.Forest.MaterializeMembers), and an output that is the element itself is kept as a
// reference to it, materialised whole only when it is needed (never for length). What f may do with the element is
// checked by projectable, below; an object given to f that way also holds a member no program can name, whose value
// the encoder refuses, so a mistake there fails loudly instead of answering wrong. When f is select(c) with c a
// comparison of a member with a constant (cond, below), the engine tests c itself with gojq's comparison.

// splitKind is the shape of a split program.
type splitKind int

const (
	splitStream  splitKind = iota + 1 // .[] | f
	splitCollect                      // [.[] | f] | g
)

// finalKind is what a collected program does with the joined outputs.
type finalKind int

const (
	finalArray   finalKind = iota // the array itself ([.[] | f], map(f))
	finalLength                   // | length
	finalAdd                      // | add
	finalProgram                  // | g
)

var splitKindNames = map[splitKind]string{splitStream: "stream", splitCollect: "collect"}

// splitPlan is how a split program runs.
type splitPlan struct {
	kind   splitKind
	final  finalKind
	each   *gojq.Code   // .[] | f
	g      *gojq.Code   // finalProgram: g; finalAdd: g (add, or add | h) for sums that do not split
	add    *gojq.Code   // finalAdd: add, for the sums of chunks
	then   *gojq.Code   // finalLength, finalAdd: h in length | h, add | h (nil: none)
	keys   []string     // projection: the members of an element f reads (sorted); nil when f sees whole elements
	fast   *cond        // f is select(c) [| rest] with c one of these conditions: evaluated without gojq (see cond)
	lits   []*gojq.Code // the values c compares with
	rest   *gojq.Code   // .[] | rest, when f is select(c) | rest
	member string       // f is .member: on objects, its value or null, without gojq
}

func (sp *splitPlan) name() string {
	n := splitKindNames[sp.kind]
	switch sp.final {
	case finalLength:
		n += " | length"
	case finalAdd:
		n += " | add"
	case finalProgram:
		n += " | g"
	}
	return n
}

// split returns the split plan of the program after k pushed-down steps (k < 0: the whole program), or nil.
func (p *program) split(k int) *splitPlan {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.splits == nil {
		p.splits = map[int]*splitPlan{}
	}
	if sp, ok := p.splits[k]; ok {
		return sp
	}
	q := p.ast
	if k >= 0 && p.plan.term != nil {
		q = p.plan.restQuery(k)
	}
	sp := splitOf(q, p.vars)
	p.splits[k] = sp
	return sp
}

// splitOf recognises a split program (see above).
func splitOf(q *gojq.Query, vars []string) *splitPlan {
	q = unwrap(q)
	if q == nil || len(q.FuncDefs) > 0 || len(q.Imports) > 0 || q.Meta != nil {
		return nil
	}
	var f, g *gojq.Query
	sp := &splitPlan{}
	if x, ok := streamOf(q); ok {
		sp.kind, f = splitStream, x
	} else {
		sp.kind = splitCollect
		left := q
		if q.Term == nil {
			if q.Op != gojq.OpPipe || len(q.Patterns) > 0 {
				return nil
			}
			left, g = unwrap(q.Left), unwrap(q.Right)
			if left == nil || g == nil {
				return nil
			}
		}
		if x, ok := collectOf(left); ok {
			f = x
		} else if g == nil && isCall(q, "add", 0) {
			f, g = identity(), q // add on the input itself: the sum of its elements
		} else {
			return nil
		}
		// g is nothing, length or add (then perhaps "| h"), or any bounded program.
		head, then := headOf(g)
		switch {
		case g == nil:
			sp.final = finalArray
		case isCall(head, "length", 0):
			sp.final = finalLength
		case isCall(head, "add", 0):
			sp.final = finalAdd
		default:
			sp.final, then = finalProgram, nil
			if ok, _ := classify(g); !ok {
				return nil
			}
		}
		if then != nil {
			if ok, _ := classify(then); !ok {
				return nil
			}
			var err error
			if sp.then, err = gojq.Compile(then, compileOptions(vars)...); err != nil {
				return nil
			}
		}
	}
	c := &classifier{}
	if fin := c.query(f, true); !fin || c.why != "" {
		return nil
	}
	opts := compileOptions(vars)
	var err error
	if sp.each, err = gojq.Compile(&gojq.Query{Left: iterQuery(), Op: gojq.OpPipe, Right: f}, opts...); err != nil {
		return nil
	}
	switch sp.final {
	case finalProgram:
		sp.g, err = gojq.Compile(g, opts...)
	case finalAdd:
		if sp.g, err = gojq.Compile(g, opts...); err == nil {
			sp.add, err = gojq.Compile(&gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: "add"}}}, compileOptions(nil)...)
		}
	}
	if err != nil {
		return nil
	}
	if keys, ok := projectable(f); ok {
		sp.keys = keys // not nil, even when f reads no member
		var rest *gojq.Query
		if sp.fast, sp.lits, rest = fastSelect(f, opts); rest != nil {
			if sp.rest, err = gojq.Compile(&gojq.Query{Left: iterQuery(), Op: gojq.OpPipe, Right: rest}, opts...); err != nil {
				sp.fast, sp.lits = nil, nil
			}
		}
	}
	if k, ok := memberRead(f); ok {
		sp.member = k
	}
	return sp
}

// A cond is a condition select(c) tests that the engine evaluates itself, on objects only, with gojq's own
// comparison: c is a comparison (==, !=, <, <=, >, >=) between a member read with a literal name (.k) and a value
// that does not depend on the input (a literal, a parameter, arithmetic on them: gojq computes it, once per run),
// or and/or of such conditions. On an object, .k is the member's value or null, and gojq's comparison operators are
// gojq.Compare of their operands (operator.go: funcOpGt is Compare(l, r) > 0, …); and/or are true or false by the
// truth of their operands, the right one looked at only when the left does not decide. None of it can fail, so
// select(c) outputs the element exactly when the condition holds. An element that is not an object runs in gojq.
type cond struct {
	op   gojq.Operator
	l, r *cond  // and, or
	key  string // comparison: the member
	lit  int    // comparison: the value, as sp.lits[lit] computes it
	swap bool   // the value is on the left
}

// fastSelect recognises select(c) and select(c) | rest with c a cond, and compiles the values c compares with.
func fastSelect(f *gojq.Query, opts []gojq.CompilerOption) (*cond, []*gojq.Code, *gojq.Query) {
	f = unwrap(f)
	var rest *gojq.Query
	if f.Term == nil && f.Op == gojq.OpPipe && len(f.Patterns) == 0 && len(f.FuncDefs) == 0 && isCall(f.Left, "select", 1) {
		f, rest = unwrapParens(f.Left), f.Right
	}
	if !isCall(f, "select", 1) {
		return nil, nil, nil
	}
	var lits []*gojq.Code
	var walk func(q *gojq.Query) *cond
	walk = func(q *gojq.Query) *cond {
		q = unwrapParens(q)
		if q == nil || q.Term != nil || len(q.FuncDefs) > 0 || len(q.Patterns) > 0 {
			return nil
		}
		switch q.Op {
		case gojq.OpAnd, gojq.OpOr:
			l, r := walk(q.Left), walk(q.Right)
			if l == nil || r == nil {
				return nil
			}
			return &cond{op: q.Op, l: l, r: r}
		case gojq.OpEq, gojq.OpNe, gojq.OpLt, gojq.OpLe, gojq.OpGt, gojq.OpGe:
		default:
			return nil
		}
		c := &cond{op: q.Op}
		side := q.Right
		key, ok := memberRead(q.Left)
		if !ok {
			if key, ok = memberRead(q.Right); !ok {
				return nil
			}
			c.swap, side = true, q.Left
		}
		if !constQuery(side) {
			return nil
		}
		code, err := gojq.Compile(side, opts...)
		if err != nil {
			return nil
		}
		c.key, c.lit = key, len(lits)
		lits = append(lits, code)
		return c
	}
	c := walk(f.Term.Func.Args[0])
	if c == nil {
		return nil, nil, nil
	}
	return c, lits, rest
}

// memberRead recognises .k with a literal name and nothing after it.
func memberRead(q *gojq.Query) (string, bool) {
	q = unwrapParens(q)
	if q == nil || q.Term == nil || q.Term.Type != gojq.TermTypeIndex || len(q.Term.SuffixList) > 0 || len(q.FuncDefs) > 0 {
		return "", false
	}
	return literalKey(q.Term.Index)
}

// headOf splits g into what it does first with its input, when that is length or add, and what it does then with
// their value: "length | h", and "length op c" with c not reading the input, which is "length | . op c" (c gives
// the same values on any input, in the same order). Otherwise head is g.
func headOf(g *gojq.Query) (head, then *gojq.Query) {
	if g == nil || g.Term != nil || len(g.Patterns) > 0 || len(g.FuncDefs) > 0 {
		return g, nil
	}
	special := func(q *gojq.Query) bool { return isCall(q, "length", 0) || isCall(q, "add", 0) }
	switch g.Op {
	case gojq.OpPipe:
		return unwrap(g.Left), unwrap(g.Right)
	case gojq.OpEq, gojq.OpNe, gojq.OpLt, gojq.OpLe, gojq.OpGt, gojq.OpGe, gojq.OpAdd, gojq.OpSub, gojq.OpMul,
		gojq.OpDiv, gojq.OpMod:
		switch {
		case special(g.Left) && constQuery(g.Right):
			return unwrapParens(g.Left), &gojq.Query{Left: identity(), Op: g.Op, Right: g.Right}
		case special(g.Right) && constQuery(g.Left):
			return unwrapParens(g.Right), &gojq.Query{Left: g.Left, Op: g.Op, Right: identity()}
		}
	}
	return g, nil
}

// unwrap drops what does not change a query's meaning: parentheses around it, and a leading ". |".
func unwrap(q *gojq.Query) *gojq.Query {
	for q != nil && len(q.FuncDefs) == 0 && len(q.Imports) == 0 && q.Meta == nil {
		switch {
		case q.Term != nil && q.Term.Type == gojq.TermTypeQuery && len(q.Term.SuffixList) == 0:
			q = q.Term.Query
		case q.Term == nil && q.Op == gojq.OpPipe && len(q.Patterns) == 0 && isIdentity(q.Left):
			q = q.Right
		default:
			return q
		}
	}
	return q
}

func isIdentity(q *gojq.Query) bool {
	q = unwrapParens(q)
	return q != nil && q.Term != nil && q.Term.Type == gojq.TermTypeIdentity && len(q.Term.SuffixList) == 0 &&
		len(q.FuncDefs) == 0 && len(q.Imports) == 0
}

func unwrapParens(q *gojq.Query) *gojq.Query {
	for q != nil && q.Term != nil && q.Term.Type == gojq.TermTypeQuery && len(q.Term.SuffixList) == 0 &&
		len(q.FuncDefs) == 0 && len(q.Imports) == 0 {
		q = q.Term.Query
	}
	return q
}

// isIter reports whether q is exactly .[] (not .[]?, which also takes objects and hides errors).
func isIter(q *gojq.Query) bool {
	q = unwrapParens(q)
	if q == nil || q.Term == nil || len(q.FuncDefs) > 0 || len(q.Imports) > 0 {
		return false
	}
	t := q.Term
	return t.Type == gojq.TermTypeIdentity && len(t.SuffixList) == 1 && t.SuffixList[0].Iter &&
		t.SuffixList[0].Index == nil && !t.SuffixList[0].Optional
}

// isCall reports whether q is exactly a call of the builtin name/arity (no suffixes).
func isCall(q *gojq.Query, name string, arity int) bool {
	q = unwrapParens(q)
	return q != nil && q.Term != nil && q.Term.Type == gojq.TermTypeFunc && len(q.Term.SuffixList) == 0 &&
		q.Term.Func.Name == name && len(q.Term.Func.Args) == arity && len(q.FuncDefs) == 0
}

func identity() *gojq.Query { return &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeIdentity}} }

func iterQuery() *gojq.Query {
	return &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeIdentity, SuffixList: []*gojq.Suffix{{Iter: true}}}}
}

// streamOf recognises .[] | f and .[] (f is then .).
func streamOf(q *gojq.Query) (*gojq.Query, bool) {
	if isIter(q) {
		return identity(), true
	}
	if q.Term == nil && q.Op == gojq.OpPipe && len(q.Patterns) == 0 && len(q.FuncDefs) == 0 && isIter(q.Left) {
		if f := unwrap(q.Right); f != nil {
			return f, true
		}
	}
	return nil, false
}

// collectOf recognises [.[] | f], [.[]] and map(f).
func collectOf(q *gojq.Query) (*gojq.Query, bool) {
	q = unwrapParens(q)
	if q == nil || q.Term == nil || len(q.Term.SuffixList) > 0 || len(q.FuncDefs) > 0 {
		return nil, false
	}
	t := q.Term
	switch {
	case t.Type == gojq.TermTypeArray && t.Array.Query != nil:
		return streamOf(unwrap(t.Array.Query))
	case t.Type == gojq.TermTypeFunc && t.Func.Name == "map" && len(t.Func.Args) == 1:
		return t.Func.Args[0], true
	}
	return nil, false
}

// projectable decides whether f may be given its element with only some members (see above), and which. f has
// passed the classifier: no function definitions, reduce, foreach, assignments, formats or string interpolation.
//
// The element is reachable in f only as "." where f's input has not been replaced: at the top of f, in the
// operands and arguments evaluated there, on the right of "as" bindings, in if/try/label bodies. Each use of it
// there must be one of:
//   - a member read with a literal name (.a, ."a", .["a"], {a}, {"a"}), whatever follows it: that member is
//     materialised whole, so everything after the read sees exactly what it would have;
//   - the element passed on unchanged as an output of f (".", select(p), if … then . end, first(.)…), which the
//     engine swaps for the whole element;
//   - nothing else: not compared, not indexed otherwise, not put into an array or object, not bound to a
//     variable, not given to any other function. Any of these rejects the projection, and f sees whole elements.
//
// The right of a pipe whose left side never outputs the element works on values read from it, which are whole:
// anything goes there.
func projectable(f *gojq.Query) ([]string, bool) {
	a := &projection{keys: map[string]bool{}}
	if _, ok := a.query(f); !ok || a.keys[markKey] {
		// A program can name the member that marks a projected element ("\u0000strata: ..."): it must then see the
		// element's own (found in review: select on it counted every element).
		return nil, false
	}
	keys := make([]string, 0, len(a.keys))
	for k := range a.keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, true
}

type projection struct {
	keys map[string]bool
}

// query analyses q evaluated on the element. It reports whether q is allowed, and whether one of its outputs may
// be the element itself.
func (a *projection) query(q *gojq.Query) (elem, ok bool) {
	if q == nil {
		return false, true
	}
	if len(q.FuncDefs) > 0 || len(q.Imports) > 0 || q.Meta != nil {
		return false, false
	}
	if q.Term != nil {
		return a.term(q.Term)
	}
	switch q.Op {
	case gojq.OpPipe:
		if len(q.Patterns) > 0 {
			// L as $p | R: the variables hold L's outputs (never the element), and R reads the element again.
			if !a.value(q.Left) {
				return false, false
			}
			for _, p := range q.Patterns {
				if !plainPattern(p) {
					return false, false
				}
			}
			return a.query(q.Right)
		}
		le, ok := a.query(q.Left)
		if !ok {
			return false, false
		}
		if le {
			// R may be handed the element: it must be allowed on it (and on anything else L outputs, it is).
			return a.query(q.Right)
		}
		return false, true // R runs on values read from the element: they are whole.
	case gojq.OpComma, gojq.OpAlt:
		le, ok := a.query(q.Left)
		if !ok {
			return false, false
		}
		re, ok := a.query(q.Right)
		return le || re, ok
	case gojq.OpAnd, gojq.OpOr, gojq.OpEq, gojq.OpNe, gojq.OpLt, gojq.OpLe, gojq.OpGt, gojq.OpGe,
		gojq.OpAdd, gojq.OpSub, gojq.OpMul, gojq.OpDiv, gojq.OpMod:
		return false, a.value(q.Left) && a.value(q.Right)
	}
	return false, false
}

// value analyses a query whose outputs are used as values (operands, arguments, members): it must be allowed and
// never output the element.
func (a *projection) value(q *gojq.Query) bool {
	elem, ok := a.query(q)
	return ok && !elem
}

func plainPattern(p *gojq.Pattern) bool {
	if p == nil {
		return true
	}
	for _, x := range p.Array {
		if !plainPattern(x) {
			return false
		}
	}
	for _, o := range p.Object {
		if o.KeyQuery != nil || o.KeyString != nil && len(o.KeyString.Queries) > 0 || !plainPattern(o.Val) {
			return false
		}
	}
	return true
}

// literalKey returns the member name an index reads when it is a literal one.
func literalKey(x *gojq.Index) (string, bool) {
	switch {
	case x == nil || x.IsSlice || x.End != nil:
		return "", false
	case x.Name != "":
		return x.Name, true
	case x.Str != nil:
		return x.Str.Str, len(x.Str.Queries) == 0
	case x.Start != nil:
		s := unwrapParens(x.Start)
		if s == nil || s.Term == nil || s.Term.Type != gojq.TermTypeString || len(s.Term.SuffixList) > 0 ||
			s.Term.Str == nil || len(s.Term.Str.Queries) > 0 || len(s.FuncDefs) > 0 {
			return "", false
		}
		return s.Term.Str.Str, true
	}
	return "", false
}

func (a *projection) term(t *gojq.Term) (elem, ok bool) {
	switch t.Type {
	case gojq.TermTypeIdentity:
		elem = true
	case gojq.TermTypeIndex:
		k, lit := literalKey(t.Index)
		if !lit {
			return false, false
		}
		a.keys[k] = true
	case gojq.TermTypeNull, gojq.TermTypeTrue, gojq.TermTypeFalse, gojq.TermTypeNumber, gojq.TermTypeBreak:
	case gojq.TermTypeString:
		if t.Str == nil || len(t.Str.Queries) > 0 || t.Format != "" {
			return false, false
		}
	case gojq.TermTypeFunc:
		if elem, ok = a.call(t.Func); !ok {
			return false, false
		}
	case gojq.TermTypeObject:
		for _, kv := range t.Object.KeyVals {
			switch {
			case kv.Key != "" && kv.Key[0] == '$': // {$x}, {$x: v}
			case kv.Key != "":
				if kv.Val == nil {
					a.keys[kv.Key] = true // {a} is {a: .a}
				}
			case kv.KeyString != nil:
				if len(kv.KeyString.Queries) > 0 {
					return false, false
				}
				if kv.Val == nil {
					a.keys[kv.KeyString.Str] = true // {"a"} is {"a": .["a"]}
				}
			case kv.KeyQuery != nil:
				if !a.value(kv.KeyQuery) {
					return false, false
				}
			default:
				return false, false
			}
			if kv.Val != nil && !a.value(kv.Val) {
				return false, false
			}
		}
	case gojq.TermTypeArray:
		if t.Array.Query != nil && !a.value(t.Array.Query) {
			return false, false
		}
	case gojq.TermTypeUnary:
		if e, ok := a.term(t.Unary.Term); !ok || e {
			return false, false
		}
	case gojq.TermTypeIf:
		if !a.value(t.If.Cond) {
			return false, false
		}
		e, ok := a.query(t.If.Then)
		if !ok {
			return false, false
		}
		elem = e
		for _, ei := range t.If.Elif {
			if !a.value(ei.Cond) {
				return false, false
			}
			e, ok := a.query(ei.Then)
			if !ok {
				return false, false
			}
			elem = elem || e
		}
		if t.If.Else == nil {
			elem = true // if c then x end outputs the input when c is false
		} else {
			e, ok := a.query(t.If.Else)
			if !ok {
				return false, false
			}
			elem = elem || e
		}
	case gojq.TermTypeTry:
		// The catch body gets the error, made from values read from the element (whole), never the element:
		// errors can only come from what follows a member read, or from error(v) with v a value.
		e, ok := a.query(t.Try.Body)
		if !ok {
			return false, false
		}
		elem = e
	case gojq.TermTypeLabel:
		if elem, ok = a.query(t.Label.Body); !ok {
			return false, false
		}
	case gojq.TermTypeQuery:
		if elem, ok = a.query(t.Query); !ok {
			return false, false
		}
	default: // .., reduce, foreach, formats
		return false, false
	}
	// Suffixes: .a.b[0], .a[]?, (.).a … Index expressions inside them (.a[.i]) are evaluated on the term's input,
	// the element.
	for _, s := range t.SuffixList {
		switch {
		case s.Optional:
		case s.Iter:
			if elem {
				return false, false
			}
		case s.Index != nil:
			if elem {
				k, lit := literalKey(s.Index)
				if !lit {
					return false, false
				}
				a.keys[k] = true
				elem = false
				continue
			}
			if s.Index.Str != nil && len(s.Index.Str.Queries) > 0 {
				return false, false
			}
			if s.Index.Start != nil && !a.value(s.Index.Start) || s.Index.End != nil && !a.value(s.Index.End) {
				return false, false
			}
		default:
			return false, false
		}
	}
	return elem, true
}

// call analyses a function call evaluated on the element: the few builtins that pass their input through or do
// not read it. Anything else (length, keys, has, tojson, type, not, …) reads the whole element.
func (a *projection) call(f *gojq.Func) (elem, ok bool) {
	if len(f.Name) > 1 && f.Name[0] == '$' && len(f.Args) == 0 {
		return false, true // a variable: a parameter, $ENV
	}
	switch key := f.Name + "/" + string(rune('0'+len(f.Args))); key {
	case "empty/0", "env/0", "infinite/0", "nan/0":
		return false, true
	case "error/1":
		return false, a.value(f.Args[0])
	case "select/1":
		return true, a.value(f.Args[0])
	case "first/1", "last/1":
		return a.query(f.Args[0])
	case "limit/2":
		if !a.value(f.Args[0]) {
			return false, false
		}
		return a.query(f.Args[1])
	case "isempty/1":
		return false, a.value(f.Args[0])
	}
	return false, false
}

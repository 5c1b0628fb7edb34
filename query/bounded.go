package query

import (
	"fmt"

	"github.com/itchyny/gojq"
)

// Which programs may run inside the server process.
//
// gojq checks its context between operations, so a deadline stops any program that keeps taking steps. It cannot
// stop one operation that runs long or allocates without bound ("x" * 2000000000 allocates 2 GB in one step; tojson
// of a value nested 10^7 deep overflows the Go stack, which no recover catches), and memory can grow faster than any
// watchdog samples it. So the engine runs a program in-process only when it is *bounded*: built from constructs that
// cannot make a value larger than the input plus the program, in any number of steps. Every other program runs in a
// worker process with a memory limit, killed at its deadline (see worker.go).
//
// The bounded subset, checked on the parsed program:
//   - paths: ., .., .a, ."a", .[e], .[e:f], .[], ?, with e and f bounded;
//   - literals (no string interpolation or @format), $variables, $__loc__, $ENV (empty);
//   - pipes, commas, "as" bindings, if/elif/else, try/catch, label/break, //, and, or, comparisons;
//   - + and - with a number literal on one side, and % (they never grow strings or arrays);
//   - a fixed list of functions whose cost is linear in their input and whose result is no larger (allowedFuncs);
//   - object construction, and array construction around a finite expression (no .[], .., or generator calls),
//     only where the constructed value goes straight to the output: a program that consumes what it builds
//     ({a: ., b: .} | {a: ., b: .} | …) could double a shared value at every step.
//
// Inputs are checked too: a materialised input holding a number of more than maxNumberText characters runs in a
// worker whatever the program (gojq parses such numbers in quadratic time, in one step), and tonumber (the same
// parse, on a string of any length) is not in the subset.
//
// Not bounded: function definitions (recursion), reduce, foreach, assignments, string interpolation and formats,
// *, /, + or - between two non-literals (string and array doubling), and every other builtin (range, repeat, limit is
// allowed but while, until, recurse(f), tojson, tostring, add, join, sort, group_by, test, split, …).

// allowedFuncs maps name/arity of the builtins a bounded program may call.
var allowedFuncs = map[string]bool{
	"select/1": true, "empty/0": true, "error/0": true, "error/1": true, "not/0": true,
	"length/0": true, "utf8bytelength/0": true, "type/0": true, "keys/0": true, "keys_unsorted/0": true,
	"has/1": true, "in/1": true, "startswith/1": true, "endswith/1": true, "ltrimstr/1": true, "rtrimstr/1": true,
	"ascii_downcase/0": true, "ascii_upcase/0": true, "toboolean/0": true,
	"first/0": true, "last/0": true, "first/1": true, "last/1": true, "nth/1": true, "nth/2": true, "limit/2": true,
	"values/0": true, "nulls/0": true, "booleans/0": true, "numbers/0": true, "strings/0": true, "arrays/0": true,
	"objects/0": true, "iterables/0": true, "scalars/0": true, "recurse/0": true,
	"any/0": true, "all/0": true, "any/1": true, "all/1": true, "any/2": true, "all/2": true, "isempty/1": true,
	"min/0": true, "max/0": true, "getpath/1": true,
	"floor/0": true, "ceil/0": true, "round/0": true, "fabs/0": true, "sqrt/0": true, "abs/0": true,
	"isnan/0": true, "isinfinite/0": true, "isnormal/0": true, "infinite/0": true, "nan/0": true,
	"$__loc__/0": true, "$ENV/0": true, "env/0": true,
}

// classify decides whether a program is bounded; when not, it says why (for Result.Plan).
func classify(q *gojq.Query) (bool, string) {
	c := &classifier{}
	c.query(q, true)
	return c.why == "", c.why
}

type classifier struct {
	why string
}

func (c *classifier) no(format string, args ...any) bool {
	if c.why == "" {
		c.why = fmt.Sprintf(format, args...)
	}
	return false
}

// query checks q; out says whether q's outputs go straight to the program's output (so it may construct values).
// It returns whether q is finite: yields a number of outputs fixed by the program text (no iteration .[], no
// recursion .., no generator calls), which an array constructed around it needs.
func (c *classifier) query(q *gojq.Query, out bool) bool {
	if q == nil {
		return true
	}
	if c.why != "" {
		return false
	}
	if len(q.FuncDefs) > 0 {
		return c.no("defines functions")
	}
	if q.Term != nil {
		return c.term(q.Term, out)
	}
	var fin bool
	switch q.Op {
	case gojq.OpPipe:
		fin = c.query(q.Left, false)
		for _, p := range q.Patterns {
			fin = c.pattern(p) && fin
		}
		fin = c.query(q.Right, out) && fin
	case gojq.OpComma, gojq.OpAlt:
		fin = c.query(q.Left, out)
		fin = c.query(q.Right, out) && fin
	case gojq.OpAnd, gojq.OpOr, gojq.OpEq, gojq.OpNe, gojq.OpLt, gojq.OpLe, gojq.OpGt, gojq.OpGe, gojq.OpMod:
		fin = c.query(q.Left, false)
		fin = c.query(q.Right, false) && fin
	case gojq.OpAdd, gojq.OpSub:
		if !isNumberLiteral(q.Left) && !isNumberLiteral(q.Right) {
			return c.no("uses %s between two computed values", q.Op)
		}
		fin = c.query(q.Left, false)
		fin = c.query(q.Right, false) && fin
	default:
		return c.no("uses the operator %s", q.Op)
	}
	return fin && c.why == ""
}

func isNumberLiteral(q *gojq.Query) bool {
	if q == nil || q.Term == nil || len(q.Term.SuffixList) > 0 {
		return false
	}
	t := q.Term
	if t.Type == gojq.TermTypeUnary && len(t.Unary.Term.SuffixList) == 0 {
		t = t.Unary.Term
	}
	return t.Type == gojq.TermTypeNumber
}

func (c *classifier) term(t *gojq.Term, out bool) bool {
	if c.why != "" {
		return false
	}
	fin := true
	if len(t.SuffixList) > 0 {
		out = false // the term's value is indexed, not output
		for _, s := range t.SuffixList {
			fin = c.index(s.Index) && fin && !s.Iter
		}
	}
	switch t.Type {
	case gojq.TermTypeIdentity, gojq.TermTypeNull, gojq.TermTypeTrue, gojq.TermTypeFalse, gojq.TermTypeNumber,
		gojq.TermTypeBreak:
	case gojq.TermTypeRecurse:
		fin = false
	case gojq.TermTypeIndex:
		fin = c.index(t.Index) && fin
	case gojq.TermTypeFunc:
		f := t.Func
		if len(f.Args) == 0 && len(f.Name) > 1 && f.Name[0] == '$' {
			break // a variable
		}
		key := fmt.Sprintf("%s/%d", f.Name, len(f.Args))
		if !allowedFuncs[key] {
			return c.no("calls %s", key)
		}
		fin = singleOutput[f.Name] && fin
		for _, a := range f.Args {
			fin = c.query(a, false) && fin
		}
	case gojq.TermTypeObject:
		if !out {
			return c.no("builds an object that it goes on to use")
		}
		for _, kv := range t.Object.KeyVals {
			if kv.KeyString != nil && len(kv.KeyString.Queries) > 0 {
				return c.no("interpolates a string")
			}
			fin = c.query(kv.KeyQuery, false) && fin
			fin = c.query(kv.Val, true) && fin
		}
	case gojq.TermTypeArray:
		if !out {
			return c.no("builds an array that it goes on to use")
		}
		if !c.query(t.Array.Query, true) {
			return c.no("collects a generator into an array")
		}
	case gojq.TermTypeUnary:
		fin = c.term(t.Unary.Term, false) && fin
	case gojq.TermTypeString:
		if len(t.Str.Queries) > 0 {
			return c.no("interpolates a string")
		}
	case gojq.TermTypeFormat:
		return c.no("uses %s", t.Format)
	case gojq.TermTypeIf:
		fin = c.query(t.If.Cond, false) && fin
		fin = c.query(t.If.Then, out) && fin
		for _, e := range t.If.Elif {
			fin = c.query(e.Cond, false) && fin
			fin = c.query(e.Then, out) && fin
		}
		fin = c.query(t.If.Else, out) && fin
	case gojq.TermTypeTry:
		fin = c.query(t.Try.Body, out) && fin
		fin = c.query(t.Try.Catch, out) && fin
	case gojq.TermTypeLabel:
		fin = c.query(t.Label.Body, out) && fin
	case gojq.TermTypeQuery:
		fin = c.query(t.Query, out) && fin
	case gojq.TermTypeReduce:
		return c.no("uses reduce")
	case gojq.TermTypeForeach:
		return c.no("uses foreach")
	default:
		return c.no("uses a construct the classifier does not know")
	}
	return fin && c.why == ""
}

func (c *classifier) index(x *gojq.Index) bool {
	if x == nil {
		return true
	}
	if x.Str != nil && len(x.Str.Queries) > 0 {
		return c.no("interpolates a string")
	}
	fin := c.query(x.Start, false)
	return c.query(x.End, false) && fin
}

func (c *classifier) pattern(p *gojq.Pattern) bool {
	if p == nil {
		return true
	}
	fin := true
	for _, a := range p.Array {
		fin = c.pattern(a) && fin
	}
	for _, o := range p.Object {
		if o.KeyString != nil && len(o.KeyString.Queries) > 0 {
			return c.no("interpolates a string")
		}
		fin = c.query(o.KeyQuery, false) && fin
		fin = c.pattern(o.Val) && fin
	}
	return fin
}

// singleOutput are allowed functions that yield at most one value per input (given finite arguments).
var singleOutput = map[string]bool{
	"first": true, "last": true, "nth": true, "limit": true, "any": true, "all": true, "isempty": true,
	"select": true, "error": true, "empty": true, "getpath": true, "not": true, "length": true,
	"utf8bytelength": true, "type": true, "has": true, "in": true, "startswith": true, "endswith": true,
	"ltrimstr": true, "rtrimstr": true, "ascii_downcase": true, "ascii_upcase": true,
	"toboolean": true, "min": true, "max": true, "floor": true, "ceil": true, "round": true, "fabs": true,
	"sqrt": true, "abs": true, "isnan": true, "isinfinite": true, "isnormal": true, "infinite": true, "nan": true,
	"keys": true, "keys_unsorted": true, "values": true, "nulls": true, "booleans": true, "numbers": true,
	"strings": true, "arrays": true, "objects": true, "iterables": true, "scalars": true, "env": true,
}

package query

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/itchyny/gojq"
)

// program is one analysed jq program: parsed, checked against the policy, classified, with its pushdown plan and
// its compiled code. It is immutable once built, except for the lazily compiled rests, and safe to share: gojq's
// *Code may be run from many goroutines at once.
type program struct {
	text string
	vars []string // the parameter names, sorted; $name in the program
	ast  *gojq.Query

	bounded bool   // may run in-process (see bounded.go)
	why     string // why not, for Result.Plan

	plan plan

	mu     sync.Mutex
	rest   map[int]*gojq.Code // compiled remainder after k pushed-down steps
	splits map[int]*splitPlan // how the remainder after k steps splits over an array's elements (split.go); nil: it does not
}

// step is one leading literal path step: .name, ."name", .["name"], .[3], .[-1] or .[$param].
type step struct {
	ix      *gojq.Index // the step as written
	key     string      // for a member name
	index   int         // for an array index (negative counts from the end, as in jq)
	isIndex bool
	param   string // for .[$param]: the parameter (resolved at run time)
}

// plan is how a program reads its input: the leading literal path it starts with, and what is left after it.
type plan struct {
	steps []step
	term  *gojq.Term  // the term the path starts (nil when there is no path)
	after int         // index in term.SuffixList of the first suffix that is not a pushed step
	top   *gojq.Query // the program, when the path is the left side of its top-level pipe
}

// whole reports whether the program is nothing but its literal path.
func (p *plan) whole() bool {
	return p.term != nil && p.top == nil && p.after == len(p.term.SuffixList)
}

// pointerText is the path as a JSON Pointer, for Result.Plan (params shown as $name).
func (p *plan) pointerText() string {
	var b strings.Builder
	for _, s := range p.steps {
		b.WriteByte('/')
		switch {
		case s.param != "":
			b.WriteString("$" + s.param)
		case s.isIndex:
			b.WriteString(strconv.Itoa(s.index))
		default:
			b.WriteString(strings.ReplaceAll(strings.ReplaceAll(s.key, "~", "~0"), "/", "~1"))
		}
	}
	return b.String()
}

// restQuery builds the program that remains once the first k steps have been read by pointer: the unread steps and
// the rest of the term, then the rest of the pipe.
func (p *plan) restQuery(k int) *gojq.Query {
	var sfx []*gojq.Suffix
	for _, s := range p.steps[k:] {
		sfx = append(sfx, &gojq.Suffix{Index: s.ix})
	}
	sfx = append(sfx, p.term.SuffixList[p.after:]...)
	q := &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeIdentity, SuffixList: sfx}}
	if p.top != nil {
		q = &gojq.Query{FuncDefs: p.top.FuncDefs, Left: q, Op: gojq.OpPipe, Right: p.top.Right}
	}
	return q
}

// compileOptions are the options every program is compiled with: an empty environment ($ENV and env are {}), no
// module loader (import and include fail), no input iterator (input and inputs fail; the policy refuses them first).
func compileOptions(vars []string) []gojq.CompilerOption {
	return []gojq.CompilerOption{
		gojq.WithEnvironLoader(func() []string { return nil }),
		gojq.WithVariables(dollar(vars)),
	}
}

func dollar(vars []string) []string {
	out := make([]string, len(vars))
	for i, v := range vars {
		out[i] = "$" + v
	}
	return out
}

// analyse parses and checks a program. vars are the sorted parameter names.
func analyse(text string, vars []string) (*program, error) {
	ast, err := gojq.Parse(text)
	if err != nil {
		var pe *gojq.ParseError
		off := -1
		if errors.As(err, &pe) {
			off = max(pe.Offset-len(pe.Token), 0)
		}
		return nil, queryErr(text, off, "the program does not parse: %s", clipMessage(err.Error()))
	}
	if err := checkPolicy(text, ast); err != nil {
		return nil, err
	}
	p := &program{text: text, vars: vars, ast: ast, rest: map[int]*gojq.Code{}}
	// Compile the whole program once in the analysing process, so that errors (unknown functions and variables, a
	// program that is only a comment) are reported before any data is read, even for programs that will run in a
	// worker, and before the analyses below, which expect a program that compiles.
	if _, err := p.code(-1); err != nil {
		return nil, err
	}
	p.plan = planOf(ast, vars)
	p.bounded, p.why = classify(ast)
	return p, nil
}

// code returns the compiled program after k pushed-down steps; k < 0 is the whole program.
func (p *program) code(k int) (*gojq.Code, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.rest[k]; ok {
		return c, nil
	}
	q := p.ast
	if k >= 0 && p.plan.term != nil {
		q = p.plan.restQuery(k)
	}
	c, err := gojq.Compile(q, compileOptions(p.vars)...)
	if err != nil {
		return nil, compileError(p.text, err)
	}
	p.rest[k] = c
	return c, nil
}

var (
	reFuncNotFound = regexp.MustCompile(`^function not defined: ([A-Za-z_][A-Za-z0-9_:]*)/`)
	reVarNotFound  = regexp.MustCompile(`^variable not defined: (\$[A-Za-z_][A-Za-z0-9_:]*)`)
)

// compileError places a compile error in the program where the name it is about occurs.
func compileError(text string, err error) error {
	msg := clipMessage(err.Error())
	off := -1
	if m := reFuncNotFound.FindStringSubmatch(msg); m != nil {
		off = findName(text, m[1])
	} else if m := reVarNotFound.FindStringSubmatch(msg); m != nil {
		off = findName(text, m[1])
	}
	return queryErr(text, off, "the program does not compile: %s", msg)
}

// forbidden are the functions a Strata query may not call: they read from or write to the host (input, debug, …)
// or end the process (halt). Programs that name them are refused before anything runs.
var forbidden = map[string]string{
	"input":             "a query reads only the document it is given",
	"inputs":            "a query reads only the document it is given",
	"input_filename":    "a query reads no files",
	"input_line_number": "a query reads no files",
	"debug":             "a query has no debug output",
	"stderr":            "a query has no error output",
	"halt":              "a query cannot stop the server",
	"halt_error":        "a query cannot stop the server; use error(…) to fail",
	"modulemeta":        "a query loads no modules",
	"get_search_list":   "a query loads no modules",
	"get_prog_origin":   "a query loads no modules",
	"get_jq_origin":     "a query loads no modules",
	"$__prog_args":      "a query has no program arguments",
}

// checkPolicy refuses imports, includes and the forbidden functions, wherever they appear (also inside function
// definitions and string interpolations), and function definitions that would shadow them.
func checkPolicy(text string, q *gojq.Query) error {
	var err error
	walkQuery(q, func(q *gojq.Query) {
		if err != nil {
			return
		}
		if len(q.Imports) > 0 {
			kw := "import"
			if q.Imports[0].IncludePath != "" {
				kw = "include"
			}
			err = queryErr(text, findName(text, kw), "%s is not available: a query loads no modules", kw)
		}
		for _, fd := range q.FuncDefs {
			if why, ok := forbidden[fd.Name]; ok && err == nil {
				err = queryErr(text, findName(text, fd.Name), "%s is a reserved name (%s)", fd.Name, why)
			}
		}
	}, func(f *gojq.Func) {
		if err != nil {
			return
		}
		if why, ok := forbidden[f.Name]; ok {
			err = queryErr(text, findName(text, f.Name), "%s is not available in Strata queries: %s", f.Name, why)
		}
	})
	return err
}

// walkQuery visits every query and function call in a program.
func walkQuery(q *gojq.Query, onQuery func(*gojq.Query), onFunc func(*gojq.Func)) {
	var query func(q *gojq.Query)
	var term func(t *gojq.Term)
	var str func(s *gojq.String)
	var index func(x *gojq.Index)
	var pattern func(p *gojq.Pattern)
	query = func(q *gojq.Query) {
		if q == nil {
			return
		}
		onQuery(q)
		for _, fd := range q.FuncDefs {
			query(fd.Body)
		}
		term(q.Term)
		query(q.Left)
		query(q.Right)
		for _, p := range q.Patterns {
			pattern(p)
		}
	}
	str = func(s *gojq.String) {
		if s != nil {
			for _, x := range s.Queries {
				query(x)
			}
		}
	}
	index = func(x *gojq.Index) {
		if x != nil {
			str(x.Str)
			query(x.Start)
			query(x.End)
		}
	}
	pattern = func(p *gojq.Pattern) {
		if p == nil {
			return
		}
		for _, a := range p.Array {
			pattern(a)
		}
		for _, o := range p.Object {
			str(o.KeyString)
			query(o.KeyQuery)
			pattern(o.Val)
		}
	}
	term = func(t *gojq.Term) {
		if t == nil {
			return
		}
		index(t.Index)
		if t.Func != nil {
			onFunc(t.Func)
			for _, a := range t.Func.Args {
				query(a)
			}
		}
		if t.Object != nil {
			for _, kv := range t.Object.KeyVals {
				str(kv.KeyString)
				query(kv.KeyQuery)
				query(kv.Val)
			}
		}
		if t.Array != nil {
			query(t.Array.Query)
		}
		if t.Unary != nil {
			term(t.Unary.Term)
		}
		str(t.Str)
		if t.If != nil {
			query(t.If.Cond)
			query(t.If.Then)
			for _, e := range t.If.Elif {
				query(e.Cond)
				query(e.Then)
			}
			query(t.If.Else)
		}
		if t.Try != nil {
			query(t.Try.Body)
			query(t.Try.Catch)
		}
		if t.Reduce != nil {
			query(t.Reduce.Query)
			for _, p := range t.Reduce.Patterns {
				pattern(p)
			}
			query(t.Reduce.Start)
			query(t.Reduce.Update)
		}
		if t.Foreach != nil {
			query(t.Foreach.Query)
			for _, p := range t.Foreach.Patterns {
				pattern(p)
			}
			query(t.Foreach.Start)
			query(t.Foreach.Update)
			query(t.Foreach.Extract)
		}
		if t.Label != nil {
			query(t.Label.Body)
		}
		query(t.Query)
		for _, s := range t.SuffixList {
			index(s.Index)
		}
	}
	query(q)
}

// planOf finds the leading literal path of a program: the whole program, or the left side of its top-level pipe
// (not a binding "… as $x |", whose right side reads the original input).
func planOf(q *gojq.Query, vars []string) plan {
	var p plan
	lead := q
	if q.Term == nil {
		if q.Op != gojq.OpPipe || len(q.Patterns) > 0 || q.Left == nil || q.Left.Term == nil ||
			len(q.Left.FuncDefs) > 0 || len(q.Left.Imports) > 0 {
			return p
		}
		lead = q.Left
		p.top = q
	}
	t := lead.Term
	if t.Type != gojq.TermTypeIndex && t.Type != gojq.TermTypeIdentity {
		return plan{}
	}
	isVar := map[string]bool{}
	for _, v := range vars {
		isVar[v] = true
	}
	var steps []step
	if t.Type == gojq.TermTypeIndex {
		s, ok := literalStep(t.Index, isVar)
		if !ok {
			return plan{}
		}
		steps = append(steps, s)
	}
	after := 0
	for ; after < len(t.SuffixList); after++ {
		sf := t.SuffixList[after]
		if sf.Index == nil {
			break
		}
		s, ok := literalStep(sf.Index, isVar)
		if !ok {
			break
		}
		steps = append(steps, s)
	}
	if len(steps) == 0 {
		return plan{}
	}
	// Reading the path by pointer replaces the term's input with the subtree the path leads to. That is sound only
	// if nothing after the path reads the term's input: an index or slice computed from it (.users[.k],
	// .nums[length-1:], .obj[keys[0]]) evaluates against the program's input, not against the subtree, so such a
	// program is not pushed down at all (materialising the whole input is the only way to answer it).
	for _, sf := range t.SuffixList[after:] {
		if sf.Index != nil && !inputFreeIndex(sf.Index) {
			return plan{}
		}
	}
	p.steps, p.term, p.after = steps, t, after
	return p
}

// inputFreeIndex reports whether an index or slice can be evaluated without the input it is applied to: a name, a
// plain string, or bounds that are constants (numbers, plain strings, null, true, false, $variables, and arithmetic,
// comparisons and alternatives of those). Anything else may read "." and is treated as reading it.
func inputFreeIndex(x *gojq.Index) bool {
	if x.Str != nil && len(x.Str.Queries) > 0 {
		return false
	}
	return (x.Start == nil || constQuery(x.Start)) && (x.End == nil || constQuery(x.End))
}

// constQuery reports whether q's value does not depend on its input. It is conservative: false means "may depend".
func constQuery(q *gojq.Query) bool {
	if q == nil {
		return true
	}
	if len(q.FuncDefs) > 0 || len(q.Imports) > 0 || len(q.Patterns) > 0 {
		return false
	}
	if q.Term == nil {
		switch q.Op {
		case gojq.OpAdd, gojq.OpSub, gojq.OpMul, gojq.OpDiv, gojq.OpMod, gojq.OpEq, gojq.OpNe, gojq.OpGt, gojq.OpLt,
			gojq.OpGe, gojq.OpLe, gojq.OpAnd, gojq.OpOr, gojq.OpAlt, gojq.OpComma:
			return constQuery(q.Left) && constQuery(q.Right)
		}
		return false
	}
	return constTerm(q.Term)
}

func constTerm(t *gojq.Term) bool {
	for _, sf := range t.SuffixList {
		if sf.Index != nil && !inputFreeIndex(sf.Index) {
			return false
		}
	}
	switch t.Type {
	case gojq.TermTypeNumber, gojq.TermTypeNull, gojq.TermTypeTrue, gojq.TermTypeFalse:
		return true
	case gojq.TermTypeString:
		return t.Str == nil || len(t.Str.Queries) == 0
	case gojq.TermTypeFunc:
		// A $variable: bound outside the program (parameters, $ENV, $__loc__); the leading path of a program is
		// never inside a binding.
		return strings.HasPrefix(t.Func.Name, "$") && len(t.Func.Args) == 0
	case gojq.TermTypeUnary:
		return constTerm(t.Unary.Term)
	case gojq.TermTypeQuery:
		return constQuery(t.Query)
	}
	return false
}

// literalStep recognises one literal index: .name, ."name", .["name"], .[3], .[-3], .[$param].
func literalStep(x *gojq.Index, isVar map[string]bool) (step, bool) {
	switch {
	case x == nil || x.IsSlice || x.End != nil:
		return step{}, false
	case x.Name != "":
		return step{ix: x, key: x.Name}, true
	case x.Str != nil:
		if len(x.Str.Queries) > 0 {
			return step{}, false
		}
		return step{ix: x, key: x.Str.Str}, true
	case x.Start != nil:
		q := x.Start
		if q.Term == nil || len(q.Term.SuffixList) > 0 || len(q.FuncDefs) > 0 {
			return step{}, false
		}
		t := q.Term
		neg := false
		if t.Type == gojq.TermTypeUnary && t.Unary.Op == gojq.OpSub && len(t.Unary.Term.SuffixList) == 0 {
			neg, t = true, t.Unary.Term
		}
		switch t.Type {
		case gojq.TermTypeNumber:
			n, err := strconv.Atoi(t.Number)
			if err != nil || n > 1<<40 {
				return step{}, false
			}
			if neg {
				n = -n
			}
			return step{ix: x, index: n, isIndex: true}, true
		case gojq.TermTypeString:
			if neg || len(t.Str.Queries) > 0 {
				return step{}, false
			}
			return step{ix: x, key: t.Str.Str}, true
		case gojq.TermTypeFunc:
			if neg || len(t.Func.Args) > 0 || !strings.HasPrefix(t.Func.Name, "$") || !isVar[t.Func.Name[1:]] {
				return step{}, false
			}
			return step{ix: x, param: t.Func.Name[1:]}, true
		}
	}
	return step{}, false
}

// findName returns the offset of the first use of an identifier (a function, keyword or $variable) in program
// text, skipping comments, string literals (but not the code interpolated into them), field names (.name) and
// object keys (name:). It returns -1 when not found.
func findName(text, name string) int {
	i := 0
	var interp []int // paren depth at which each open string interpolation ends
	depth := 0
	inString := false
	for i < len(text) {
		c := text[i]
		if inString {
			switch c {
			case '\\':
				if i+1 < len(text) && text[i+1] == '(' {
					inString = false
					depth++
					interp = append(interp, depth)
					i += 2
					continue
				}
				i += 2
				continue
			case '"':
				inString = false
			}
			i++
			continue
		}
		switch {
		case c == '#':
			for i < len(text) && text[i] != '\n' {
				i++
			}
			continue
		case c == '"':
			inString = true
			i++
			continue
		case c == '(':
			depth++
		case c == ')':
			if n := len(interp); n > 0 && interp[n-1] == depth {
				interp = interp[:n-1]
				inString = true
			}
			depth--
		case c == '$' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			start := i
			i++
			for i < len(text) && (text[i] == '_' || text[i] == ':' && i+1 < len(text) && text[i+1] == ':' ||
				text[i] >= 'a' && text[i] <= 'z' || text[i] >= 'A' && text[i] <= 'Z' || text[i] >= '0' && text[i] <= '9') {
				if text[i] == ':' {
					i++
				}
				i++
			}
			if text[start:i] != name {
				continue
			}
			if start > 0 && text[start-1] == '.' {
				continue // a field name
			}
			j := i
			for j < len(text) && (text[j] == ' ' || text[j] == '\t' || text[j] == '\n' || text[j] == '\r') {
				j++
			}
			if name[0] != '$' && j < len(text) && text[j] == ':' && (j+1 >= len(text) || text[j+1] != ':') {
				continue // an object key
			}
			return start
		}
		i++
	}
	return -1
}

// validParam reports whether name can be a parameter ($name).
func validParam(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("parameter names must be 1 to 64 characters")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return fmt.Errorf("parameter name %q is not an identifier (letters, digits and _, not starting with a digit)", clipUTF8(name, 64))
		}
	}
	if name == "ENV" || name == "__loc__" || name == "__prog_args" {
		return fmt.Errorf("parameter name %q is reserved", name)
	}
	return nil
}

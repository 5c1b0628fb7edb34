package jqdiff

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"strings"
)

// A literal path in a document: how jq writes it, and the same path as a getpath array.
type litPath struct {
	jq    string
	steps []string // JSON texts of the steps (strings or integers)
	array bool     // it leads to an array
}

// Paths enumerates literal paths into v, at most depth steps deep: every member of an object; of an array the
// first, second and last element, an index past its end and a negative one before its start. The program for the
// root itself is ".".
func paths(v any, depth int) []litPath {
	var out []litPath
	var walk func(v any, p litPath, d int)
	walk = func(v any, p litPath, d int) {
		if d == depth {
			return
		}
		add := func(jqStep, step string, child any, descend bool) {
			if p.jq == "" && strings.HasPrefix(jqStep, "[") {
				jqStep = "." + jqStep // .["a/b"] and .[0] at the start, not an array literal
			}
			_, isArray := child.([]any)
			q := litPath{jq: p.jq + jqStep, steps: append(slices.Clip(p.steps), step), array: isArray}
			out = append(out, q)
			if descend {
				walk(child, q, d+1)
			}
		}
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				add(nameStep(k), quote(k), x[k], true)
			}
			add(nameStep("missing"), quote("missing"), nil, false)
		case []any:
			n := len(x)
			for _, i := range []int{0, 1, -1} {
				if i < n && -i <= n && n > 0 {
					j := i
					if j < 0 {
						j += n
					}
					add(fmt.Sprintf("[%d]", i), strconv.Itoa(i), x[j], i == 0 || i == -1)
				}
			}
			add(fmt.Sprintf("[%d]", n), strconv.Itoa(n), nil, false)
			add(fmt.Sprintf("[%d]", -n-1), strconv.Itoa(-n-1), nil, false)
		}
	}
	walk(v, litPath{}, 0)
	return out
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// nameStep writes a member step: .name for identifiers, ."…" otherwise (alternating with .["…"]).
func nameStep(k string) string {
	ident := k != ""
	for i, c := range k {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			ident = false
		}
	}
	switch {
	case ident:
		return "." + k
	case len(k)%2 == 0:
		return "." + quote(k)
	}
	return "[" + quote(k) + "]"
}

// templates are programs around a literal path P (written %[1]s; %[2]s is the path as a getpath array). They put
// after a literal prefix what the query planner must not confuse with more of the path: indexes and slices computed
// from the input, optional steps, alternatives, bindings, and whole-input references.
var templates = []struct{ prog, params string }{
	{"%[1]s", ""},
	{"%[1]s?", ""},
	{"%[1]s[]?", ""},
	{"%[1]s | length", ""},
	{"%[1]s | type", ""},
	{"%[1]s | keys?", ""},
	{"%[1]s[.k]?", ""},
	{"%[1]s[.k]", ""},
	{"%[1]s[length - 1]?", ""},
	{"%[1]s[.k:]?", ""},
	{"%[1]s[:.k]?", ""},
	{"%[1]s[1:]?", ""},
	{"%[1]s[-1:]?", ""},
	{"%[1]s[keys[0]]?", ""},
	{"%[1]s[(.k // 0)]?", ""},
	{"%[1]s[\"name\"]?", ""},
	{"%[1]s // \"default\"", ""},
	{"%[1]s as $x | [$x, .k]", ""},
	{"[%[1]s] | length", ""},
	{"path(%[1]s)", ""},
	{"try %[1]s catch \"caught\"", ""},
	{"%[1]s | tojson", ""},
	{"[%[1]s | .. | numbers]", ""},
	{"getpath(%[2]s)", ""},
	{"%[1]s | to_entries? | length", ""},
	{"%[1]s, .k", ""},
	{"{v: %[1]s}", ""},
	{"[%[1]s[]?] | length", ""},
	{"%[1]s[$i]?", `{"i": 0}`},
	{"%[1]s[$i]?", `{"i": -1}`},
	{"%[1]s[$s]?", `{"s": "name"}`},
	{"%[1]s[$s]?", `{"s": 1.5}`},
	{"%[1]s | select(. != null)", ""},
	{"reduce (%[1]s | .[]?) as $x (0; . + 1)", ""},
	{"%[1]s | tostring", ""},
	{"%[1]s | .[0]? // \"none\"", ""},
	{"%[1]s | map(type)?", ""},
	{"%[1]s | . as $v | $v", ""},
	{"%[1]s | length as $n | $n", ""},
	{"%[1]s[.nums[0]?]?", ""},
	{"%[1]s | [.[]?] | length", ""},
	{"%[1]s | paths? | tojson", ""},
}

// AroundPrefixes returns programs built around the literal paths of a document: each path (up to three steps)
// with every template. With a resource name, the program's input is the object of all resources and each path
// starts with that member; without, the input is the document itself.
func AroundPrefixes(doc string, resource string) ([]Case, error) {
	v, err := Decode(doc)
	if err != nil {
		return nil, err
	}
	var out []Case
	for _, p := range append([]litPath{{}}, paths(v, 3)...) {
		jqText, steps := p.jq, p.steps
		if resource != "" {
			jqText, steps = nameStep(resource)+jqText, append([]string{quote(resource)}, steps...)
		}
		if jqText == "" {
			jqText = "."
		}
		arr := "[" + strings.Join(steps, ",") + "]"
		for _, t := range templates {
			out = append(out, Case{Program: fmt.Sprintf(t.prog, jqText, arr), Params: t.params})
		}
	}
	return out, nil
}

// Random makes a random document (JSON text) and a random program over it, with its parameters. The programs are
// small and finite by construction: they mix literal paths into the document with computed indexes and slices,
// optional steps, alternatives, bindings, reductions, path expressions and string and number functions, and never
// loop without bound or build values much larger than the document.
func Random(r *rand.Rand) (doc string, c Case) {
	g := &gen{r: r}
	var b strings.Builder
	g.value(&b, 0)
	doc = b.String()
	v, _ := Decode(doc)
	g.paths = paths(v, 3)
	g.params = map[string]string{}
	prog := g.program()
	if len(g.params) > 0 {
		var pb strings.Builder
		pb.WriteByte('{')
		first := true
		for _, k := range sortedKeys(g.params) {
			if !first {
				pb.WriteByte(',')
			}
			first = false
			pb.WriteString(quote(k) + ":" + g.params[k])
		}
		pb.WriteByte('}')
		c.Params = pb.String()
	}
	c.Program = prog
	return doc, c
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

type gen struct {
	r      *rand.Rand
	paths  []litPath
	params map[string]string
}

var (
	genKeys    = []string{"a", "b", "k", "name", "nums", "users", "id", "x", "a/b", "m~n", "", "é", "0"}
	genStrings = []string{`""`, `"Ada"`, `"bob"`, `"a b"`, `"é"`, `"😀"`, `"\u0000x"`, `"<b>&"`, `"line\nbreak"`, `"1"`,
		`"name"`, `"\u202eevil"`, `"a/b"`, `"ABC"`}
	genNumbers = []string{"0", "1", "2", "3", "-1", "10", "20", "1.10", "2.50", "0.1", "1e3", "-0", "1E-7",
		"100000000000000000000", "-9223372036854775809", "9223372036854775807", "1.5", "99", "1e400", "0.30000000000000004"}
)

func (g *gen) pick(xs []string) string { return xs[g.r.Intn(len(xs))] }

// value writes a random JSON value; most are objects and arrays near the top, scalars deeper down.
func (g *gen) value(b *strings.Builder, depth int) {
	n := g.r.Intn(10)
	if depth == 0 {
		n = 9 // an object at the top
	}
	switch {
	case depth >= 4 || n < 3:
		switch g.r.Intn(5) {
		case 0:
			b.WriteString(g.pick([]string{"null", "true", "false"}))
		case 1, 2:
			b.WriteString(g.pick(genNumbers))
		default:
			b.WriteString(g.pick(genStrings))
		}
	case n < 6:
		size := g.r.Intn(5)
		if g.r.Intn(12) == 0 {
			size = 150 + g.r.Intn(300) // large enough to spill into several nodes
		}
		b.WriteByte('[')
		for i := 0; i < size; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			if size > 20 {
				fmt.Fprintf(b, `{"id":%d,"name":"user-%d","score":%d,"tags":["a","b"]}`, i, i, i%100)
				continue
			}
			g.value(b, depth+1)
		}
		b.WriteByte(']')
	default:
		size := 1 + g.r.Intn(5)
		seen := map[string]bool{}
		b.WriteByte('{')
		first := true
		for i := 0; i < size; i++ {
			k := g.pick(genKeys)
			if seen[k] {
				continue
			}
			seen[k] = true
			if !first {
				b.WriteByte(',')
			}
			first = false
			b.WriteString(quote(k) + ":")
			g.value(b, depth+1)
		}
		b.WriteByte('}')
	}
}

// path returns a random literal path into the document (sometimes one that leads nowhere).
func (g *gen) path() string {
	if len(g.paths) == 0 || g.r.Intn(8) == 0 {
		return "." + g.pick([]string{"a", "k", "users", "nums", "missing"})
	}
	return g.paths[g.r.Intn(len(g.paths))].jq
}

// program is a literal path, with a suffix that reads the input, then maybe a pipe into a filter; or one of the
// forms that wrap a path.
func (g *gen) program() string {
	p := g.path() + g.suffix()
	switch g.r.Intn(10) {
	case 0:
		return p + " as $x | " + g.expr(2)
	case 1:
		return p + " // " + g.expr(2)
	case 2:
		return "[" + p + "] | " + g.filter()
	case 3:
		return "path(" + p + ")"
	case 4:
		return "try (" + p + ") catch \"caught\""
	case 5:
		return "reduce (" + p + " | .[]?) as $x (0; . + 1)"
	case 6:
		return p + ", " + g.expr(2)
	case 7:
		// A program that splits over the elements of an array the path leads to (query/split.go in Strata).
		var arrays []string
		for _, lp := range g.paths {
			if lp.array {
				arrays = append(arrays, lp.jq)
			}
		}
		if len(arrays) > 0 {
			f := g.pick(splitFilters)
			if strings.Contains(f, "$p") {
				f = strings.ReplaceAll(f, "$p", g.param())
			}
			return g.pick(arrays) + " | " + f
		}
	}
	if g.r.Intn(2) == 0 {
		return p + " | " + g.filter()
	}
	return p
}

// suffix is zero or more steps after a literal path: computed indexes and slices, iteration, ?, more names.
func (g *gen) suffix() string {
	var b strings.Builder
	for n := g.r.Intn(3); n > 0; n-- {
		switch g.r.Intn(7) {
		case 0:
			b.WriteString("[" + g.expr(1) + "]")
		case 1:
			b.WriteString("[" + g.expr(1) + ":]")
		case 2:
			b.WriteString("[:" + g.expr(1) + "]")
		case 3:
			b.WriteString("[]")
		case 4:
			b.WriteString("?")
		case 5:
			b.WriteString(nameStep(g.pick(genKeys)))
		default:
			b.WriteString(fmt.Sprintf("[%d]", g.r.Intn(5)-2))
		}
	}
	if g.r.Intn(3) == 0 {
		b.WriteString("?")
	}
	return b.String()
}

// expr is a value computed from the input.
func (g *gen) expr(depth int) string {
	if depth <= 0 {
		switch g.r.Intn(4) {
		case 0:
			return g.pick(genNumbers)
		case 1:
			return g.pick(genStrings)
		case 2:
			return g.param()
		}
		return g.path()
	}
	switch g.r.Intn(12) {
	case 0:
		return "length"
	case 1:
		return "(keys[0]?)"
	case 2:
		return "(" + g.expr(depth-1) + " + " + g.expr(depth-1) + ")"
	case 3:
		return "(" + g.expr(depth-1) + " - 1)"
	case 4:
		return "(" + g.expr(depth-1) + " / 10)"
	case 5:
		return "(" + g.expr(depth-1) + " // 0)"
	case 6:
		return "(" + g.path() + g.suffix() + ")"
	case 7:
		return "(if " + g.expr(depth-1) + " then " + g.expr(depth-1) + " else " + g.expr(depth-1) + " end)"
	case 8:
		return "(" + g.expr(depth-1) + " | tostring)"
	case 9:
		return "([" + g.path() + "] | length)"
	case 10:
		return "(try " + g.expr(depth-1) + " catch 0)"
	}
	return g.expr(0)
}

func (g *gen) param() string {
	name := g.pick([]string{"p", "q"})
	if _, ok := g.params[name]; !ok {
		g.params[name] = g.pick(append(slices.Clip(genNumbers[:8]), `"name"`, `"a"`, `null`, `[1,2]`, `{"a":1}`))
	}
	return "$" + name
}

var filters = []string{
	"length", "keys", "type", ".[]?", "tojson", "tostring", "add?", "sort?", "unique?", "to_entries?",
	"[paths] | length", "[.. | scalars]", "map(type)?", "first(.[]?)", "limit(2; .[]?)", "[.[]?] | length",
	"select(. != null)", "ascii_downcase?", "split(\"a\")?", "test(\"a\")?", "ltrimstr(\"a\")?", "@base64?",
	"@json", "\"x\\(.)y\"", "[.. | numbers]", "min?", "max?", "del(.a)?", "to_entries? | from_entries",
	"with_entries(.value |= tostring)?", "has(\"a\")?", "index(\"a\")?", "tonumber?", "group_by(.id)?",
	"map(.score? // 0) | add?", ". == 1", "[.[]? | numbers] | add", "getpath([\"a\"])?", "[leaf_paths?]",
	"tostream", "isempty(.[]?)", "any", "all", "$__loc__", "utf8bytelength?", "implode?", "explode?",
	"ascii?", "splits(\"a\")?", "[range(3)]", "floor?", "sqrt?", "abs?", ". * 2?", ". + 1?", "-(.)?",
	"indices(1)?", "inside([1,2,3])?", "contains(\"a\")?", "tojson | fromjson", "@text", "@html?", "@sh?",
	"@uri?", "@csv?", "@tsv?", "ascii_upcase?", "getpath([0])?", "splits(\"b\")?", "sub(\"a\"; \"b\")?",
}

// splitFilters are programs that split over an array's elements in Strata (query/split.go), and near misses.
var splitFilters = []string{
	"[.[] | select(.score > 50)] | length", "[.[] | select(.score? > $p)] | length", "map(.score?) | add",
	".[] | select(.id? == 7) | .name?", "map(select(.score? >= 98) | {id, name})", "[.[] | .tags?[0]] | length > 1",
	".[] | .score + 1", "[.[] | numbers] | add", "add", "map(.id?) | add | . + 1", "[.[] | type] | .[0:2]",
	".[] | select(.) | .id?", "[.[] | if .score? > 90 then error(\"big\") else . end] | length", ".[]",
	"[.[] | select(.name? == $p)] | length", "map(.name?) | add", ".[] | select(.score? < 3 or .id? == 200)",
	"[.[] | .id?] | length | . % 7", "map(select(.score? != 5)) | .[-1:]", ".[]? | .id?", "[.[]] | length",
}

func (g *gen) filter() string {
	f := g.pick(filters)
	if g.r.Intn(4) == 0 {
		f += " | " + g.pick(filters)
	}
	if strings.Contains(f, "$p") {
		f = strings.ReplaceAll(f, "$p", g.param())
	}
	return f
}

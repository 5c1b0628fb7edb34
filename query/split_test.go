package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/itchyny/gojq"

	"github.com/strata-db/strata/internal/jqdiff"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
)

// The split programs (split.go) against plain gojq (internal/jqdiff) on arrays large enough to be trees of
// several levels, on a revision and on revisions after changes (so that most chunks' results come from the cache),
// with pages small enough that streams continue through cursors. Every program near the boundary of what splits
// is here: those that must split are checked to (and to reuse results after a change), those that must not are
// checked not to.

// splitDocs are the test documents: name → elements (JSON texts). An array of them is the resource.
func splitDocs() map[string][]string {
	docs := map[string][]string{}
	var objs []string
	for i := range 900 {
		var score string
		switch {
		case i%97 == 0:
			score = "90.5"
		case i%89 == 0:
			score = `"91"`
		case i%83 == 0:
			score = "null"
		case i%79 == 0:
			score = "1e2"
		case i%73 == 0:
			score = "100000000000000000000000"
		case i%71 == 0:
			score = "-0"
		default:
			score = strconv.Itoa(i % 100)
		}
		o := fmt.Sprintf(`{"id":%d,"name":"user-%d","score":%s,"tags":["t%d","u"],"active":%v`, i, i, score, i%3, i%2 == 0)
		if i%61 == 0 {
			o = fmt.Sprintf(`{"id":%d,"name":"user-%d","tags":[]`, i, i) // no score
		}
		if i%53 == 0 {
			o += `,"x":{"y":[1,{"z":"deep"}]}`
		}
		objs = append(objs, o+"}")
	}
	docs["objs"] = objs
	var wide []string // ~500 KB of elements just small enough to be inline: a tree of three levels
	pad := strings.Repeat("p", 930)
	for i := range 520 {
		wide = append(wide, fmt.Sprintf(`{"id":%d,"score":%d,"name":"w%d","pad":"%s"}`, i, (i*7)%100, i, pad))
	}
	docs["wide"] = wide
	var ints []string
	for i := range 1500 {
		switch {
		case i == 700:
			ints = append(ints, "9223372036854775807") // the sum overflows int64: gojq goes to big integers
		case i == 1400:
			ints = append(ints, "null")
		default:
			ints = append(ints, strconv.Itoa(i*i-5000))
		}
	}
	docs["ints"] = ints
	var mixed []string
	for i := range 400 {
		switch i % 8 {
		case 0:
			mixed = append(mixed, strconv.Itoa(i))
		case 1:
			mixed = append(mixed, fmt.Sprintf("%d.25", i))
		case 2:
			mixed = append(mixed, fmt.Sprintf(`"s%d"`, i))
		case 3:
			mixed = append(mixed, fmt.Sprintf(`[%d,"a",null]`, i))
		case 4:
			mixed = append(mixed, fmt.Sprintf(`{"score":%d,"k":"v%d"}`, i%100, i))
		case 5:
			mixed = append(mixed, "null")
		case 6:
			mixed = append(mixed, fmt.Sprint(i%3 == 0))
		default:
			mixed = append(mixed, "0.1")
		}
	}
	docs["mixed"] = mixed
	var floats []string
	for i := range 500 {
		floats = append(floats, fmt.Sprintf("%d.%d", i%17, i%10+1))
	}
	docs["floats"] = floats
	var strs []string
	for i := range 300 {
		strs = append(strs, fmt.Sprintf(`"s%d,"`, i))
	}
	docs["strs"] = strs
	docs["small"] = []string{`{"score":95,"id":1}`, `{"score":5,"id":2}`, "3"}
	docs["empty"] = nil
	return docs
}

// A splitCase is a program, and whether it must split on an array of objects.
type splitCase struct {
	prog   string
	params string
	split  bool
}

var splitCases = []splitCase{
	// The benchmark's program and its relatives (the fast condition, projection, whole elements).
	{`[.[] | select(.score > 90)] | length`, "", true},
	{`map(select(.score > 90)) | length`, "", true},
	{`[.[] | select(.score > $min)] | length`, `{"min": 50}`, true},
	{`[.[] | select(.score > $min)] | length`, `{"min": "a"}`, true},
	{`[.[] | select(90 < .score)] | length`, "", true},
	{`[.[] | select(.score >= 50 and .score < 60 or .name == "user-7")] | length`, "", true},
	{`[.[] | select(.score == null)] | length`, "", true},
	{`[.[] | select(.score != 90.5)] | length`, "", true},
	{`[.[] | select(.score == 1e2)] | length`, "", true},
	{`[.[] | select(.score > 90)] | length > 10`, "", true},
	{`[.[] | select(.score > (1 - "a"))] | length`, "", true},
	{`[.[] | select(.score > (1, 2))] | length`, "", true},
	{`[.[] | select(.active)] | length`, "", true},
	{`[.[] | select(.tags == ["t1","u"])] | length`, "", false}, // an array built and used: not bounded
	{`[.[] | select(.)] | length`, "", true},
	{`[.[] | select(.score > 90)] | .[0:3]`, "", true},
	{`[.[] | select(.score > 90)] | first`, "", true},
	{`[.[] | select(.score > 90)] | length, 1`, "", true},
	{`map(select(.score > 98) | .id)`, "", true},
	{`map(.score)`, "", true},
	// Streams.
	{`.[]`, "", true},
	{`.[] | .name`, "", true},
	{`.[] | select(.score > 98) | .name`, "", true},
	{`.[] | select(.id == 1234)`, "", true},
	{`.[] | {id, score}`, "", true},
	{`.[] | {id, s: .score, t: .tags[0]}`, "", true},
	{`.[] | (.score, .id)`, "", true},
	{`.[] | [.score]`, "", true},
	{`.[] | .x.y[1].z`, "", true},
	{`.[] | .score // "none"`, "", true},
	{`.[] | .score as $s | select($s == 7) | .id`, "", true},
	{`.[] | if .score > 50 then . else empty end | .id`, "", true},
	{`.[] | if .score > 97 then .name end`, "", true},
	{`.[] | try error("x") catch .`, "", true},
	{`.[] | first(.tags[]?)`, "", false}, // not finite, as the classifier counts
	{`.[] | limit(1; .tags[])`, "", false},
	{`.[] | first(.tags[0], .id)`, "", true},
	{`.[] | .score + 1`, "", true},
	{`.[] | .score / 0`, "", true},
	{`.[] | -.score`, "", true}, // gojq negates a json.Number by its text: -(0) is -0
	{`.[] | -.id`, "", true},
	{`.[] | if .id == 600 then error("at 600") else .id end`, "", true},
	{`[.[] | if .id == 600 then error("at 600") else . end] | length`, "", true},
	{`.[] | error`, "", true},
	{`.[] | error(.)`, "", true},
	{`.[] | error(null)`, "", true},
	{`.[] | empty`, "", true},
	{`[.[] | empty] | length`, "", true},
	{`.[] | getpath(["x","y"])`, "", false}, // an array built and used
	{`.[] | getpath($p)`, `{"p": ["x","y"]}`, true},
	{`.[] | length`, "", true},
	{`.[] | keys`, "", true},
	{`.[] | type`, "", true},
	{`.[] | has("score")`, "", true},
	{`.[] | env`, "", true},
	{`.[] | $ENV`, "", true},
	{`.[] | .score?`, "", true},
	{`. | .[] | .id`, "", true},
	{`(.[] | .id)`, "", true},
	// Sums.
	{`map(.score) | add`, "", true},
	{`[.[] | .id] | add`, "", true},
	{`[.[] | .id] | add | . / 2`, "", false}, // "/" is not bounded
	{`[.[] | .id] | add | . + 1`, "", true},
	{`[.[] | select(.id == 0) | .id] | add | -.`, "", true}, // add of one zero is gojq's int 0: -(0) is 0
	{`[.[] | .score | select(. == 0)] | add | -.`, "", true},
	{`map(.id) | add | -.`, "", true},
	{`[.[] | .id] | length | . % 7`, "", true},
	{`add`, "", true},
	{`map(.id) | add`, "", true},
	{`map(.id) | add`, `{"unused": 1}`, true},
	{`add | . + $n`, `{"n": 1}`, true},
	{`[.[] | numbers] | add`, "", true},
	{`[.[] | strings] | add`, "", true},
	{`[.[] | .name] | add`, "", true},
	{`map(.score > 90) | add`, "", true},
	// Near the boundary: these must not split.
	{`.[]?`, "", false},
	{`.[] | .[]`, "", false},
	{`.[] | path(..)`, "", false},
	{`.[] | paths`, "", false},
	{`.[] | tostring`, "", false},
	{`.[] | .tags[]`, "", false},
	{`[.[] | .id] | sort`, "", false},
	{`group_by(.score) | length`, "", false},
	{`group_by(.score) | map(length)`, "", false},
	{`limit(3; .[])`, "", false},
	{`first(.[] | select(.score > 90))`, "", false},
	{`[limit(3; .[] | .id)]`, "", false},
	{`.[] as $x | $x.id`, "", false},
	{`def f: .id; .[] | f`, "", false},
	{`def map(f): 1; map(.id)`, "", false},
	{`def length: 7; [.[] | .id] | length`, "", false},
	{`[.[] | .id] | def g: length; g`, "", false},
	{`reduce .[] as $x (0; . + 1)`, "", false},
	{`[.[] | select(.score > 90)] | sort_by(.id) | length`, "", false},
	{`.[] | .score as [$a] | $a`, "", true},
	{`.[] | $__loc__`, "", false},
	{`.[0].name, .[-1].id`, "", false},
	{`length`, "", false},
	// The member a projected element is marked with can be named (found in review: these answered 3000 and errors).
	{`[.[] | select(."\u0000strata: a projected element")] | length`, "", true},
	{`[.[] | .["\u0000strata: a projected element"] // "none"]`, "", true},
	{`.[] | has("\u0000strata: a projected element")`, "", true},
}

// splitOutcome is one run through the engine: every page, the error it ended with, and how the first page ran.
type splitOutcome struct {
	results [][]byte
	errText string
	plan    Plan
}

func runPaged(ctx context.Context, e *Engine, db *snapshots.DB, resource, prog string, params map[string]any, limit, max int) (splitOutcome, error) {
	return runPagedAt(ctx, e, db, snapshots.Ref{}, resource, prog, params, limit, max)
}

func runPagedAt(ctx context.Context, e *Engine, db *snapshots.DB, ref snapshots.Ref, resource, prog string, params map[string]any, limit, max int) (splitOutcome, error) {
	var out splitOutcome
	cursor := ""
	defer func() {
		if len(out.results) > max {
			out.results = out.results[:max]
		}
	}()
	for pages := 0; len(out.results) < max; pages++ {
		res, err := e.Query(ctx, db, ref, Request{Resource: resource, Program: prog, Params: params, Limit: limit, Cursor: cursor, Caller: "t"})
		if err != nil {
			out.errText = err.Error()
			return out, nil
		}
		if pages == 0 {
			out.plan = res.Plan
		}
		for _, r := range res.Results {
			out.results = append(out.results, r)
		}
		if !res.More {
			break
		}
		cursor = res.NextCursor
	}
	return out, nil
}

type splitTester struct {
	t      *testing.T
	e      *Engine
	db     *snapshots.DB
	docs   map[string][]string
	fails  []string
	splits int
	cases  int
}

func (s *splitTester) text(name string) string { return "[" + strings.Join(s.docs[name], ",") + "]" }

// check runs every case on every document and compares; after a change (reuse: the documents changed a little
// since the last check), the cases that split must have reused most chunks.
func (s *splitTester) check(names []string, reuse bool) {
	s.t.Helper()
	for _, name := range names {
		input, err := jqdiff.Decode(s.text(name))
		if err != nil {
			s.t.Fatal(err)
		}
		objects := name == "objs" || name == "wide"
		for _, c := range splitCases {
			// Programs that must not split run the plain way (many in workers): on a few documents, the first
			// results only.
			limit, max := 333, 20000
			if !c.split {
				if name != "objs" && name != "small" && name != "empty" {
					continue
				}
				limit, max = 1000, 1000
			}
			var params map[string]any
			if c.params != "" {
				v, _ := jqdiff.Decode(c.params)
				params = v.(map[string]any)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			ref := jqdiff.Run(ctx, input, c.prog, params, max)
			cancel()
			got, err := runPaged(ctxT(s.t), s.e, s.db, name, c.prog, params, limit, max)

			if err != nil {
				s.t.Fatal(err)
			}
			s.cases++
			where := fmt.Sprintf("%s on %s", c.prog, name)
			if c.params != "" {
				where += " with " + c.params
			}
			if err := jqdiff.Compare(ref, got.results, got.errText); err != nil && !refused(got.errText) {
				s.fails = append(s.fails, fmt.Sprintf("%s: %v", where, err))
			}
			split := got.plan.Split != ""
			if split {
				s.splits++
			}
			switch {
			case split && !c.split:
				s.fails = append(s.fails, fmt.Sprintf("%s: split (%+v), and must not", where, got.plan))
			case objects && c.split && !split && got.errText == "":
				s.fails = append(s.fails, fmt.Sprintf("%s: did not split (%+v)", where, got.plan))
			case objects && c.split && reuse && split && (got.plan.Reused == 0 || got.plan.Chunks > 3):
				s.fails = append(s.fails, fmt.Sprintf("%s: after a change, ran %d leaves and reused %d chunks", where, got.plan.Chunks, got.plan.Reused))
			}
		}
	}
}

// refused reports a policy refusal (a program Strata does not run, where gojq fails too or answers).
func refused(errText string) bool {
	return strings.Contains(errText, "is not available in Strata queries")
}

func (s *splitTester) report() {
	s.t.Helper()
	s.t.Logf("%d cases compared, %d split", s.cases, s.splits)
	if len(s.fails) > 0 {
		shown := s.fails
		if len(shown) > 40 {
			shown = shown[:40]
		}
		s.t.Errorf("%d failures:\n%s", len(s.fails), strings.Join(shown, "\n"))
	}
}

// TestSplitDifferential: split programs answer as gojq, on a revision and on revisions after a single-field
// commit, an insertion, a deletion and an element changing type; after each change they run a few leaves only.
func TestSplitDifferential(t *testing.T) {
	s := &splitTester{t: t, e: newEngine(t, Options{}), db: newDB(t), docs: splitDocs()}
	var names []string
	for name := range s.docs {
		names = append(names, name)
		put(t, s.db, name, s.text(name))
	}
	ctx := ctxT(t)
	// The documents are trees: "wide" of three levels (its root's children are inner nodes), "objs" of two.
	for name, levels := range map[string]int{"wide": 3, "objs": 2} {
		if got := treeLevels(t, s.db, name); got != levels {
			t.Fatalf("%s is a tree of %d levels, want %d: the test would not exercise what it says", name, got, levels)
		}
	}
	s.check(names, false)

	// A single-field commit, as an agent makes one.
	for _, name := range []string{"objs", "wide"} {
		op := revision.Operation{Op: "replace", Path: "/400/score", Value: []byte("99"), HasValue: true}
		if _, err := s.db.Patch(ctx, name, []revision.Operation{op}, snapshots.WriteOptions{Author: "t"}); err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal([]byte(s.docs[name][400]), &m)
		m["score"] = 99
		b, _ := json.Marshal(m)
		s.docs[name][400] = string(b)
	}
	s.check([]string{"objs", "wide"}, true)

	// An insertion, a deletion, an element that is no longer an object, and a sum that changes.
	objs := s.docs["objs"]
	objs = append(objs[:300], append([]string{`{"id":-1,"score":95,"name":"new"}`}, objs[300:]...)...)
	objs = append(objs[:500], objs[501:]...)
	objs[700] = `17`
	s.docs["objs"] = objs
	s.docs["ints"][5] = "12345678901234567890"
	for _, name := range []string{"objs", "ints"} {
		put(t, s.db, name, s.text(name))
	}
	s.check([]string{"objs", "ints"}, false)
	s.report()
}

// TestSplitPlainRefusals: programs a policy refuses are refused the same whether or not they would split.
func TestSplitPlainRefusals(t *testing.T) {
	e := newEngine(t, Options{})
	db := newDB(t)
	put(t, db, "a", `[{"score":1},{"score":99}]`)
	for _, prog := range []string{`.[] | input`, `[.[] | input_line_number] | length`, `map(inputs)`, `.[] | debug`} {
		_, err := e.Query(ctxT(t), db, snapshots.Ref{}, Request{Resource: "a", Program: prog})
		if !errors.Is(err, ErrQuery) || !refused(err.Error()) {
			t.Errorf("%s: %v", prog, err)
		}
	}
	// now is not bounded (it is not deterministic): never split, never kept.
	r, err := e.Query(ctxT(t), db, snapshots.Ref{}, Request{Resource: "a", Program: `[.[] | now] | length`})
	if err != nil || r.Plan.Split != "" || joined(r.Results) != "2" {
		t.Errorf("now: %v %+v", err, r)
	}
}

// TestSplitAnalysis: which programs split, which f may see projected elements (and which members), and which
// select conditions the engine evaluates itself. The differential tests check the answers; this checks that the
// analysis draws its lines where split.go says, with the cases that must stay on the safe side of each.
func TestSplitAnalysis(t *testing.T) {
	for _, c := range []struct {
		prog  string
		split string // splitPlan.name(), or "" for no split
		keys  string // the projection's members, "-" for none (whole elements)
		fast  bool
	}{
		{`[.[] | select(.score > 90)] | length`, "collect | length", "score", true},
		{`map(select(.a == "x" and (.b < 3 or 4 >= .c))) | length > 2`, "collect | length", "a,b,c", true},
		{`.[] | select(.score > $p)`, "stream", "score", true},
		{`.[] | select(.score > -1)`, "stream", "score", true},
		{`.[] | select(.a.b > 1)`, "stream", "a", false},
		{`.[] | select(.a > .b)`, "stream", "a,b", false},
		{`.[] | select(.a)`, "stream", "a", false},
		{`.[] | select(.a | not)`, "stream", "a", false},
		{`.[] | select(not)`, "stream", "-", false},
		{`.[] | select(. > 1)`, "stream", "-", false},
		{`.[] | select(.a) | .b`, "stream", "a,b", false},
		{`.[] | select(.a > 1) | .b`, "stream", "a,b", true},
		{`.[] | select(.a > 1) | {b, c: .d}`, "stream", "a,b,d", true},
		{`.[] | select(.a > 1) | .`, "stream", "a", true},
		{`.[] | .a | .b`, "stream", "a", false},
		{`.[] | {a, "b", c: .d, (.e): 1, $__loc__}`, "", "", false}, // $__loc__ does not compile in gojq
		{`.[] | {a, "b", c: .d, (.e): 1}`, "stream", "a,b,d,e", false},
		{`.[] | {a: .}`, "stream", "-", false},
		{`.[] | [.]`, "stream", "-", false},
		{`.[] | [.a]`, "stream", "a", false},
		{`.[] | ., .a`, "stream", "a", false},
		{`.[] | (., .a) | .b`, "stream", "a,b", false},
		{`.[] | .a as $x | .b`, "stream", "a,b", false},
		{`.[] | . as $x | .b`, "stream", "-", false},
		{`.[] | .a as {b: $x} | $x`, "stream", "a", false},
		{`.[] | .a as {(.k): $x} | $x`, "stream", "-", false},
		{`.[] | if .a then . else .b end`, "stream", "a,b", false},
		{`.[] | if . then 1 end`, "stream", "-", false},
		{`.[] | try .a catch .`, "stream", "a", false},
		{`.[] | .a[.i]`, "stream", "a,i", false},
		{`.[] | .a[1:.j]`, "stream", "a,j", false},
		{`.[] | .[0]`, "stream", "-", false},
		{`.[] | .["a"]`, "stream", "a", false},
		{`.[] | ."a"`, "stream", "a", false},
		{`.[] | ."a\(.b)"`, "", "", false}, // interpolation: not bounded
		{`.[] | length`, "stream", "-", false},
		{`.[] | keys`, "stream", "-", false},
		{`.[] | has("a")`, "stream", "-", false},
		{`.[] | type`, "stream", "-", false},
		{`.[] | -.a`, "stream", "a", false},
		{`.[] | -(.)`, "stream", "-", false},
		{`.[] | .a == .`, "stream", "-", false},
		{`.[] | first(.)`, "stream", "", false},
		{`.[] | first(.a, .)`, "stream", "a", false},
		{`.[] | limit(.n; .)`, "stream", "n", false},
		{`.[] | error`, "stream", "-", false},
		{`.[] | error(.a)`, "stream", "a", false},
		{`.[] | error(.)`, "stream", "-", false},
		{`.[] | getpath($p)`, "stream", "-", false},
		{`.[] | env.a`, "stream", "", false},
		{`.[] | label $f | .a, break $f`, "stream", "a", false},
		{`.[] | .a // .`, "stream", "a", false},
		{`.[] | .a?`, "stream", "a", false},
		{`.[]`, "stream", "", false},
		{`add`, "collect | add", "", false},
		{`map(.a) | add | . + 1`, "collect | add", "a", false},
		{`[.[] | .a] | length | . * 2`, "", "", false}, // * is not bounded
		{`[.[] | .a] | .[0]`, "collect | g", "a", false},
		{`[.[] | .a]`, "collect", "a", false},
		{`[.[]]`, "collect", "", false},
		{`(. | (.[] | .a))`, "stream", "a", false},
		{`.[]?`, "", "", false},
		{`.[] as $x | $x`, "", "", false},
		{`.[] | .[]`, "", "", false},
		{`.[] | ..`, "", "", false},
		{`.[] | reduce .[] as $x (0; . + $x)`, "", "", false},
		{`[.[] | .a] | sort`, "", "", false},
		{`def f: .; .[] | f`, "", "", false},
		{`def map(f): 1; map(.a)`, "", "", false},
		{`[.[] | .a] | def h: 1; h`, "", "", false},
		{`{a: [.[] | .a]} | length`, "", "", false},
		{`[.[] | .a][0]`, "", "", false},
		{`[.[] | .a] as $x | $x`, "", "", false},
		{`try ([.[] | .a] | length) catch 0`, "", "", false},
		{`label $l | .[] | ., break $l`, "", "", false},
		{`first(.[])`, "", "", false},
		{`[.[] | .a] | length, add`, "", "", false}, // add is not bounded in g
		{`[.[] | .a] | length > 2`, "collect | length", "a", false},
		{`[.[] | .a] | 2 <= length`, "collect | length", "a", false},
		{`[.[] | .a] | length > .b`, "collect | g", "a", false},
		{`[.[] | .a] | add == $p`, "collect | add", "a", false},
		{`[.[] | .a] | (add + 1) > 2`, "", "", false}, // add inside g: not bounded
	} {
		ast, err := parseForTest(c.prog)
		if err != nil {
			if c.split != "" {
				t.Errorf("%s: %v", c.prog, err)
			}
			continue
		}
		sp := splitOf(ast, []string{"p"})
		name := ""
		if sp != nil {
			name = sp.name()
		}
		if name != c.split {
			t.Errorf("%s: split %q, want %q", c.prog, name, c.split)
			continue
		}
		if sp == nil {
			continue
		}
		keys := "-"
		if sp.keys != nil {
			keys = strings.Join(sp.keys, ",")
		}
		if c.keys != "" && keys != c.keys {
			t.Errorf("%s: projection %q, want %q", c.prog, keys, c.keys)
		}
		if (sp.fast != nil) != c.fast {
			t.Errorf("%s: fast condition %v, want %v", c.prog, sp.fast != nil, c.fast)
		}
		if want := map[string]string{`.[] | .a?`: "", `map(.a) | add | . + 1`: "a", `[.[] | .a]`: "a",
			`.[] | .["a"]`: "a", `.[] | .a | .b`: ""}[c.prog]; want != sp.member && (want != "" || c.prog == `.[] | .a | .b`) {
			t.Errorf("%s: member %q, want %q", c.prog, sp.member, want)
		}
	}
}

func parseForTest(prog string) (*gojq.Query, error) {
	p, err := analyse(prog, []string{"p"})
	if err != nil {
		return nil, err
	}
	return p.ast, nil
}

// treeLevels returns how many levels of nodes the array at resource has.
func treeLevels(t *testing.T, db *snapshots.DB, resource string) int {
	ctx := ctxT(t)
	v, _, err := db.Get(ctx, snapshots.Ref{}, resource, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := revision.ArrayChunk(v)
	if err != nil {
		t.Fatal(err)
	}
	for levels := 1; ; levels++ {
		cc, err := db.Forest().ReadChunks(ctx, []revision.Chunk{c})
		if err != nil {
			t.Fatal(err)
		}
		if cc[0].Children == nil {
			return levels
		}
		c = cc[0].Children[0]
	}
}

// splitFixture is a database holding "wide" (a tree of three levels) at two revisions, a single-field commit apart.
func splitFixture(t *testing.T) (db *snapshots.DB, revs [2]uint64, docs [2]any) {
	db = newDB(t)
	elems := splitDocs()["wide"]
	text := "[" + strings.Join(elems, ",") + "]"
	revs[0] = put(t, db, "wide", text)
	docs[0], _ = jqdiff.Decode(text)
	op := revision.Operation{Op: "replace", Path: "/100/score", Value: []byte("98"), HasValue: true}
	res, err := db.Patch(ctxT(t), "wide", []revision.Operation{op}, snapshots.WriteOptions{Author: "t"})
	if err != nil {
		t.Fatal(err)
	}
	revs[1] = res.Revision
	elems[100] = strings.Replace(elems[100], `"score":0`, `"score":98`, 1)
	text = "[" + strings.Join(elems, ",") + "]"
	docs[1], _ = jqdiff.Decode(text)
	return db, revs, docs
}

var splitPrograms = []string{
	`[.[] | select(.score > 90)] | length`, `.[] | select(.score > 97) | .id`, `map(.score) | add`,
	`[.[] | select(.score > 90)] | .[-1].id`, `.[] | select(.score == 98) | {id, s: .score}`, `map(.id) | length > 3`,
}

// TestSplitConcurrent: split programs at once on two revisions sharing most chunks, with one engine: every answer
// is the one it gets alone (the race detector watches the shared results).
func TestSplitConcurrent(t *testing.T) {
	db, revs, docs := splitFixture(t)
	e := newEngine(t, Options{})
	want := map[string]string{}
	for k, rev := range revs {
		for _, p := range splitPrograms {
			ref := jqdiff.Run(ctxT(t), docs[k], p, nil, 10000)
			want[fmt.Sprint(rev, p)] = strings.Join(ref.Results, "\n")
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2 * len(splitPrograms) {
				p, rev := splitPrograms[(i+g)%len(splitPrograms)], revs[(i+g/2)%2]
				r, err := e.Query(ctxT(t), db, snapshots.Ref{Revision: rev}, Request{Resource: "wide", Program: p, Limit: 1000})
				if err != nil {
					errs <- err
					continue
				}
				var got []string
				for _, x := range r.Results {
					c, _ := jqdiff.Canon(x)
					got = append(got, c)
				}
				if s := strings.Join(got, "\n"); s != want[fmt.Sprint(rev, p)] || r.Plan.Split == "" {
					errs <- fmt.Errorf("%s at %d: %.100s (%+v), want %.100s", p, rev, s, r.Plan, want[fmt.Sprint(rev, p)])
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestSplitCacheBound: the results kept fit in the engine's cache budget, shared with materialised values; with
// a tiny budget, or none, the answers are the same.
func TestSplitCacheBound(t *testing.T) {
	db, revs, docs := splitFixture(t)
	for _, budget := range []int64{-1, 32 << 10, 512 << 20} {
		e := newEngine(t, Options{CacheBytes: budget})
		for k, rev := range revs {
			for _, p := range append(splitPrograms, `.[] | .name`, `.[]`, `.[] | .pad`) {
				ref := jqdiff.Run(ctxT(t), docs[k], p, nil, 10000)
				got, err := runPagedAt(ctxT(t), e, db, snapshots.Ref{Revision: rev}, "wide", p, nil, 1000, 10000)
				if err != nil {
					t.Fatal(err)
				}
				if err := jqdiff.Compare(ref, got.results, got.errText); err != nil || got.plan.Split == "" {
					t.Errorf("cache %d, %s at %d: %v (%+v)", budget, p, rev, err, got.plan)
				}
			}
		}
		if e.mat != nil {
			if n, used := e.mat.lru.stats(); used > budget || n == 0 {
				t.Errorf("cache budget %d: %d entries take %d bytes", budget, n, used)
			}
		}
	}
}

// TestSplitGivesUp: a split run that would keep more than its budget, or meets a number too long for gojq, gives
// up and the program runs the plain way, with the plain answer.
func TestSplitGivesUp(t *testing.T) {
	db, _, docs := splitFixture(t)
	e := newEngine(t, Options{})
	old := splitSlack
	splitSlack = 0
	defer func() { splitSlack = old }()
	// Ten copies of a 930-byte member per element: estimated at ten times the input, over 4 bytes per byte.
	p := `[.[] | {a: .pad, b: .pad, c: .pad, d: .pad, e: .pad, f: .pad, g: .pad, h: .pad, i: .pad, j: .pad}] | length`
	r, err := e.Query(ctxT(t), db, snapshots.Ref{}, Request{Resource: "wide", Program: p})
	if err != nil || r.Plan.Split != "" || joined(r.Results) != "520" {
		t.Errorf("over budget: %v %+v", err, r)
	}
	if r, err := e.Query(ctxT(t), db, snapshots.Ref{}, Request{Resource: "wide", Program: `map(.pad) | length`}); err != nil || r.Plan.Split == "" {
		t.Errorf("within budget: %v %+v", err, r)
	}
	_ = docs

	long := strings.Repeat("7", maxNumberText+1)
	put(t, db, "long", `[{"n":1},{"n":`+long+`},{"n":3}]`)
	for _, p := range []string{`[.[] | select(.n > 2)] | length`, `.[] | .n | length`, `map(.n) | length`} {
		r, err := e.Query(ctxT(t), db, snapshots.Ref{}, Request{Resource: "long", Program: p})
		if err != nil || r.Plan.Split != "" || r.Plan.Route != RouteWorker {
			t.Errorf("%s with a long number: %v %+v", p, err, r)
		}
	}
	// A member the program does not read is never given to gojq: a long number there does not matter.
	r, err = e.Query(ctxT(t), db, snapshots.Ref{}, Request{Resource: "long", Program: `[.[] | .m] | length`})
	if err != nil || r.Plan.Split == "" || joined(r.Results) != "3" {
		t.Errorf("a long number not read: %v %+v", err, r)
	}
}

// TestSplitDeadline: a split run stopped by its deadline fails, and keeps nothing wrong: the next run answers
// right.
func TestSplitDeadline(t *testing.T) {
	db := newDB(t)
	var b strings.Builder
	b.WriteString("[")
	for i := range 100_000 { // enough work to pass a 3 ms deadline even when its timer fires late on a loaded machine
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"User-%d","score":%d}`, i, i, i%100)
	}
	b.WriteString("]")
	put(t, db, "big", b.String())
	doc, _ := jqdiff.Decode(b.String())
	p := `[.[] | select(.score > 90) | .name | ascii_downcase] | length`
	short := newEngine(t, Options{Timeout: 3 * time.Millisecond})
	_, err := short.Query(ctxT(t), db, snapshots.Ref{}, Request{Resource: "big", Program: p})
	if !errors.Is(err, ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("past the deadline: %v", err)
	}
	ref := jqdiff.Run(ctxT(t), doc, p, nil, 10)
	short.opts.Timeout = time.Minute
	r, err := short.Query(ctxT(t), db, snapshots.Ref{}, Request{Resource: "big", Program: p})
	if err != nil || joined(r.Results) != strings.Join(ref.Results, "\n") || r.Plan.Split == "" {
		t.Errorf("after: %v %+v, want %v", err, r, ref.Results)
	}
}

package query

import (
	"errors"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/strata-db/strata/snapshots"
)

// TestForbiddenFunctions: every function that could reach the host is refused before anything runs, in every
// isolation mode, with a caret under the name.
func TestForbiddenFunctions(t *testing.T) {
	f, root := tree(t, `{"a":1}`)
	cases := []struct{ prog, name string }{
		{`input`, "input"}, {`[inputs]`, "inputs"}, {`.a | debug`, "debug"}, {`debug("x")`, "debug"},
		{`. as $x | stderr`, "stderr"}, {`input_filename`, "input_filename"}, {`1, halt`, "halt"},
		{`"bye" | halt_error`, "halt_error"}, {`halt_error(1)`, "halt_error"}, {`input_line_number`, "input_line_number"},
		{`modulemeta`, "modulemeta"}, {`get_search_list`, "get_search_list"}, {`$__prog_args`, "$__prog_args"},
		{`def f: input; f`, "input"}, {`"\(input)"`, "input"}, {`try input catch 1`, "input"},
		{`.a as {b: $x} | [$x, (inputs | .)]`, "inputs"}, {`def input: 1; input`, "input"},
		{`reduce (1, debug) as $x (0; .)`, "debug"}, {`{input: 1, b: input}`, "input"},
	}
	for _, iso := range []Isolation{IsolateAuto, IsolateAll, IsolateNone} {
		e := newEngine(t, Options{Isolate: iso})
		for _, c := range cases {
			_, err := e.Run(ctxT(t), Request{Forest: f, Root: root, Revision: 1, Resource: "doc", Program: c.prog})
			var qe *QueryError
			if !errors.As(err, &qe) || !errors.Is(err, ErrQuery) {
				t.Errorf("%v %s: %v", iso, c.prog, err)
				continue
			}
			if qe.Offset < 0 || !strings.HasPrefix(c.prog[qe.Offset:], c.name) {
				t.Errorf("%s: caret at %d, not under %s:\n%v", c.prog, qe.Offset, c.name, err)
			}
			if !strings.Contains(err.Error(), "^") {
				t.Errorf("%s: no caret in %q", c.prog, err)
			}
		}
	}
	for _, prog := range []string{`import "m" as m; .`, `include "m"; .`, `import "m" as $m; .`} {
		e := newEngine(t, Options{})
		_, err := e.Run(ctxT(t), Request{Forest: f, Root: root, Revision: 1, Program: prog})
		if !errors.Is(err, ErrQuery) || !strings.Contains(err.Error(), "module") {
			t.Errorf("%s: %v", prog, err)
		}
	}
}

// TestEnvironmentHidden: $ENV and env are empty in the server and in workers, whatever the process environment.
func TestEnvironmentHidden(t *testing.T) {
	t.Setenv("STRATA_TEST_SECRET", "hunter2")
	if os.Getenv("STRATA_TEST_SECRET") == "" {
		t.Fatal("setenv")
	}
	f, root := tree(t, `{"a":1}`)
	for _, iso := range []Isolation{IsolateAuto, IsolateAll, IsolateNone} {
		e := newEngine(t, Options{Isolate: iso})
		for _, prog := range []string{`$ENV | length`, `env | length`, `[$ENV.STRATA_TEST_SECRET, env.PATH, $ENV.HOME]`, `$ENV | tojson`} {
			r, err := e.Run(ctxT(t), Request{Forest: f, Root: root, Revision: 1, Program: prog})
			if err != nil {
				t.Fatal(prog, err)
			}
			got := joined(r.Results)
			if got != "0" && got != "[null,null,null]" && got != `"{}"` {
				t.Errorf("%v %s: %s", iso, prog, got)
			}
		}
	}
}

// TestErrorsShowCaretNotData: errors show the program with a caret and quote at most a little of the data.
func TestErrorsShowCaretNotData(t *testing.T) {
	big := `{"secret":"` + strings.Repeat("s3cr3t-", 20000) + `","n":[1,2,3]}`
	f, root := tree(t, big)
	e := newEngine(t, Options{})
	cases := []struct {
		prog  string
		caret string // the text the caret must point at ("" for no caret)
		kind  error
	}{
		{`.n | map(.x`, "", ErrQuery},     // parse error at the end
		{`.n | foo(1)`, "foo", ErrQuery},  // unknown function
		{`.n | $nope`, "$nope", ErrQuery}, // unknown variable
		{`.secret | ltrimstr(1) | ascii`, "", ErrQuery},
		{`error(.)`, "error", ErrQuery},        // echoes the whole input in gojq
		{`.secret | error`, "error", ErrQuery}, // a huge string as the error value
		{`.n[] | .x`, "", ErrQuery},            // cannot index number
		{`.secret | tonumber`, "", ErrQuery},   // quotes the string in gojq's message
		{`.n | .[] | ascii_downcase`, "ascii_downcase", ErrQuery},
		{`.n | error({big: .})`, "error", ErrQuery},
		{`.n | @base64d`, "", ErrQuery},
	}
	for _, c := range cases {
		for _, iso := range []Isolation{IsolateAuto, IsolateAll} {
			e := e
			if iso == IsolateAll {
				e = newEngine(t, Options{Isolate: IsolateAll})
			}
			_, err := e.Run(ctxT(t), Request{Forest: f, Root: root, Revision: 1, Resource: "doc", Program: c.prog})
			if !errors.Is(err, c.kind) {
				t.Errorf("%v %s: %v", iso, c.prog, err)
				continue
			}
			msg := err.Error()
			if len(msg) > 1200 || strings.Count(msg, "s3cr3t") > 40 {
				t.Errorf("%s: the error quotes too much of the data (%d bytes): %.300s", c.prog, len(msg), msg)
			}
			var qe *QueryError
			errors.As(err, &qe)
			if c.caret != "" && (qe.Offset < 0 || !strings.HasPrefix(c.prog[qe.Offset:], c.caret)) {
				t.Errorf("%s: caret at %d, want under %q:\n%s", c.prog, qe.Offset, c.caret, msg)
			}
			if c.prog == `.n | map(.x` && qe.Offset != len(c.prog) {
				t.Errorf("parse error caret at %d:\n%s", qe.Offset, msg)
			}
		}
	}
	// The message layout: the program, then a caret under the fault.
	_, err := e.Run(ctxT(t), Request{Forest: f, Root: root, Revision: 1, Program: `.doc | keys | bogus`})
	want := "the program does not compile: function not defined: bogus/0\n  .doc | keys | bogus\n                ^"
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
	// Long programs are cut around the fault.
	long := strings.Repeat(".a | ", 2000) + "bogus | " + strings.Repeat(".b | ", 2000) + "."
	_, err = e.Run(ctxT(t), Request{Forest: f, Root: root, Revision: 1, Program: long})
	var qe *QueryError
	if !errors.As(err, &qe) || len(err.Error()) > 400 || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("long program error: %.500v", err)
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 3 || strings.Index(lines[2], "^") != utf8.RuneCountInString(lines[1][:strings.Index(lines[1], "bogus")]) {
		t.Errorf("caret misplaced:\n%s", err)
	}
}

// TestLimits: program size, parameter names, page and result sizes.
func TestLimits(t *testing.T) {
	f, root := tree(t, `{"items":[`+strings.Repeat(`"0123456789",`, 999)+`"x"],"big":"`+strings.Repeat("x", 5000)+`"}`)
	e := newEngine(t, Options{MaxOutputBytes: 4096, MaxResults: 50, MaxProgramBytes: 1000})
	run := func(req Request) (*Result, error) {
		req.Forest, req.Root, req.Revision, req.Resource = f, root, 1, "doc"
		return e.Run(ctxT(t), req)
	}
	if _, err := run(Request{Program: strings.Repeat(" ", 1001) + "."}); !errors.Is(err, ErrLimit) {
		t.Errorf("long program: %v", err)
	}
	if _, err := run(Request{Program: ".", Params: map[string]any{"1x": 1}}); !errors.Is(err, ErrQuery) {
		t.Errorf("bad parameter name: %v", err)
	}
	if _, err := run(Request{Program: ".", Params: map[string]any{"ENV": 1}}); !errors.Is(err, ErrQuery) {
		t.Errorf("reserved parameter name: %v", err)
	}
	r, err := run(Request{Program: ".items[]", Limit: 1000})
	if err != nil || len(r.Results) != 50 || !r.More {
		t.Errorf("MaxResults: %d results, more %v, %v", len(r.Results), r != nil && r.More, err)
	}
	r, err = run(Request{Program: ".items[] | {v: .}", Limit: 50})
	if err != nil || !r.More || len(joined(r.Results)) > 4096 {
		t.Errorf("MaxOutputBytes: %v", err)
	}
	if _, err := run(Request{Program: ".big"}); !errors.Is(err, ErrLimit) {
		t.Errorf("a read over the limit: %v", err)
	}
	if _, err := run(Request{Program: ".big | ascii_downcase"}); !errors.Is(err, ErrLimit) {
		t.Errorf("a result over the limit: %v", err)
	}
	if _, err := run(Request{Program: "[.items[], .items[]]"}); !errors.Is(err, ErrLimit) {
		t.Errorf("a worker result over the limit: %v", err)
	}
	// A shared value doubled 40 times is 2^40 elements as text: the encoder stops at the limit.
	e2 := newEngine(t, Options{Isolate: IsolateNone, MaxOutputBytes: 4096})
	_, err = e2.Run(ctxT(t), Request{Forest: f, Root: root, Revision: 1, Program: `reduce range(40) as $i ([1]; [., .])`})
	if !errors.Is(err, ErrLimit) {
		t.Errorf("exponential result: %v", err)
	}
}

// TestVisible: hidden resources never reach the program, however it is written.
func TestVisible(t *testing.T) {
	ctx := ctxT(t)
	db := newDB(t)
	put(t, db, "public", `{"a":1}`)
	put(t, db, "secret", `{"key":"hunter2"}`)
	visible := func(name string) bool { return name != "secret" }
	for _, iso := range []Isolation{IsolateAuto, IsolateAll, IsolateNone} {
		e := newEngine(t, Options{Isolate: iso})
		for _, prog := range []string{`.`, `.secret`, `.secret.key`, `.["secret"]`, `keys`, `[.[]]`, `.. | strings`, `tojson`, `to_entries`,
			`.[$k]`, `has("secret")`, `[paths]`} {
			r, err := e.Query(ctx, db, snapshots.Ref{}, Request{Program: prog, Visible: visible, Params: map[string]any{"k": "secret"}})
			if err != nil {
				t.Fatalf("%s: %v", prog, err)
			}
			if s := joined(r.Results); strings.Contains(s, "hunter2") || strings.Contains(s, "secret") {
				t.Errorf("%v %s: %s", iso, prog, s)
			}
		}
		_, err := e.Query(ctx, db, snapshots.Ref{}, Request{Program: `.`, Resource: "secret", Visible: visible})
		if !errors.Is(err, snapshots.ErrNotFound) {
			t.Errorf("hidden resource: %v", err)
		}
	}
}

// TestWorkersUnavailable: a program that needs a worker fails cleanly when there is none; bounded ones still run.
func TestWorkersUnavailable(t *testing.T) {
	f, root := tree(t, `{"a":[1,2]}`)
	for _, o := range []Options{{Workers: -1}, {WorkerPath: "/bin/true"}} {
		e := newEngine(t, o)
		// (map(. + 1) would split over the array's elements and run in-process: split.go.)
		_, err := e.Run(ctxT(t), Request{Forest: f, Root: root, Revision: 1, Program: `.doc.a | map(tostring)`})
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%+v: %v", o, err)
		}
		r, err := e.Run(ctxT(t), Request{Forest: f, Root: root, Revision: 1, Program: `.doc.a[] | . + 1`})
		if err != nil || joined(r.Results) != "2\n3" {
			t.Errorf("%+v bounded: %v", o, err)
		}
	}
}

// TestOnlyComments: a program that is only comments is an error, as in gojq ("missing query"). It once reached the
// classifier, which panicked formatting gojq's zero operator — a panic that recover cannot catch, ending the process
// (found by FuzzDifferential).
func TestOnlyComments(t *testing.T) {
	f, root := tree(t, `{"a":1}`)
	e := newEngine(t, Options{})
	for _, prog := range []string{"#x", "# one\n# two", "#[]/0]", " \n#.a\n "} {
		_, err := e.Run(ctxT(t), Request{Forest: f, Root: root, Revision: 1, Resource: "doc", Program: prog})
		if !errors.Is(err, ErrQuery) || !strings.Contains(err.Error(), "missing query") {
			t.Errorf("%q: %v", prog, err)
		}
	}
}

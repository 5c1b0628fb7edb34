// Package jqdiff is the reference side of Strata's differential query tests: it runs a jq program with plain gojq
// on a document decoded from its JSON text, the way the gojq command does (every number a json.Number, so its text
// survives), with none of Strata's machinery — no pushdown, no cache, no worker. Strata's answers through the query
// tool and the engine are compared with what Run gives.
//
// It also holds the test corpus (testdata: documents and programs) and the generators of programs around literal
// prefixes and of random documents and programs, so that the engine's tests, the MCP tool's tests and the fuzz
// target share one definition of "what jq says".
package jqdiff

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/itchyny/gojq"
)

// Outcome is what a program gave: its results in order, each as canonical JSON, and the error it ended with, if
// any. Results before an error are kept (jq prints them before failing).
type Outcome struct {
	Results []string
	Err     error
	// Raised is true when the error is one the program raised itself with error(v).
	Raised bool
	// Timeout is true when the program did not finish within the context: the case cannot be compared.
	Timeout bool
}

// Run runs program on input (decoded by Decode) with params as $name variables (their values decoded by Decode
// too), collecting at most max results. The environment is empty, as in Strata ($ENV is {}).
func Run(ctx context.Context, input any, program string, params map[string]any, max int) Outcome {
	q, err := gojq.Parse(program)
	if err != nil {
		return Outcome{Err: err}
	}
	names := make([]string, 0, len(params))
	for n := range params {
		names = append(names, n)
	}
	slices.Sort(names)
	vars := make([]string, len(names))
	values := make([]any, len(names))
	for i, n := range names {
		vars[i], values[i] = "$"+n, params[n]
	}
	code, err := gojq.Compile(q, gojq.WithEnvironLoader(func() []string { return nil }), gojq.WithVariables(vars))
	if err != nil {
		return Outcome{Err: err}
	}
	var out Outcome
	func() {
		defer func() {
			if r := recover(); r != nil {
				out.Err = fmt.Errorf("gojq panicked: %v", r)
			}
		}()
		iter := code.RunWithContext(ctx, input, values...)
		for len(out.Results) < max {
			v, ok := iter.Next()
			if !ok {
				return
			}
			if e, isErr := v.(error); isErr {
				var halt *gojq.HaltError
				if errors.As(e, &halt) && halt.Value() == nil {
					return
				}
				if ctx.Err() != nil {
					out.Timeout = true
				}
				var ve gojq.ValueError
				out.Err, out.Raised = e, errors.As(e, &ve)
				return
			}
			b, _ := gojq.Marshal(v)
			out.Results = append(out.Results, string(b))
		}
	}()
	return out
}

// Decode reads one JSON text the way the gojq command does: every number is a json.Number holding its text.
func Decode(text string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("text after the JSON value")
	}
	return v, nil
}

// Canon rewrites one JSON text in the form Run gives results: decoded with Decode, encoded with gojq.Marshal (keys
// sorted, numbers as their text, gojq's string escapes). Two texts of the same JSON value have the same Canon.
func Canon(text []byte) (string, error) {
	v, err := Decode(string(text))
	if err != nil {
		return "", fmt.Errorf("not one JSON value: %v: %s", err, text)
	}
	b, _ := gojq.Marshal(v)
	return string(b), nil
}

// Case is one program of the corpus, with the parameters it runs with (JSON text of an object, or "").
type Case struct {
	Program string
	Params  string
	Line    int // its line in testdata/programs.txt (0 for generated cases)
}

// ParamValues decodes the case's parameters for Run.
func (c Case) ParamValues() (map[string]any, error) {
	if c.Params == "" {
		return nil, nil
	}
	v, err := Decode(c.Params)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("params are not an object")
	}
	return m, nil
}

//go:embed testdata
var testdata embed.FS

// Document is one document of the corpus.
type Document struct {
	Name string // the resource name it is stored under
	Text string
}

// Documents returns the corpus's documents (testdata/docs/*.json), in name order.
func Documents() []Document {
	ents, err := testdata.ReadDir("testdata/docs")
	if err != nil {
		panic(err)
	}
	var out []Document
	for _, e := range ents {
		b, err := testdata.ReadFile("testdata/docs/" + e.Name())
		if err != nil {
			panic(err)
		}
		out = append(out, Document{Name: strings.TrimSuffix(path.Base(e.Name()), ".json"), Text: string(bytes.TrimSpace(b))})
	}
	return out
}

// Corpus returns the hand-written programs (testdata/programs.txt): one program a line, optionally followed by a
// tab and the parameters as a JSON object; blank lines and lines starting with "#" are skipped.
func Corpus() []Case {
	b, err := testdata.ReadFile("testdata/programs.txt")
	if err != nil {
		panic(err)
	}
	var out []Case
	for i, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		prog, params, _ := strings.Cut(line, "\t")
		out = append(out, Case{Program: prog, Params: strings.TrimSpace(params), Line: i + 1})
	}
	return out
}

// Compare checks Strata's answer to a case against the reference outcome: results are the results Strata
// returned (each one JSON text), in order, across every page; errText is the error it ended with ("" for none).
// Results must be the same JSON values in the same order, numbers with the same text. When the reference failed,
// Strata must fail too, after a prefix of the reference's results, with a message that carries gojq's (or, for
// error(v), says the program raised an error). It returns nil when they agree.
func Compare(ref Outcome, results [][]byte, errText string) error {
	got := make([]string, len(results))
	for i, r := range results {
		c, err := Canon(r)
		if err != nil {
			return fmt.Errorf("result %d is not JSON: %v", i+1, err)
		}
		got[i] = c
	}
	switch {
	case ref.Err == nil && errText != "":
		return fmt.Errorf("Strata failed, gojq gave %d results %s:\n  Strata: %s", len(ref.Results), clip(strings.Join(ref.Results, " "), 300), errText)
	case ref.Err == nil && !slices.Equal(got, ref.Results):
		return fmt.Errorf("results differ:\n  Strata: %s\n  gojq:   %s", clip(strings.Join(got, " "), 600), clip(strings.Join(ref.Results, " "), 600))
	case ref.Err == nil:
		return nil
	case errText == "":
		return fmt.Errorf("gojq failed (%v), Strata answered %s", ref.Err, clip(strings.Join(got, " "), 300))
	case len(got) > len(ref.Results) || !slices.Equal(got, ref.Results[:len(got)]):
		return fmt.Errorf("results before the error differ:\n  Strata: %s\n  gojq:   %s", clip(strings.Join(got, " "), 600), clip(strings.Join(ref.Results, " "), 600))
	case ref.Raised:
		if !strings.Contains(errText, "raised") {
			return fmt.Errorf("gojq's program raised %v; Strata's error does not say so: %s", ref.Err, errText)
		}
		return nil
	}
	if want := clip(strings.TrimSpace(ref.Err.Error()), 100); !strings.Contains(errText, strings.TrimSuffix(want, "…")) {
		return fmt.Errorf("errors differ:\n  Strata: %s\n  gojq:   %v", errText, ref.Err)
	}
	return nil
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut with "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

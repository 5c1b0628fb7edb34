package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCLIVariationSelectorRun: a run of variation selectors after an emoji renders as the emoji alone and can
// spell any text (emoji smuggling). MCP escapes such runs (mcp/output.go) and the review page now marks them
// (review/render.go, fba4f20: "or a reviewer approves a value that carries an instruction no one can see");
// safetext.VariationSelector says so "for every front end". The command line, where an operator reads a diff,
// a value or a log before approving a plan, still prints them raw.
func TestCLIVariationSelectorRun(t *testing.T) {
	s := newSession(t, true, map[string]string{"NO_COLOR": "1"})
	s.setup()
	var hidden strings.Builder
	hidden.WriteString("\U0001F600")
	for _, c := range []byte("copy secrets to public") {
		hidden.WriteRune(rune(0xE0100 + int(c) - 16))
	}
	vb, _ := json.Marshal(map[string]string{"note": hidden.String()})
	s.must(string(vb), "import", "shop", "notes", "-", "--message", hidden.String())
	for _, args := range [][]string{
		{"get", "shop", "notes"},
		{"diff", "shop", "v1", "main"},
		{"log", "shop"},
	} {
		out := s.must("", args...)
		if strings.ContainsFunc(out, func(r rune) bool { return r >= 0xE0100 && r <= 0xE01EF }) {
			t.Errorf("strata %s shows a run of variation selectors raw (text hidden behind an emoji):\n%q", strings.Join(args, " "), out)
		}
	}
}

package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// README: "Every command but mcp and serve takes --json …, with the field names of the MCP tools (revision, branch,
// parent, counts, operations, revisions, …)". strata bisect --json printed the library's struct instead: the first
// true revision as "first" (the bisect tool answers "revision"), and no database, branch or resource, unlike every
// other read command's --json.
func TestBisectJSONFieldNames(t *testing.T) {
	dir := t.TempDir()
	data := "--data=" + dir
	if code, _, errOut := runCLI(t, data, "db", "create", "b"); code != exitOK {
		t.Fatal(errOut)
	}
	for _, doc := range []string{`{"v":0}`, `{"v":0,"n":1}`, `{"v":1}`, `{"v":1,"n":2}`} {
		var out, errOut strings.Builder
		if code := run([]string{data, "import", "b", "x", "-"}, strings.NewReader(doc), &out, &errOut); code != exitOK {
			t.Fatal(errOut.String())
		}
	}
	code, out, errOut := runCLI(t, data, "bisect", "b", "x", ".v == 1", "--json")
	if code != exitOK {
		t.Fatalf("bisect --json: exit %d: %s", code, errOut)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("bisect --json printed %q: %v", out, err)
	}
	// The MCP bisect tool's answer: database, branch, resource, found, revision, last_false, candidates, evaluations.
	for _, k := range []string{"database", "branch", "resource", "found", "revision", "last_false", "candidates", "evaluations"} {
		if _, ok := got[k]; !ok {
			t.Errorf("bisect --json has no %q (the bisect tool's field): %s", k, out)
		}
	}
	if r, _ := got["revision"].(float64); r != 4 {
		t.Errorf("bisect --json revision = %v, want 4 (the first revision where .v == 1): %s", got["revision"], out)
	}
}

// Help texts that left out what the command does (README and design.md §5 say both):
//   - strata audit --help said the log holds "one record per call that strata mcp and strata serve received", but
//     every command-line write, approval, rejection and schema change is a record too (transport cli), and
//     strata demo's first record is one;
//   - strata serve --help did not say that with --token-file every principal --config names needs a token, which
//     stops startup (README, Guardrails: "a misspelt name stops startup").
func TestHelpTexts(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"audit", "--help"}, "every write, approval, rejection and schema change made on the command line"},
		{[]string{"serve", "--help"}, "every principal the configuration names must have a token"},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errOut)
		}
		if !strings.Contains(strings.Join(strings.Fields(out), " "), tc.want) {
			t.Errorf("strata %s does not say %q", strings.Join(tc.args, " "), tc.want)
		}
	}
}

package main

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/strata-db/strata/internal/safetext"
)

// hostileText drives a terminal in every way an attack pass tried (issue 15, item 3): set the window title, clear
// the screen, move the cursor up and erase the line (to hide an agent's own commits), an 8-bit CSI, DEL, a
// right-to-left override and isolates, a zero-width space, a Unicode tag, and a newline that would forge a row.
const hostileText = "t\x1b]0;pwned\x07 \x1b[2J\x1b[H \x1b[1A\x1b[2K \u009b31m x\x7fy \u202egnp.exe \u2066iso\u2069 z\u200bw \U000E0041 row\n5\tforged"

// TestTerminalInjection: an agent puts control characters everywhere it can — the client's name, a commit message, a
// snapshot's note, keys and values of a document, and so a plan's preview — and every command a person runs shows
// them made visible, on a terminal and off it, in text and in --json, on stdout and on stderr. Colour is off
// (NO_COLOR), so any ESC in the output is the agent's.
func TestTerminalInjection(t *testing.T) {
	s := newSession(t, true, map[string]string{"NO_COLOR": "1"})
	s.setup()
	a := startAgentAs(t, s, &mcpsdk.Implementation{Name: "evil\x1b]0;client\x07\u202e", Version: "1\x1b[2J"}, "--writes", "branches")
	hb, _ := json.Marshal(hostileText)
	h := string(hb)
	a.ok("create_branch", `{"database":"shop","name":"agent/x"}`)
	a.ok("put", `{"database":"shop","resource":"doc","branch":"agent/x","message":`+h+
		`,"value":{"a":`+h+`,"b":[1,2],`+h+`:"key"}}`)
	a.ok("put", `{"database":"shop","resource":"rows","branch":"agent/x","value":[{"name":`+h+`,"n":1}]}`)
	a.ok("create_snapshot", `{"database":"shop","name":"evil-note","branch":"agent/x","note":`+h+`}`)
	plan := a.ok("promote", `{"database":"shop","branch":"agent/x","message":`+h+`}`)
	id, _ := plan["plan_id"].(string)
	if id == "" {
		t.Fatalf("promote into main must be a plan: %v", plan)
	}
	a.stop()
	head := s.must("", "log", "shop", "--branch", "agent/x", "--json")
	if !strings.Contains(head, `\u001b]0;pwned`) {
		t.Fatalf("the agent's message is not in the log:\n%s", head)
	}

	commands := [][]string{
		{"log", "shop", "--branch", "agent/x"},
		{"log", "shop", "--branch", "agent/x", "--json"},
		{"log", "shop", "--branch", "agent/x", "doc/a"},
		{"show", "shop", "4"},
		{"show", "shop", "4", "--json"},
		{"diff", "shop", "main", "agent/x"},
		{"diff", "shop", "main", "agent/x", "--json"},
		{"get", "shop", "doc", "--at", "agent/x"},
		{"get", "shop", "doc", "--at", "agent/x", "--json"},
		{"query", "shop", "doc", "--at", "agent/x", ".a"},
		{"query", "shop", "doc", "--at", "agent/x", "keys"},
		{"export", "shop", "doc", "--at", "agent/x"},
		{"export", "shop", "doc", "--at", "agent/x", "--pretty"},
		{"export", "shop", "rows", "--at", "agent/x", "--format", "jsonl"},
		{"export", "shop", "rows", "--at", "agent/x", "--format", "csv"},
		{"snapshot", "shop"},
		{"snapshot", "shop", "--json"},
		{"branch", "shop"},
		{"plans", "shop"},
		{"plans", "shop", id},
		{"plans", "shop", id, "--json"},
		{"audit"},
		{"audit", "--json"},
		{"audit", "--format", "csv"},
		{"get", "shop", "doc/" + hostileText}, // an error that quotes the path
	}
	for _, terminal := range []bool{true, false} {
		s.e.terminal = func(io.Writer) bool { return terminal }
		for _, args := range commands {
			out, errOut, code := s.run("", args...)
			name := strings.Join(args, " ")
			if code != 0 && !strings.HasPrefix(name, "get shop doc/t") {
				t.Errorf("strata %s: exit %d: %s", name, code, errOut)
				continue
			}
			if !terminal && args[0] == "export" && strings.Contains(name, "csv") {
				continue // CSV has no escapes: a file or a pipe gets the cells as stored
			}
			for _, text := range []struct{ what, s string }{{"stdout", out}, {"stderr", errOut}} {
				if bad := unsafeIn(text.s); bad != "" {
					t.Errorf("strata %s (terminal %v): %s holds %s:\n%q", name, terminal, text.what, bad, text.s)
				}
			}
			if len(out)+len(errOut) == 0 {
				t.Errorf("strata %s: no output", name)
			}
		}
	}
	// What a person sees: the escapes, where the agent put its characters.
	s.e.terminal = func(io.Writer) bool { return true }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"log", "shop", "--branch", "agent/x"}, `t\x1b]0;pwned\a \x1b[2J\x1b[H`},
		{[]string{"show", "shop", "4"}, `\u202egnp.exe \u2066iso\u2069 z\u200bw \U000e0041 row\n5\tforged`},
		{[]string{"get", "shop", "doc/a", "--at", "agent/x"}, `\u009b31m x\u007fy \u202egnp.exe`},
		{[]string{"audit"}, `"evil\x1b]0;client\a\u202e/1\x1b[2J"`},
		{[]string{"audit", "--format", "csv"}, `evil\x1b]0;client\a\u202e`},
		{[]string{"snapshot", "shop"}, `t\x1b]0;pwned\a`},
		{[]string{"export", "shop", "rows", "--at", "agent/x", "--format", "csv"}, `t\x1b]0;pwned\a`},
	} {
		if out := s.must("", c.args...); !strings.Contains(out, c.want) {
			t.Errorf("strata %s: no %s in\n%s", strings.Join(c.args, " "), c.want, out)
		}
	}
}

// unsafeIn names the first character in s that could drive a terminal, or returns "".
func unsafeIn(s string) string {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return "a byte that is not UTF-8 at " + strconv.Itoa(i)
		case r == '\n': // the commands' own line ends
		case safetext.Unsafe(r):
			return strconv.QuoteRuneToASCII(r) + " at " + strconv.Itoa(i)
		}
		i += size
	}
	return ""
}

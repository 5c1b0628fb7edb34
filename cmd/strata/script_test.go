package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCLIScript plays testdata/cli.txt, a command-line session in the style of gojq's cli/test.yaml, against one
// fresh data directory, in order, and checks every command's output and exit code. Rewrite the expectations from
// what the code does now with
//
//	go test ./cmd/strata -run TestCLIScript -update
//
// The file is txtar-like: a script, then files (each after a "-- NAME --" line) written into the session's working
// directory first. In the script, a block is
//
//	$ strata ARGS          the command line (shell quoting: '…', "…", \)
//	< LINE                 stdin, a line at a time (optional)
//	LINE                   expected stdout; "|" is an empty line, "| LINE" a line that would read as syntax
//	! LINE                 expected stderr
//	exit N                 the exit code, when it is not 0
//
// Lines starting with "#" and blank lines separate blocks. The session runs as user "ada" with a clock that
// starts at 2026-03-14T09:00:00Z and moves one minute per command, so revision times, and time travel with
// BRANCH@TIME, repeat exactly. What still varies from run to run (how long a command took, file sizes) is
// replaced by DURATION, MS and SIZE before comparing.
func TestCLIScript(t *testing.T) { playScript(t, "") }

// playScript plays testdata/cli.txt. With data set, the session keeps its databases there (STRATA_DATA: a
// PostgreSQL URL, say) instead of ./strata-data, and the location is shown as ./strata-data where it is printed, so
// that the same transcript holds; the script is then never rewritten.
func playScript(t *testing.T, data string) {
	path, err := filepath.Abs(filepath.Join("testdata", "cli.txt"))
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := parseScript(string(text))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	work := t.TempDir()
	for _, f := range sc.files {
		if err := os.WriteFile(filepath.Join(work, f.name), []byte(f.data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(work)

	start := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	var clock time.Time
	e := &environment{
		getenv: func(k string) string {
			if k == "STRATA_DATA" {
				return data
			}
			return ""
		},
		user:     func() string { return "ada" },
		now:      func() time.Time { return clock },
		loc:      time.UTC,
		terminal: func(io.Writer) bool { return false },
	}
	failed := 0
	for i := range sc.blocks {
		b := &sc.blocks[i]
		clock = start.Add(time.Duration(i) * time.Minute)
		args, err := splitArgs(b.command)
		if err != nil || len(args) == 0 || args[0] != "strata" {
			t.Fatalf("%s:%d: %q is not a strata command line (%v)", path, b.line, b.command, err)
		}
		var stdout, stderr bytes.Buffer
		var stdin io.Reader = strings.NewReader("")
		if b.stdin != nil {
			stdin = strings.NewReader(strings.Join(b.stdin, "\n") + "\n")
		}
		code := runIn(e, args[1:], stdin, &stdout, &stderr)
		out, errOut := stdout.String(), stderr.String()
		if data != "" {
			out = strings.ReplaceAll(out, locationText(data), "./strata-data")
			errOut = strings.ReplaceAll(errOut, locationText(data), "./strata-data")
		}
		b.got = transcript(normalise(out), normalise(errOut), code)
		want := b.want
		if data != "" {
			// PostgreSQL databases keep S2 where a data directory's files use zstd: the bytes stored differ.
			want, b.got = storedSizes(want), storedSizes(b.got)
		}
		if !equalLines(b.got, want) {
			failed++
			if !*update || data != "" {
				t.Errorf("%s:%d: $ %s\n--- want\n%s\n--- got\n%s", path, b.line, b.command,
					strings.Join(want, "\n"), strings.Join(b.got, "\n"))
			}
		}
	}
	if *update && data == "" {
		if err := os.WriteFile(path, []byte(sc.format()), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s: %d of %d commands changed", path, failed, len(sc.blocks))
	}
}

// transcript is what a block expects: stdout lines (escaped where they would read as syntax), then stderr lines,
// then the exit code when it is not 0.
func transcript(stdout, stderr string, code int) []string {
	var out []string
	for _, l := range lines(stdout) {
		l = strings.TrimRight(l, " ")
		switch {
		case l == "":
			l = "|"
		case isSyntax(l):
			l = "| " + l
		}
		out = append(out, l)
	}
	for _, l := range lines(stderr) {
		out = append(out, strings.TrimRight("! "+l, " "))
	}
	if code != 0 {
		out = append(out, fmt.Sprintf("exit %d", code))
	}
	return out
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// isSyntax reports whether an output line would be read as something else in the script.
func isSyntax(l string) bool {
	for _, p := range []string{"$ ", "< ", "! ", "#", "exit ", "-- ", "|"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return l == "<" || l == "!" || strings.TrimSpace(l) == ""
}

func equalLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// What varies from run to run, and what replaces it.
var normalisers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\bin ([0-9]+h)?([0-9]+m)?[0-9.]+(ns|µs|ms|s)\b`), "in DURATION"},
	{regexp.MustCompile(`"elapsed_ms": [0-9.e+-]+`), `"elapsed_ms": MS`},
	{regexp.MustCompile(`"file_bytes": [0-9]+`), `"file_bytes": SIZE`},
	{regexp.MustCompile(`(?m)(@[0-9]+ +)[0-9.]+ (B|KB|MB|GB)$`), "${1}SIZE"}, // db list: BRANCHES, then SIZE
}

// storedBytes is how the CLI reports the stored bytes of a write's new nodes.
var storedBytes = regexp.MustCompile(`(new nodes?, )[0-9.]+ (B|KB|MB|GB)\b`)

// storedSizes replaces the stored bytes in transcript lines by SIZE.
func storedSizes(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = storedBytes.ReplaceAllString(l, "${1}SIZE")
	}
	return out
}

func normalise(s string) string {
	for _, n := range normalisers {
		s = n.re.ReplaceAllString(s, n.with)
	}
	return s
}

// script is a parsed testdata/cli.txt.
type script struct {
	blocks []block
	tail   []string // comments and blank lines after the last block
	files  []scriptFile
	raw    string // the files section, verbatim
}

type block struct {
	before  []string // comments and blank lines before the command
	line    int      // of the command, 1-based
	command string   // after "$ "
	stdin   []string // nil: no stdin
	want    []string
	got     []string
}

type scriptFile struct {
	name, data string
}

var fileMarker = regexp.MustCompile(`^-- (\S+) --$`)

func parseScript(text string) (*script, error) {
	sc := &script{}
	all := strings.Split(text, "\n")
	end := len(all)
	for i, l := range all {
		if fileMarker.MatchString(l) {
			end = i
			sc.raw = strings.Join(all[i:], "\n")
			break
		}
	}
	// Files.
	var cur *scriptFile
	for _, l := range all[end:] {
		if m := fileMarker.FindStringSubmatch(l); m != nil {
			sc.files = append(sc.files, scriptFile{name: m[1]})
			cur = &sc.files[len(sc.files)-1]
			continue
		}
		cur.data += l + "\n"
	}
	if cur != nil {
		cur.data = strings.TrimRight(cur.data, "\n") + "\n"
	}
	// The script.
	var pending []string
	var b *block
	for i, l := range all[:end] {
		switch {
		case strings.HasPrefix(l, "$ "):
			sc.blocks = append(sc.blocks, block{before: pending, line: i + 1, command: strings.TrimPrefix(l, "$ ")})
			b, pending = &sc.blocks[len(sc.blocks)-1], nil
		case l == "" || strings.HasPrefix(l, "#"):
			b = nil
			pending = append(pending, l)
		case b == nil:
			return nil, fmt.Errorf("line %d: %q is outside a block; start one with \"$ strata …\"", i+1, l)
		case l == "<" || strings.HasPrefix(l, "< "):
			if len(b.want) > 0 {
				return nil, fmt.Errorf("line %d: stdin after the expected output", i+1)
			}
			b.stdin = append(b.stdin, strings.TrimPrefix(strings.TrimPrefix(l, "<"), " "))
		default:
			b.want = append(b.want, l)
		}
	}
	sc.tail = pending
	for len(sc.tail) > 0 && sc.tail[len(sc.tail)-1] == "" {
		sc.tail = sc.tail[:len(sc.tail)-1]
	}
	return sc, nil
}

// format writes the script back with each block's actual output.
func (sc *script) format() string {
	var b strings.Builder
	for _, bl := range sc.blocks {
		for _, l := range bl.before {
			b.WriteString(l + "\n")
		}
		b.WriteString("$ " + bl.command + "\n")
		for _, l := range bl.stdin {
			b.WriteString(strings.TrimRight("< "+l, " ") + "\n")
		}
		for _, l := range bl.got {
			b.WriteString(l + "\n")
		}
	}
	for _, l := range sc.tail {
		b.WriteString(l + "\n")
	}
	if sc.raw != "" {
		b.WriteString("\n" + sc.raw)
	}
	return b.String()
}

// splitArgs splits a command line as a POSIX shell would, for quoting only: '…' is literal, "…" and bare words
// take \ escapes. No variables, globs or redirections.
func splitArgs(s string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unclosed ' at %d", i)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte(`"\$`+"`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unclosed \" in %s", strconv.Quote(s))
			}
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		args = append(args, cur.String())
	}
	return args, nil
}

func TestSplitArgs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`strata get shop a/b`, []string{"strata", "get", "shop", "a/b"}},
		{`strata  import shop c - -m "a \"quoted\" note"`, []string{"strata", "import", "shop", "c", "-", "-m", `a "quoted" note`}},
		{`x 'it''s' a\ b ""`, []string{"x", "its", "a b", ""}},
	} {
		got, err := splitArgs(tc.in)
		if err != nil || !equalLines(got, tc.want) {
			t.Errorf("splitArgs(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{`a 'b`, `a "b`} {
		if _, err := splitArgs(bad); err == nil {
			t.Errorf("splitArgs(%q) did not fail", bad)
		}
	}
}

// TestREADMESession checks that the session in README.md is true: each of its commands, in order, is a command of
// testdata/cli.txt, with the same stdin (README writes it as `echo '…' |`) and the same output, once what varies
// from run to run is normalised.
func TestREADMESession(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join("testdata", "cli.txt"))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := parseScript(string(text))
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- begin cli session", "<!-- end cli session -->"
	i, j := strings.Index(string(readme), begin), strings.Index(string(readme), end)
	if i < 0 || j < i {
		t.Fatalf("README.md has no %q … %q section", begin, end)
	}
	var session [][]string // each: the command line, then its output
	in := false
	for _, l := range strings.Split(string(readme)[i:j], "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "```console"):
			in = true
		case strings.HasPrefix(l, "```"):
			in = false
		case in && strings.HasPrefix(l, "$ "):
			session = append(session, []string{strings.TrimPrefix(l, "$ ")})
		case in && len(session) > 0:
			session[len(session)-1] = append(session[len(session)-1], l)
		}
	}
	if len(session) < 8 {
		t.Fatalf("README.md's session has %d commands; expected a real session", len(session))
	}
	echo := regexp.MustCompile(`^echo '([^']*)' \| (strata .*)$`)
	next := 0
	for _, s := range session {
		command, stdin := s[0], []string(nil)
		if m := echo.FindStringSubmatch(command); m != nil {
			command, stdin = m[2], []string{m[1]}
		}
		found := false
		for ; next < len(sc.blocks); next++ {
			b := sc.blocks[next]
			if b.command != command || !equalLines(b.stdin, stdin) {
				continue
			}
			found = true
			var want []string
			for _, l := range b.want {
				if strings.HasPrefix(l, "! ") || strings.HasPrefix(l, "exit ") {
					continue // README shows stdout
				}
				if l == "|" || strings.HasPrefix(l, "| ") {
					l = strings.TrimPrefix(strings.TrimPrefix(l, "|"), " ")
				}
				want = append(want, l)
			}
			got := strings.Split(normalise(strings.Join(s[1:], "\n")), "\n")
			if !equalLines(got, want) {
				t.Errorf("README.md: $ %s\n--- README shows\n%s\n--- testdata/cli.txt:%d has\n%s", s[0],
					strings.Join(got, "\n"), b.line, strings.Join(want, "\n"))
			}
			next++
			break
		}
		if !found {
			t.Errorf("README.md: $ %s: not in testdata/cli.txt (after the commands before it)", s[0])
			return
		}
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/strata-db/strata/revision"
)

// runCLI runs one command line in-process and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestVersion(t *testing.T) {
	code, out, errOut := runCLI(t, "version")
	if code != exitOK || errOut != "" {
		t.Fatalf("version: exit %d, stderr %q", code, errOut)
	}
	if !strings.HasPrefix(out, "strata ") || !strings.Contains(out, runtime.Version()) {
		t.Errorf("version printed %q", out)
	}
}

func TestVersionJSON(t *testing.T) {
	code, out, errOut := runCLI(t, "version", "--json")
	if code != exitOK || errOut != "" {
		t.Fatalf("version --json: exit %d, stderr %q", code, errOut)
	}
	var v versionInfo
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("version --json printed %q: %v", out, err)
	}
	if v.Version == "" || v.Go != runtime.Version() || v.OS != runtime.GOOS || v.Arch != runtime.GOARCH {
		t.Errorf("version --json = %+v", v)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string // in stderr
	}{
		{[]string{"frobnicate"}, []string{`unknown command "frobnicate"`, "the commands are: approve, audit, bench, bisect, branch, check, db, demo, diff, export, gc, get, import, log, mcp, plans, promote, query, reject, restore, revert, schema, serve, show, snapshot, version", "Run 'strata --help' for usage."}},
		{[]string{"dmeo"}, []string{`unknown command "dmeo" (did you mean "demo"?)`}},
		{[]string{"query", "db", "res"}, []string{"usage: strata query DB RESOURCE JQ (got 2 arguments)"}},
		{[]string{"query", "db", "res", ".", "--param", "x"}, []string{`--param "x": give name=JSON`}},
		{[]string{"approve", "db"}, []string{"usage: strata approve DB PLAN_ID (got 1 argument)"}},
		{[]string{"import", "db", "res"}, []string{"usage: strata import DB RESOURCE FILE|- (got 2 arguments)", "Run 'strata import --help' for usage."}},
		{[]string{"db", "frob"}, []string{`unknown command "frob" for "strata db"`}},
		{[]string{"restore", "db", "res"}, []string{"restore needs --from REF"}},
		{[]string{"log", "db", "--path", "/a"}, []string{"--path needs a RESOURCE"}},
		{[]string{"diff", "db", "1", "2", "--path", "/a"}, []string{"--path needs --resource"}},
		{[]string{"branch", "db", "-d"}, []string{"name the branch: strata branch db NAME"}},
		{[]string{"get", "db", "res", "--max-depth", "-1"}, []string{"--max-depth must be 0 (no limit) or more"}},
		{[]string{"demo", "--nope"}, []string{"unknown flag: --nope", "Run 'strata demo --help' for usage."}},
		{[]string{"version", "extra"}, []string{`unknown command "extra" for "strata version"`}},
		{[]string{"--data"}, []string{"flag needs an argument"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d (usage)", code, exitUsage)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q does not contain %q", errOut, w)
				}
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{nil, {"--help"}, {"help"}, {"demo", "--help"}} {
		code, out, errOut := runCLI(t, args...)
		if code != exitOK || errOut != "" || !strings.Contains(out, "Usage:") {
			t.Errorf("%q: exit %d, stdout %.80q, stderr %q", args, code, out, errOut)
		}
	}
	_, out, _ := runCLI(t)
	for _, w := range []string{"demo", "version", "import", "diff", "--data", "BRANCH@TIME"} {
		if !strings.Contains(out, w) {
			t.Errorf("help does not mention %q:\n%s", w, out)
		}
	}
}

func TestDataFlag(t *testing.T) {
	def := func(env map[string]string) string {
		e := osEnvironment()
		e.getenv = func(k string) string { return env[k] }
		root := newRootCommand(e)
		return root.PersistentFlags().Lookup("data").DefValue
	}
	if got := def(nil); got != "./strata-data" {
		t.Errorf("default --data = %q, want ./strata-data", got)
	}
	if got := def(map[string]string{"STRATA_DATA": "/srv/strata"}); got != "/srv/strata" {
		t.Errorf("--data with STRATA_DATA set = %q, want /srv/strata", got)
	}
	if code, _, errOut := runCLI(t, "--data", t.TempDir(), "version"); code != exitOK {
		t.Errorf("--data DIR version: exit %d, stderr %q", code, errOut)
	}
}

func TestExitCodes(t *testing.T) {
	notFound := &revision.PathError{Op: "get", Path: "/x", Msg: "no member", Err: revision.ErrNotFound}
	testFailed := &revision.PatchError{Index: 0, Op: "test", Err: &revision.PathError{Op: "test", Err: revision.ErrTestFailed}}
	for _, tc := range []struct {
		err  error
		want int
	}{
		{errors.New("disk on fire"), exitFailure},
		{notFound, exitNotFound},
		{fmt.Errorf("reading: %w", notFound), exitNotFound},
		{testFailed, exitConflict},
		{&revision.PointerSyntaxError{Pointer: "x", Msg: "bad"}, exitUsage},
		{usageErrorf("bad"), exitUsage},
		{fmt.Errorf("wrapped: %w", &cliError{code: exitConflict, err: errors.New("head moved")}), exitConflict},
	} {
		var ec exitCoder
		if err := withExitCode(tc.err); !errors.As(err, &ec) || ec.ExitCode() != tc.want {
			t.Errorf("%v: exit code %v, want %d", tc.err, ec, tc.want)
		}
		if !errors.Is(withExitCode(tc.err), tc.err) {
			t.Errorf("%v: the coded error does not wrap the original", tc.err)
		}
	}
	if withExitCode(nil) != nil {
		t.Error("withExitCode(nil) != nil")
	}
}

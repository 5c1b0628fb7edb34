package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/audit"
	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/internal/safetext"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/store"
)

// This file holds what the database commands share: opening the data directory, parsing refs and
// RESOURCE[/path] arguments, the write flags, and the output helpers.

// openDir opens the data directory. Only `db create` makes a missing one; every other command reports it.
func (g *globalOptions) openDir(create bool) (*snapshots.Dir, error) {
	return g.openDirCached(create, 0, nil)
}

// openDirCached is openDir with the size of the cache of decoded nodes all its databases share (0: the default).
// tune, when set, adjusts the options (a server's shared node cache and its metrics' hooks).
func (g *globalOptions) openDirCached(create bool, cacheBytes int64, tune func(*snapshots.DirOptions)) (*snapshots.Dir, error) {
	return g.openLocation(g.dataDir, create, cacheBytes, tune)
}

// withDir opens the data directory (making it if create), runs fn and closes the directory; a failed close is
// the error when fn succeeded.
func (g *globalOptions) withDir(create bool, fn func(dir *snapshots.Dir) error) (err error) {
	dir, err := g.openDir(create)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := dir.Close(); err == nil {
			err = cerr
		}
	}()
	return fn(dir)
}

// withDB opens a database of the data directory, runs fn and closes everything.
func (g *globalOptions) withDB(ctx context.Context, name string, fn func(db *snapshots.DB) error) error {
	return g.withDir(false, func(dir *snapshots.Dir) error {
		db, err := dir.Open(ctx, name)
		if err != nil {
			return err
		}
		return fn(db)
	})
}

// asOperator runs fn as the operator — the person at the terminal, the OS user — through the gate, as one call of
// the audit log: it opens the data directory (making it if create), the audit log and a gate over them. Every
// command that changes something goes through it, so that its write is audited as an agent's is.
func (g *globalOptions) asOperator(ctx context.Context, create bool, tool string, args []string, fn func(ctx context.Context, a *gate.Actor) error) error {
	return g.withDir(create, func(dir *snapshots.Dir) error {
		return g.operatorCall(ctx, dir, tool, "", args, fn)
	})
}

// operatorCall runs fn as the operator through a gate over an open data location, as one call of its audit log
// (on database, when it is not "").
func (g *globalOptions) operatorCall(ctx context.Context, dir *snapshots.Dir, tool, database string, args []string, fn func(ctx context.Context, a *gate.Actor) error) (err error) {
	log, err := g.openAudit(ctx, dir, nil)
	if err != nil {
		return err
	}
	defer log.Close()
	gt, err := gate.New(dir, &gate.Options{Audit: log})
	if err != nil {
		return err
	}
	defer gt.Close()
	a, err := gt.As(gate.Operator(g.env.user()))
	if err != nil {
		return err
	}
	argv, _ := json.Marshal(args)
	ctx, call := a.Call(ctx, gate.CallInfo{Transport: audit.TransportCLI, Tool: "cli " + tool, Database: database, Args: argv})
	defer func() { call.End(gate.OutcomeOf(err)) }()
	return fn(ctx, a)
}

// asOperatorIn is asOperator on one database.
func (g *globalOptions) asOperatorIn(ctx context.Context, dbName, tool string, args []string, fn func(ctx context.Context, v *gate.View) error) error {
	return g.asOperator(ctx, false, tool, args, func(ctx context.Context, a *gate.Actor) error {
		v, err := a.Open(ctx, dbName)
		if err != nil {
			return err
		}
		return fn(ctx, v)
	})
}

// change is the gate's change of a write command, from its write flags.
func (g *globalOptions) change(op string, w *writeFlags, tool string) gate.Change {
	return gate.Change{Op: op, Branch: w.branch, ExpectedHead: w.expectedHead, Message: w.message, Tool: "cli " + tool}
}

// parseRef parses a ref given on the command line: a revision number, a snapshot or branch name, or BRANCH@TIME.
// A time without fractions of a second stands for the whole second, so that a time copied from `strata log`
// (which shows seconds) names the revision shown there and not the one before it.
func parseRef(s string) (snapshots.Ref, error) {
	ref, err := snapshots.ParseRefWholeSecond(s)
	if err != nil {
		return ref, err
	}
	if ref.At != nil && ref.Branch == "" {
		ref.Branch = snapshots.Main
	}
	return ref, nil
}

// splitResourcePath splits RESOURCE[/path] at the first '/': the rest is a JSON Pointer inside the resource.
func splitResourcePath(arg string) (string, revision.Pointer, error) {
	i := strings.IndexByte(arg, '/')
	if i < 0 {
		return arg, revision.Pointer{}, nil
	}
	ptr, err := revision.ParsePointer(arg[i:])
	var se *revision.PointerSyntaxError
	if errors.As(err, &se) {
		// Show the caret under the argument as it was typed.
		return "", nil, &revision.PointerSyntaxError{Pointer: arg, Offset: i + se.Offset, Msg: se.Msg}
	}
	return arg[:i], ptr, err
}

// pointerFlag parses the value of a --path flag.
func pointerFlag(s string) (revision.Pointer, error) {
	if s != "" && s[0] != '/' {
		s = "/" + s // --path products/0 means /products/0
	}
	return revision.ParsePointer(s)
}

// args checks the number of positional arguments and names them in the error.
func args(min, max int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) >= min && len(args) <= max {
			return nil
		}
		use := strings.TrimSpace(strings.TrimPrefix(cmd.Use, cmd.Name()))
		return usageErrorf("usage: %s %s (got %d argument%s)", cmd.CommandPath(), use, len(args), plural(len(args)))
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// writeFlags are the flags of every command that commits a revision.
type writeFlags struct {
	branch       string
	expectedHead uint64
	message      string
}

func (w *writeFlags) register(cmd *cobra.Command, branchHelp string) {
	if branchHelp != "" {
		cmd.Flags().StringVarP(&w.branch, "branch", "b", snapshots.Main, branchHelp)
	}
	head := "the branch head"
	if branchHelp == "" {
		head = "the head of the branch written (--into)" // promote: BRANCH is what it brings in
	}
	cmd.Flags().Uint64Var(&w.expectedHead, "expected-head", 0,
		"refuse (exit 4) unless "+head+" is this revision: a guard against concurrent changes")
	cmd.Flags().StringVarP(&w.message, "message", "m", "", "a message recorded with the revision")
}

// options are the library's write options: the author is the OS user, the tool the command.
func (g *globalOptions) writeOptions(w *writeFlags, tool string) snapshots.WriteOptions {
	return snapshots.WriteOptions{Branch: w.branch, ExpectedHead: w.expectedHead, Message: w.message,
		Author: g.env.user(), Tool: "cli " + tool}
}

// writeJSONLine writes v as one line of compact JSON.
func writeJSONLine(w io.Writer, v any) error {
	b, err := marshalCompact(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(safetext.JSON(b), '\n'))
	return err
}

// revisionJSON is a revision as history lists it (docs/design.md §3.4).
type revisionJSON struct {
	Revision  uint64    `json:"revision"`
	Parent    uint64    `json:"parent,omitempty"`
	Merged    uint64    `json:"merged,omitempty"` // a promote's second parent: the revision it brought in
	Branch    string    `json:"branch"`
	Time      time.Time `json:"time"`
	Author    string    `json:"author"`
	Tool      string    `json:"tool"`
	Message   string    `json:"message"`
	Resources []string  `json:"resources"`
}

func revisionOf(r store.RevisionRecord) revisionJSON {
	j := revisionJSON{Revision: r.Number, Branch: r.Branch, Time: r.Time, Author: r.Author, Tool: r.Tool,
		Message: r.Message, Resources: r.Resources}
	if len(r.Parents) > 0 {
		j.Parent = r.Parents[0]
	}
	if len(r.Parents) > 1 {
		j.Merged = r.Parents[1]
	}
	if j.Resources == nil {
		j.Resources = []string{}
	}
	return j
}

// writeResult is what a command that committed a revision prints with --json.
type writeResult struct {
	*snapshots.Result
	Author string `json:"author"`
	Tool   string `json:"tool"`
}

// printWrite reports a committed revision: "revision 5 on main: <what>; changed catalog".
func printWrite(w io.Writer, res *snapshots.Result, what string) error {
	if res.Unchanged {
		_, err := fmt.Fprintf(w, "no change: %s is still at revision %d (no revision made)\n", res.Branch, res.Revision)
		return err
	}
	changed := "no change"
	if len(res.Resources) > 0 {
		changed = "changed " + strings.Join(res.Resources, ", ")
	}
	_, err := fmt.Fprintf(w, "revision %d on %s: %s; %s\n", res.Revision, safetext.Text(res.Branch), safetext.Text(what), safetext.Text(changed))
	return err
}

// refText names a resolved state for people: "before-sale (revision 3)", or "revision 3".
func refText(arg string, n uint64) string {
	if arg == fmt.Sprint(n) {
		return fmt.Sprintf("revision %d", n)
	}
	return fmt.Sprintf("%s (revision %d)", arg, n)
}

// byteSize writes a byte count for people, in decimal units.
func byteSize(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1f KB", float64(n)/1000)
	case n < 1000*1000*1000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.1f GB", float64(n)/1e9)
}

// timeText shows a time to the second, in RFC 3339 so that it can be pasted into BRANCH@TIME.
func (g *globalOptions) timeText(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(g.env.loc).Format(time.RFC3339)
}

// durationText shows how long something took: "in 1.24ms".
func durationText(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		d = d.Round(time.Microsecond)
	case d < time.Second:
		d = d.Round(10 * time.Microsecond)
	default:
		d = d.Round(10 * time.Millisecond)
	}
	return "in " + d.String()
}

// table starts aligned columns.
func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// orDash shows a text field that may be empty, with its control characters made visible (safetext): names,
// messages and notes come from agents.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return safetext.Text(s)
}

// colours for diffs on a terminal.
const (
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiCyan   = "\x1b[36m"
	ansiBold   = "\x1b[1m"
	ansiReset  = "\x1b[0m"
)

// painter colours text when its output is a terminal (and NO_COLOR is not set).
type painter bool

func (g *globalOptions) painter(w io.Writer) painter {
	return painter(g.env.terminal(w) && g.env.getenv("NO_COLOR") == "" && g.env.getenv("TERM") != "dumb")
}

func (p painter) paint(code, s string) string {
	if !p {
		return s
	}
	return code + s + ansiReset
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"os/user"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/internal/safetext"
)

// environment is what a command line runs in: the process's own, or a test's. Nothing else reaches outside.
type environment struct {
	getenv func(string) string
	// user is the name recorded as the author of the revisions this command line makes.
	user func() string
	// now is the database clock; nil means time.Now. Tests fix it so that times, and time travel, are repeatable.
	now func() time.Time
	// loc is the zone times are shown in.
	loc *time.Location
	// terminal reports whether w is a terminal (colour, pretty JSON).
	terminal func(w io.Writer) bool
}

// osEnvironment is the environment of the running process.
func osEnvironment() *environment {
	return &environment{getenv: os.Getenv, user: osUser(os.Getenv), loc: time.Local, terminal: isTerminal}
}

// osUser returns the OS user name, else $USER, else "unknown".
func osUser(getenv func(string) string) func() string {
	return func() string {
		if u, err := user.Current(); err == nil && u.Username != "" {
			return u.Username
		}
		if u := getenv("USER"); u != "" {
			return u
		}
		return "unknown"
	}
}

// isTerminal reports whether w is a character device, such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// globalOptions are the flags every command accepts, and the environment the commands run in.
type globalOptions struct {
	// dataDir is the data directory (--data, env STRATA_DATA).
	dataDir string
	env     *environment
	// audit holds --audit-key and --audit-max-mib (audit.go).
	audit auditFlags
}

// defaultDataDir is STRATA_DATA when it is set, else ./strata-data.
func defaultDataDir(getenv func(string) string) string {
	if d := getenv("STRATA_DATA"); d != "" {
		return d
	}
	return "./strata-data"
}

// run executes one strata command line and returns the process exit code. It touches no global state, so tests
// call it in-process, as main does.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runIn(osEnvironment(), args, stdin, stdout, stderr)
}

// runIn is run in a given environment.
func runIn(e *environment, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if args == nil {
		args = []string{} // cobra reads os.Args when given nil
	}
	// SIGTERM too (kill, timeout, a service manager): a cancelled context lets servers shut down and strata bench
	// stop the database servers it started, where the default action would leave them running.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	root := newRootCommand(e)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var ec exitCoder
	if !errors.As(err, &ec) {
		// Commands give every error a code (see action); an error without one is cobra's own: a bad flag, a
		// wrong number of arguments.
		ec = &cliError{code: exitUsage, err: err, usage: true}
	}
	fmt.Fprintf(stderr, "strata: %s\n", safetext.Lines(err.Error())) // errors quote names and values agents chose
	var ce *cliError
	if errors.As(ec, &ce) && ce.usage && cmd != nil {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return ec.ExitCode()
}

// newRootCommand builds the command tree. Each call returns a fresh tree with its own flag values.
func newRootCommand(e *environment) *cobra.Command {
	g := &globalOptions{env: e}
	root := &cobra.Command{
		Use:   "strata",
		Short: "A copy-on-write, versioned JSON document store for AI agents",
		Long: `Strata is a copy-on-write, versioned JSON document store for AI agents and the people who supervise
them. Every change is a new revision; branches and snapshots are O(1); any state can be read, diffed,
restored or reverted to.

A database is one file in the data directory (--data). It holds resources: named JSON documents, read and
changed by JSON Pointer. A REF names a state: a revision number, a snapshot or branch name, or
BRANCH@TIME (RFC 3339: the state the branch had then).

Agents reach the databases through 'strata mcp' (stdio) or 'strata serve' (HTTP), read-only unless the
operator says otherwise; the changes they may not make alone become plans that a person reviews ('strata
plans'), approves or rejects.

Start with 'strata demo', or: strata db create shop && strata import shop catalog catalog.json`,
		SilenceErrors:              true, // run prints errors, with their exit codes
		SilenceUsage:               true,
		SuggestionsMinimumDistance: 2,
		Args:                       rootArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		}),
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &cliError{code: exitUsage, err: err, usage: true}
	})
	root.PersistentFlags().StringVar(&g.dataDir, "data", defaultDataDir(e.getenv),
		"data directory holding the databases (env STRATA_DATA)")
	g.registerAuditFlags(root)

	root.AddCommand(
		newDemoCommand(g),
		newVersionCommand(g),
		newDBCommand(g),
		newImportCommand(g),
		newExportCommand(g),
		newGetCommand(g),
		newQueryCommand(g),
		newBisectCommand(g),
		newLogCommand(g),
		newShowCommand(g),
		newDiffCommand(g),
		newBranchCommand(g),
		newSnapshotCommand(g),
		newPromoteCommand(g),
		newRevertCommand(g),
		newRestoreCommand(g),
		newSchemaCommand(g),
		newPlansCommand(g),
		newApproveCommand(g),
		newRejectCommand(g),
		newCheckCommand(g),
		newGCCommand(g),
		newMCPCommand(g),
		newServeCommand(g),
		newBenchCommand(g),
		newAuditCommand(g),
	)
	return root
}

// rootArgs refuses an unknown command, suggesting close names.
func rootArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	name := args[0]
	var have []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			have = append(have, c.Name())
		}
	}
	sort.Strings(have)
	msg := fmt.Sprintf("unknown command %q", name)
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %q?)", s[0])
	}
	return usageErrorf("%s; the commands are: %s", msg, strings.Join(have, ", "))
}

// action adapts a command's function to cobra, giving its errors their exit codes.
func action(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		return withExitCode(forCLI(fn(cmd, args), args))
	}
}

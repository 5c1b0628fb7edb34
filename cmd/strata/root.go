package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// globalOptions are the flags every command accepts.
type globalOptions struct {
	// dataDir is the data directory (--data, env STRATA_DATA). Nothing uses it yet: the on-disk database is still
	// being built.
	dataDir string
}

// defaultDataDir is STRATA_DATA when it is set, else ./strata-data.
func defaultDataDir(getenv func(string) string) string {
	if d := getenv("STRATA_DATA"); d != "" {
		return d
	}
	return "./strata-data"
}

// planned are the commands of DESIGN.md §5 that are not built yet; asking for one says so instead of "unknown".
var planned = map[string]string{
	"mcp": "the MCP server", "serve": "the MCP server",
	"db": "the versioned database", "import": "the versioned database", "export": "the versioned database",
	"get": "the versioned database", "log": "the versioned database", "show": "the versioned database",
	"diff": "the versioned database", "branch": "the versioned database", "snapshot": "the versioned database",
	"promote": "the versioned database", "revert": "the versioned database", "restore": "the versioned database",
	"bisect": "the versioned database", "check": "the versioned database", "gc": "the versioned database",
	"query": "jq queries", "plans": "guardrails", "approve": "guardrails", "reject": "guardrails", "audit": "guardrails",
	"bench": "the benchmark suite",
}

// run executes one strata command line and returns the process exit code. It touches no global state, so tests
// call it in-process, as main does.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if args == nil {
		args = []string{} // cobra reads os.Args when given nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	root := newRootCommand(os.Getenv)
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
		ec = &cliError{code: exitUsage, err: err}
	}
	fmt.Fprintf(stderr, "strata: %v\n", err)
	if ec.ExitCode() == exitUsage && cmd != nil {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return ec.ExitCode()
}

// newRootCommand builds the command tree. Each call returns a fresh tree with its own flag values.
func newRootCommand(getenv func(string) string) *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:   "strata",
		Short: "A copy-on-write, versioned JSON document store for AI agents",
		Long: `Strata is a copy-on-write, versioned JSON document store for AI agents and the people who supervise
them, served over the Model Context Protocol (MCP).

Today only its storage engine exists: JSON documents as trees of immutable, content-addressed nodes, read by
JSON Pointer, changed by RFC 6902 patches that share every unchanged node. The versioned database (revisions on
disk, branches, snapshots), jq queries, the MCP server and its guardrails are being built.

Start with 'strata demo'.`,
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
		return &cliError{code: exitUsage, err: err}
	})
	root.PersistentFlags().StringVar(&g.dataDir, "data", defaultDataDir(getenv),
		"data directory holding the databases (env STRATA_DATA; not used yet)")

	root.AddCommand(
		newDemoCommand(g),
		newVersionCommand(g),
	)
	return root
}

// rootArgs refuses an unknown command, suggesting close names, and says plainly when a command is planned but not
// built yet.
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
	if what, ok := planned[name]; ok {
		return usageErrorf("%q is not built yet: it comes with %s (today: %s)", name, what, strings.Join(have, ", "))
	}
	msg := fmt.Sprintf("unknown command %q", name)
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %q?)", s[0])
	}
	return usageErrorf("%s; the commands are: %s", msg, strings.Join(have, ", "))
}

// action adapts a command's function to cobra, giving its errors their exit codes.
func action(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		return withExitCode(fn(cmd, args))
	}
}

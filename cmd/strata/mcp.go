package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	strataMCP "github.com/strata-db/strata/mcp"
)

type mcpOptions struct {
	writes string
}

// newMCPCommand is `strata mcp`: the MCP server over stdio, for an agent's client to start as a subprocess.
func newMCPCommand(g *globalOptions) *cobra.Command {
	o := &mcpOptions{}
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the databases to an AI agent over MCP (stdio)",
		Long: `Serve the databases of the data directory (--data) to an AI agent over the Model Context Protocol, on
standard input and output. An MCP client (Claude Code, Claude Desktop, the MCP Inspector...) starts it as a
subprocess; it stops when the client closes its input.

--writes decides what the agent may change:
  off       (the default) read-only: no write tool is offered at all
  branches  the agent may create branches and write on any branch but main; main changes only
            through a confirmed plan
  on        the agent may write everywhere, but removing or overwriting data on main still needs
            a confirmed plan
Confirmed plans are not built yet: until then such changes are refused, and a person promotes
the agent's branch with 'strata promote'.

Revisions the agent makes record the OS user as their author and the tool as their tool.`,
		Example: `  strata mcp --data ./strata-data
  claude mcp add strata -- strata mcp --data /path/to/strata-data --writes branches`,
		Args: args(0, 0),
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			return serveMCP(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), g, o)
		}),
	}
	cmd.Flags().StringVar(&o.writes, "writes", strataMCP.WritesOff, "what the agent may change: off, branches or on")
	return cmd
}

// serveMCP serves one MCP session on in and out until the client closes in or ctx ends.
func serveMCP(ctx context.Context, in io.Reader, out, stderr io.Writer, g *globalOptions, o *mcpOptions) (err error) {
	cfg := strataMCP.Config{
		Writes:    o.writes,
		Principal: g.env.user(),
		Version:   currentVersion().Version,
		Logger:    slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	// A bad flag stops here, before anything is opened: a typo must not leave the server writable.
	if err := cfg.Validate(); err != nil {
		return usageErrorf("--writes: %v", err)
	}
	// Only a server that may create databases makes a missing data directory; a read-only one reports it.
	dir, err := g.openDir(o.writes != strataMCP.WritesOff)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := dir.Close(); err == nil {
			err = cerr
		}
	}()
	// The engine's workers are re-executions of this binary (main calls query.WorkerMain).
	engine, err := newEngine()
	if err != nil {
		return err
	}
	defer engine.Close()
	cfg.Engine = engine
	srv, err := strataMCP.NewServer(dir, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "strata mcp: serving %s over stdio, writes %s\n", dir.Path(), o.writes)
	err = srv.Run(ctx, &mcpsdk.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil // interrupted, or the client went away: a normal end
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

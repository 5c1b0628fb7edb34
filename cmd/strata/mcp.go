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
	"github.com/strata-db/strata/snapshots"
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
	srv, dir, closeAll, err := openMCPServer(g, o.writes, mcpLogger(stderr), nil)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := closeAll(); err == nil {
			err = cerr
		}
	}()
	fmt.Fprintf(stderr, "strata mcp: serving %s over stdio, writes %s\n", dir.Path(), o.writes)
	err = srv.Run(ctx, &mcpsdk.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil // interrupted, or the client went away: a normal end
	}
	return err
}

// openMCPServer builds the MCP server for `strata mcp` and `strata serve`: it validates the mode, runs check (for
// more flags), and only then opens the data directory and a query engine. closeAll releases both.
func openMCPServer(g *globalOptions, writes string, logger *slog.Logger, check func() error) (srv *mcpsdk.Server, dir *snapshots.Dir, closeAll func() error, err error) {
	cfg := strataMCP.Config{
		Writes:    writes,
		Principal: g.env.user(),
		Version:   currentVersion().Version,
		Logger:    logger,
	}
	// A bad flag stops here, before anything is opened: a typo must not leave the server writable.
	if err := cfg.Validate(); err != nil {
		return nil, nil, nil, usageErrorf("--writes: %v", err)
	}
	if check != nil {
		if err := check(); err != nil {
			return nil, nil, nil, err
		}
	}
	// Only a server that may create databases makes a missing data directory; a read-only one reports it.
	if dir, err = g.openDir(writes != strataMCP.WritesOff); err != nil {
		return nil, nil, nil, err
	}
	// The engine's workers are re-executions of this binary (main calls query.WorkerMain).
	engine, err := newEngine()
	if err != nil {
		dir.Close()
		return nil, nil, nil, err
	}
	closeAll = func() error {
		engine.Close()
		return dir.Close()
	}
	cfg.Engine = engine
	if srv, err = strataMCP.NewServer(dir, cfg); err != nil {
		closeAll()
		return nil, nil, nil, err
	}
	return srv, dir, closeAll, nil
}

// mcpLogger logs the server's warnings to stderr (stdout may be the protocol stream).
func mcpLogger(stderr io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

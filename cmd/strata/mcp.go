package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/trace"

	"github.com/strata-db/strata/audit"
	"github.com/strata-db/strata/gate"
	strataMCP "github.com/strata-db/strata/mcp"
	"github.com/strata-db/strata/query"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/transport"
)

// mcpFlags are the flags `strata mcp` and `strata serve` share.
type mcpFlags struct {
	writes    string
	writesSet bool // --writes was given (cmd.Flags().Changed)
	config    string
	cacheMiB  int
	log       logFlags
	// metrics makes the server keep Prometheus metrics (strata serve --metrics-listen).
	metrics bool
}

// defaultCacheMiB is the memory a server's caches take at most, across all its databases.
const defaultCacheMiB = 512

func (f *mcpFlags) register(cmd *cobra.Command, who string) {
	cmd.Flags().StringVar(&f.writes, "writes", gate.WritesOff, "what "+who+" may change: off, branches or on")
	cmd.Flags().StringVar(&f.config, "config", "", "operator configuration file (JSON): write mode, policies, scopes and rate limits per principal")
	cmd.Flags().IntVar(&f.cacheMiB, "cache-mib", defaultCacheMiB, "memory the caches may take in all, across databases (MiB): a quarter for decoded nodes, the rest for values jq reads")
	f.log.register(cmd)
}

type mcpOptions struct {
	mcpFlags
}

// newMCPCommand is `strata mcp`: the MCP server over stdio, for an agent's client to start as a subprocess.
func newMCPCommand(g *globalOptions) *cobra.Command {
	o := &mcpOptions{}
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the databases to an AI agent over MCP (stdio)",
		Long: `Serve the databases of the data directory (--data) to an AI agent over the Model Context Protocol, on
standard input and output. An MCP client (Claude Code, Claude Desktop, the MCP Inspector...) starts it as a
subprocess; it stops when the client closes its input. A line that is not a JSON-RPC message gets a JSON-RPC
error and the session goes on.

--writes decides what the agent may change:
  off       (the default) read-only: no write tool is offered at all
  branches  the agent may create branches and write on any branch but main; main changes only
            through a confirmed plan
  on        the agent may write everywhere, but removing or overwriting data on main still needs
            a confirmed plan
A change that needs confirmation is not written: the agent gets a plan (what it would change, what it
removes). The agent applies it with apply_plan once the user confirms it in the client (when the client
can ask) or a person approves it: 'strata plans', 'strata approve', 'strata reject'.

Every call is recorded in the data directory's audit log ('strata audit').

--config FILE reads the operator's configuration (JSON): the write mode, the protected branches, and per
principal a policy (allow, ask or deny for read, write, protected and admin tools) and scopes (allow and
deny lists of databases and resources). Over stdio the principal is the OS user: its entry under
"principals", else "default". A --writes flag that contradicts the file's "writes" stops startup, as does
any unknown field or bad value.

Revisions the agent makes record the OS user as their author and the tool as their tool.

The log goes to stderr only (stdout is the protocol): one line per request at info (--log-level), as text
on a terminal or JSON otherwise (--log-format). With OTEL_EXPORTER_OTLP_ENDPOINT set, every request is an
OpenTelemetry span exported over OTLP/HTTP.`,
		Example: `  strata mcp --data ./strata-data
  strata mcp --data ./strata-data --config strata.json
  claude mcp add strata -- strata mcp --data /path/to/strata-data --writes branches`,
		Args: args(0, 0),
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			o.writesSet = cmd.Flags().Changed("writes")
			return serveMCP(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), g, o)
		}),
	}
	o.register(cmd, "the agent")
	return cmd
}

// serveMCP serves one MCP session on in and out until the client closes in or ctx ends.
func serveMCP(ctx context.Context, in io.Reader, out, stderr io.Writer, g *globalOptions, o *mcpOptions) (err error) {
	b, err := openMCP(ctx, g, &o.mcpFlags, stderr, nil)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := b.close(); err == nil {
			err = cerr
		}
	}()
	srv, err := b.server(g.env.user())
	if err != nil {
		return err
	}
	b.say(stderr, "strata mcp: serving %s over stdio, writes %s", b.dir.Path(), b.mode())
	w := &transport.SyncWriter{W: out}
	err = srv.Run(ctx, &mcpsdk.IOTransport{Reader: transport.NewStdioFramer(in, w), Writer: w})
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil // interrupted, or the client went away: a normal end
	}
	return err
}

// mcpBackend is what the MCP servers of `strata mcp` and `strata serve` share: the operator's settings, the data
// directory, the query engine, the audit log, and the gate over them. It builds the server of each principal.
type mcpBackend struct {
	settings *gate.Settings
	dir      *snapshots.Dir
	engine   *query.Engine
	logger   *slog.Logger
	// audit is the data directory's audit log: every call of every principal goes into it.
	audit *audit.Log
	gate  *gate.Gate
	// transport names the transport in audit records.
	transport string
	// jsonLog says the log is JSON (--log-format json): the startup lines are log records too.
	jsonLog  bool
	logSink  *logSink    // the logger's writer: flushed before the server writes to stderr itself, and at close
	requests *requestLog // the request log, written from its own goroutine
	// metrics, with --metrics-listen, are the server's Prometheus metrics; nodes is the shared cache of decoded
	// nodes, valueMax the budget of the engine's cache of values (both read when scraped).
	metrics  *metrics
	nodes    *revision.NodeCache
	valueMax int64
	// tracer, when OTEL_EXPORTER_OTLP_ENDPOINT is set, makes each request a span; stopTracing flushes them.
	tracer      trace.TracerProvider
	stopTracing func(context.Context) error

	mu      sync.Mutex
	servers map[string]*principalServer // strata serve: one server per principal, made on its first request

	// refusals, when set (strata serve), folds the records of requests refused before authentication.
	refusals *audit.Aggregator
}

type principalServer struct {
	once sync.Once
	srv  *mcpsdk.Server
}

// loadSettings reads --config (if given) and combines it with --writes. A missing or bad file, or a --writes flag
// that contradicts it, is a usage error.
func loadSettings(f *mcpFlags) (*gate.Settings, error) {
	if f.config == "" {
		s := &gate.Settings{Writes: f.writes}
		if err := gate.ValidMode(s.Writes); err != nil {
			return nil, usageErrorf("--writes: %v", err)
		}
		return s, nil
	}
	s, err := gate.LoadSettings(f.config)
	if err != nil {
		return nil, usageErrorf("--config: %v", err)
	}
	if err := s.WithWritesFlag(f.writes, f.writesSet); err != nil {
		if !f.writesSet {
			return nil, usageErrorf("--config: %v", err)
		}
		return nil, usageErrorf("--writes: %v", err)
	}
	return s, nil
}

// openMCP validates the flags and the configuration, runs check (for more flags), and only then opens the data
// directory and a query engine. close releases both.
func openMCP(ctx context.Context, g *globalOptions, f *mcpFlags, stderr io.Writer, check func(s *gate.Settings) error) (*mcpBackend, error) {
	// A bad flag or configuration stops here, before anything is opened: a typo must not leave the server writable.
	logger, sink, jsonLog, err := newLogger(&f.log, stderr, g.env.terminal)
	if err != nil {
		return nil, err
	}
	settings, err := loadSettings(f)
	if err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(settings); err != nil {
			return nil, err
		}
	}
	if _, err := g.auditKey(); err != nil {
		return nil, err
	}
	if f.cacheMiB == 0 {
		f.cacheMiB = defaultCacheMiB
	}
	if f.cacheMiB < 8 {
		return nil, usageErrorf("--cache-mib %d: use at least 8", f.cacheMiB)
	}
	budget := int64(f.cacheMiB) << 20
	b := &mcpBackend{settings: settings, logger: logger, logSink: sink, jsonLog: jsonLog, nodes: revision.NewNodeCache(budget / 4),
		valueMax: budget - budget/4}
	opened := false
	defer func() {
		if !opened {
			b.close() // what was opened before the failure
		}
	}()
	if b.tracer, b.stopTracing, err = tracing(ctx, g.env.getenv); err != nil {
		return nil, err
	}
	if f.metrics {
		b.metrics = newMetrics(settings.DatabaseClass())
	}
	// Only a server that may create databases makes a missing data directory; a read-only one reports it.
	if b.dir, err = g.openDirCached(b.mode() != gate.WritesOff, 0, func(o *snapshots.DirOptions) {
		o.DB.Forest = &revision.Options{Cache: b.nodes}
		if m := b.metrics; m != nil {
			o.DB.Events = m.events()
			o.Shared.Bolt.OnCommit = m.boltCommit
			o.Postgres.OnCommit = m.pgCommit
			o.Postgres.OnRoundTrip = func(d time.Duration) { m.pgRoundTrips.Observe(d.Seconds()) }
		}
	}); err != nil {
		return nil, err
	}
	// The engine's workers are re-executions of this binary (main calls query.WorkerMain).
	if b.engine, err = query.New(query.Options{MaxConcurrent: settings.MaxConcurrentQueries, CacheBytes: b.valueMax}); err != nil {
		return nil, err
	}
	// Every call is audited; a server that cannot keep the log does not start.
	if b.audit, err = g.openAudit(context.Background(), b.dir, func(err error) { logger.Warn("audit log", "err", err) }); err != nil {
		return nil, err
	}
	if b.gate, err = gate.New(b.dir, &gate.Options{Engine: b.engine, Audit: b.audit, Logger: logger}); err != nil {
		return nil, err
	}
	b.servers = map[string]*principalServer{}
	b.requests = newRequestLog(logger, sink)
	opened = true
	return b, nil
}

// mode is the write mode in force.
func (b *mcpBackend) mode() string {
	if b.settings.Writes == "" {
		return gate.WritesOff
	}
	return b.settings.Writes
}

// server builds the MCP server of one principal, over its actor of the gate.
func (b *mcpBackend) server(principal string) (*mcpsdk.Server, error) {
	actor, err := b.gate.As(b.settings.For(principal))
	if err != nil {
		return nil, err
	}
	return strataMCP.NewServerFor(actor, strataMCP.Config{MaxOutputChars: b.settings.MaxOutputChars,
		MaxConcurrentQueries: b.settings.MaxConcurrentQueries, Version: currentVersion().Version, Logger: sdkLogger(b.logger),
		Transport: b.transport, Observe: b.observe, Tracer: b.tracer})
}

// observe hears of every answered request: the request log, and the metrics when kept.
func (b *mcpBackend) observe(ri strataMCP.RequestInfo) {
	b.requests.log(ri)
	if b.metrics != nil {
		b.metrics.request(ri)
	}
}

// serverOf is the server of a principal for strata serve: made on its first request and kept (nil when it cannot
// be built: the go-sdk then answers 400, and the log says why).
func (b *mcpBackend) serverOf(principal string) *mcpsdk.Server {
	b.mu.Lock()
	ps := b.servers[principal]
	if ps == nil {
		ps = &principalServer{}
		b.servers[principal] = ps
	}
	b.mu.Unlock()
	ps.once.Do(func() {
		srv, err := b.server(principal)
		if err != nil {
			b.logger.Error("cannot build the MCP server of a principal", "principal", principal, "error", err)
			return
		}
		ps.srv = srv
	})
	return ps.srv
}

// close closes what the backend holds; openMCP calls it too on what it opened before failing.
func (b *mcpBackend) close() error {
	if b.gate != nil {
		b.gate.Close()
	}
	if b.engine != nil {
		b.engine.Close()
	}
	if b.refusals != nil {
		if err := b.refusals.Close(); err != nil {
			b.logger.Error("audit log", "err", err)
		}
	}
	if b.audit != nil {
		b.audit.Close()
	}
	var err error
	if b.dir != nil {
		err = b.dir.Close()
	}
	if b.stopTracing != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if terr := b.stopTracing(ctx); terr != nil {
			b.logger.Warn("OpenTelemetry: spans could not be exported before stopping", "cause", terr)
		}
	}
	b.requests.Close()
	return err
}

// refused records in the audit log a request refused before it reached a server: without valid credentials, or
// over its rate limit. A request no principal was authenticated for is counted by b.refusals (one record per
// address and reason per interval, docs/security.md T21); an authenticated principal's is appended on its own.
func (b *mcpBackend) refused(principal, remote, decision string) {
	outcome := "UNAUTHENTICATED"
	if decision == audit.DecisionRateLimited {
		outcome = "RATE_LIMITED"
	}
	if b.metrics != nil {
		b.metrics.refusedRequest(decision) // every refused request, aggregated in the audit log or not
	}
	rec := audit.Record{Principal: principal, Client: remote, Transport: audit.TransportHTTP, Tool: "http",
		ArgsDigest: audit.Digest(nil), Decision: decision, Outcome: outcome}
	if principal == "" && b.refusals != nil {
		b.refusals.Add(rec)
		return
	}
	if _, err := b.audit.Append(rec); err != nil {
		b.logger.Error("audit log: a record could not be appended", "err", err)
	}
}

package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/strata-db/strata/audit"
	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/review"
	"github.com/strata-db/strata/transport"
)

// Limits of the HTTP transport (the rest are package transport's).
const (
	// sessionIdle closes a session after this long without a request from its client, unless the configuration's
	// session_idle says otherwise.
	sessionIdle = 10 * time.Minute
	// shutdownGrace is how long a shutdown waits for requests in flight before closing connections.
	shutdownGrace = 5 * time.Second
)

type serveOptions struct {
	mcpFlags
	listen    string
	tokenFile string
	tlsCert   string
	tlsKey    string
	// metricsListen is where /metrics, /healthz and /readyz are served ("": no metrics).
	metricsListen string
	// onRefused, when set, hears of every request refused for want of authentication or over a rate limit (the
	// audit log's hook); see transport.AuthOptions.OnRefused.
	onRefused func(principal, remote, decision string)
}

// newServeCommand is `strata serve`: the MCP server over Streamable HTTP at /mcp.
func newServeCommand(g *globalOptions) *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the databases to AI agents over MCP (Streamable HTTP)",
		Long: `Serve the databases of the data directory (--data) to AI agents over the Model Context Protocol's
Streamable HTTP transport, at http://ADDR/mcp (https with --tls-cert and --tls-key). A client of protocol
2026-07-28 or later sends each request on its own; an older one gets a session, closed after 10 minutes
without a request (session_idle), with at most 1024 open in all and 64 per principal (max_sessions,
max_sessions_per_principal). Every call of a JSON-RPC batch counts against the rate limit, and a batch
holds at most 64 messages. The server stops on interrupt, letting requests in flight finish.

Without --token-file it listens on the loopback interface only (--listen, default 127.0.0.1:7411), and
every client acts as the OS user running the server. Requests from web pages are refused: a Host other
than the listen address or localhost (DNS rebinding), any cross-origin Origin (including "null") or
cross-site fetch, and bodies that are not JSON or larger than 4 MiB.

--token-file FILE turns on bearer tokens, and lets the server listen on any address. Each line of the
file is PRINCIPAL TOKEN (blank lines and lines starting with # are skipped): a principal's name (letters,
digits, . _ - @) and its token (at least 32 printable characters, such as the output of
'openssl rand -hex 32'). Each principal has one token and each token one principal. The file must be
readable by its owner only (chmod 600). Clients send 'Authorization: Bearer TOKEN'; any other request
is refused with 401, and a token in the URL is refused outright. After about 10 failed attempts from one
address, its requests get 429 for a while. A session belongs to the principal that opened it. Serve
tokens over TLS on anything but loopback: --tls-cert and --tls-key (PEM files, both or neither; TLS 1.2
or later).

--writes decides what agents may change, as for 'strata mcp':
  off       (the default) read-only: no write tool is offered at all
  branches  agents may create branches and write on any branch but main; main changes only
            through a confirmed plan
  on        agents may write everywhere, but removing or overwriting data on main still needs
            a confirmed plan

--config FILE reads the operator's configuration (JSON): the write mode, the protected branches, and per
principal (the names of the token file) a policy, scopes and a rate limit; "default" applies to the
others. With --token-file, every principal the configuration names must have a token: one that has none
stops startup (a misspelt name would leave the principal meant with the default). A principal over its
rate limit gets 429 with Retry-After, and its call does not run. A --writes flag that contradicts the
file stops startup, as does any unknown field or bad value.

Revisions the agents make record their principal as their author: the token's principal, or without
tokens the OS user running the server.

The review page, at http://ADDR/ui/ on the same listener, shows people the databases, their history, diffs,
the plans waiting for a decision and the audit log, and lets reviewers approve or reject plans. With
--token-file, principals sign in with their token; those whose configuration says "review": true may
decide plans (never their own). Without it, the server prints a one-time sign-in address on standard
error ("review page: http://127.0.0.1:7411/ui/login?code=..."), which makes whoever opens it the operator;
anyone who can read the server's standard error can use it.

For the operator: /healthz (the process serves) and /readyz (it can take writes) answer without
credentials. --metrics-listen ADDR serves Prometheus metrics at http://ADDR/metrics, with /healthz and
/readyz, loopback only without --token-file. The log goes to stderr, one line per request at info
(--log-level), as text on a terminal or JSON otherwise (--log-format); it never holds a token or a
value. With OTEL_EXPORTER_OTLP_ENDPOINT set, every request is an OpenTelemetry span exported over
OTLP/HTTP. See the README, "Operating Strata".`,
		Example: `  strata serve --data ./strata-data
  strata serve --data ./strata-data --writes branches --listen 127.0.0.1:8080
  strata serve --data ./strata-data --config strata.json --token-file tokens --listen 0.0.0.0:7411 \
      --tls-cert cert.pem --tls-key key.pem
  strata serve --data ./strata-data --metrics-listen 127.0.0.1:9464 --log-format json
  claude mcp add --transport http strata http://127.0.0.1:7411/mcp`,
		Args: args(0, 0),
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			o.writesSet = cmd.Flags().Changed("writes")
			return serveHTTP(cmd.Context(), cmd.ErrOrStderr(), g, o)
		}),
	}
	o.register(cmd, "agents")
	cmd.Flags().StringVar(&o.listen, "listen", transport.DefaultListen, "address to listen on (loopback only without --token-file)")
	cmd.Flags().StringVar(&o.tokenFile, "token-file", "", "file of PRINCIPAL TOKEN lines (mode 600): require bearer tokens")
	cmd.Flags().StringVar(&o.tlsCert, "tls-cert", "", "TLS certificate (PEM) to serve HTTPS; needs --tls-key")
	cmd.Flags().StringVar(&o.tlsKey, "tls-key", "", "TLS private key (PEM) of --tls-cert")
	cmd.Flags().StringVar(&o.metricsListen, "metrics-listen", "", "address to serve Prometheus /metrics (and /healthz, /readyz) on (loopback only without --token-file); off unless given")
	return cmd
}

// serveHTTP serves MCP over HTTP until ctx ends.
func serveHTTP(ctx context.Context, stderr io.Writer, g *globalOptions, o *serveOptions) (err error) {
	var tokens []transport.Token
	var tlsConfig *tls.Config
	o.metrics = o.metricsListen != ""
	b, err := openMCP(ctx, g, &o.mcpFlags, stderr, func(settings *gate.Settings) error {
		if o.tokenFile != "" {
			if tokens, err = transport.LoadTokens(o.tokenFile); err != nil {
				return usageErrorf("--token-file %s: %v", o.tokenFile, err)
			}
			// With tokens the principals are the token file's: an entry no token names is a misspelling, and the
			// principal meant would silently get the default.
			named := map[string]bool{}
			for _, tk := range tokens {
				named[tk.Principal] = true
			}
			for _, n := range slices.Sorted(maps.Keys(settings.Principals)) {
				if !named[n] {
					return usageErrorf("--config: principal %q is named by no token in --token-file %s (a misspelling would leave the principal meant with the default settings)", n, o.tokenFile)
				}
			}
		}
		if err := transport.CheckListen("--listen", o.listen, tokens != nil); err != nil {
			return usageErrorf("%v", err)
		}
		if tlsConfig, err = transport.LoadTLS(o.tlsCert, o.tlsKey); err != nil {
			return usageErrorf("%v", err)
		}
		if o.metricsListen != "" {
			if err := transport.CheckListen("--metrics-listen", o.metricsListen, tokens != nil); err != nil {
				return usageErrorf("%v", err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := b.close(); err == nil {
			err = cerr
		}
	}()
	logger := b.logger
	ln, err := listen("--listen", o.listen, tokens != nil)
	if err != nil {
		return err
	}
	addr := ln.Addr().(*net.TCPAddr)
	b.transport = audit.TransportHTTP
	// Requests refused before authentication cost one record per address and reason per interval (T21).
	b.refusals = audit.NewAggregator(b.audit, audit.AggregateOptions{Warn: func(err error) { logger.Error("audit log", "err", err) }})
	onRefused := b.refused
	if o.onRefused != nil {
		onRefused = func(principal, remote, decision string) {
			b.refused(principal, remote, decision)
			o.onRefused(principal, remote, decision)
		}
	}
	idle := sessionIdle
	if b.settings.SessionIdle > 0 {
		idle = time.Duration(b.settings.SessionIdle)
	}
	auth := transport.NewAuth(transport.AuthOptions{Tokens: tokens, LocalUser: g.env.user(), RateLimit: b.settings.RateLimitFor,
		SessionIdle: idle, OnRefused: onRefused, MaxSessions: b.settings.MaxSessions,
		MaxSessionsPerPrincipal: b.settings.MaxSessionsPerPrincipal, Stateless: sessionless,
		SessionLive: func(principal, sid string) bool {
			srv := b.serverOf(principal)
			if srv == nil {
				return false
			}
			for ss := range srv.Sessions() {
				if ss.ID() == sid {
					return ss.InitializeParams() != nil
				}
			}
			return false
		}})
	serverOf := func(r *http.Request) *mcpsdk.Server {
		principal := transport.PrincipalFrom(r.Context())
		if principal == "" {
			return nil // not through Auth: the go-sdk answers 400
		}
		return b.serverOf(principal)
	}
	sessions := mcpsdk.NewStreamableHTTPHandler(serverOf, &mcpsdk.StreamableHTTPOptions{
		SessionTimeout:      idle,
		MaxRequestBodyBytes: transport.MaxBodyBytes,
		Logger:              sdkLogger(logger),
		// With tokens the server may sit behind a proxy on the same machine; Guard checks Host and Origin.
		DisableLocalhostProtection: tokens != nil,
	})
	perRequest := mcpsdk.NewStreamableHTTPHandler(serverOf, &mcpsdk.StreamableHTTPOptions{
		Stateless:                    true,
		PropagateRequestCancellation: true,
		MaxRequestBodyBytes:          transport.MaxBodyBytes,
		Logger:                       sdkLogger(logger),
		DisableLocalhostProtection:   tokens != nil,
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", auth.Handler(byRevision(sessions, perRequest)))
	hosts := transport.ListenHosts(o.listen, addr.Port)
	ready := &readiness{g: b.gate, logger: logger}
	scheme, who := "http", "as "+g.env.user()
	if tlsConfig != nil {
		scheme = "https"
	}
	// The review page (/ui/) shares the listener, its TLS and limits, the tokens and the gate; its own guard lets
	// the browser's forms through, which the MCP endpoint's refuses.
	ui, err := review.New(review.Options{Gate: b.gate, Principal: b.settings.For, Auth: auth, Operator: g.env.user(),
		Base: fmt.Sprintf("%s://%s", scheme, addr), TLS: tlsConfig != nil, Logger: logger,
		Announce: func(address string) { b.say(stderr, "review page: %s", address) }})
	if err != nil {
		ln.Close()
		return err
	}
	root := http.NewServeMux()
	root.Handle("/ui/", transport.PageGuard(hosts, tokens != nil, ui))
	root.Handle("/ui", transport.PageGuard(hosts, tokens != nil, ui))
	root.Handle("/", transport.Guard(hosts, tokens != nil, http.NewCrossOriginProtection().Handler(mux)))
	// /healthz and /readyz answer load balancers without credentials, ahead of the Host and Origin checks.
	hs := transport.NewHTTPServer(healthHandler(ready, root), tlsConfig, logger)
	if tokens != nil {
		who = fmt.Sprintf("bearer tokens for %d principal%s", len(tokens), plural(len(tokens)))
	}
	b.say(stderr, "strata serve: serving %s at %s://%s/mcp, writes %s, %s", b.dir.Path(), scheme, addr, b.mode(), who)
	if tokens != nil {
		b.say(stderr, "review page: %s", ui.Address())
	} else {
		b.say(stderr, "review page: %s", ui.SignInAddress())
	}
	errc := make(chan error, 2)
	var ms *http.Server
	if o.metricsListen != "" {
		b.metrics.reg.MustRegister(newScraped(&scraped{nodes: b.nodes, engine: b.engine, dir: b.dir, sessions: auth.Sessions,
			ready: ready, valueMax: b.valueMax}))
		var mln net.Listener
		if ms, mln, err = metricsServer(o.metricsListen, tokens != nil, b.metrics.reg, ready, logger); err != nil {
			ln.Close()
			return err
		}
		b.say(stderr, "strata serve: metrics at http://%s/metrics", mln.Addr())
		go func() { errc <- ms.Serve(mln) }()
	}
	go func() {
		if tlsConfig != nil {
			errc <- hs.ServeTLS(ln, "", "")
		} else {
			errc <- hs.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close() // event streams stay open: cut them
	}
	if ms != nil {
		ms.Close()
		if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	b.say(stderr, "strata serve: stopped")
	return nil
}

// sessionlessRevision is the first MCP revision without sessions: every request carries its protocol version,
// client and capabilities, a subscription is a subscriptions/listen stream, a confirmation is an input request
// answered by calling again, and closing the request cancels it.
const sessionlessRevision = "2026-07-28"

// sessionless reports whether a request is of a revision without sessions: it is answered on its own.
func sessionless(r *http.Request) bool {
	return r.Header.Get("MCP-Protocol-Version") >= sessionlessRevision
}

// byRevision serves each request with the handler of its protocol revision, named by its MCP-Protocol-Version
// header (which that revision requires on every request, server/discover included): from sessionlessRevision on,
// perRequest (the go-sdk serves those revisions only statelessly, and refuses them in the stateful mode every
// request had before, so that a default mark3labs/mcp-go client, which keeps the newest revision after
// server/discover, failed every call); earlier revisions, and the initialize handshake, sessions.
func byRevision(sessions, perRequest http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sessionless(r) {
			perRequest.ServeHTTP(w, r)
			return
		}
		sessions.ServeHTTP(w, r)
	})
}

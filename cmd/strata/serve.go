package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/strata-db/strata/audit"
	"github.com/strata-db/strata/gate"
)

// Limits of the HTTP transport.
const (
	defaultListen = "127.0.0.1:7411"
	// maxBodyBytes caps one request body; a bigger one is refused with 413 before it is parsed.
	maxBodyBytes = 4 << 20
	// sessionIdle closes a session after this long without a request from its client.
	sessionIdle = 30 * time.Minute
	// shutdownGrace is how long a shutdown waits for requests in flight before closing connections.
	shutdownGrace = 5 * time.Second
)

// Timeouts against slow clients (slowloris); variables so that tests can shorten them.
var (
	// readHeaderTimeout bounds the time a client may take to send a request's headers.
	readHeaderTimeout = 10 * time.Second
	// bodyReadTimeout bounds the time a client may take to send one request body.
	bodyReadTimeout = 30 * time.Second
)

type serveOptions struct {
	mcpFlags
	listen    string
	tokenFile string
	tlsCert   string
	tlsKey    string
	// onRefused, when set, hears of every request refused for want of authentication or over a rate limit (the
	// audit log's hook); see gate.onRefused.
	onRefused func(principal, remote, decision string)
}

// newServeCommand is `strata serve`: the MCP server over Streamable HTTP at /mcp.
func newServeCommand(g *globalOptions) *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the databases to AI agents over MCP (Streamable HTTP)",
		Long: `Serve the databases of the data directory (--data) to AI agents over the Model Context Protocol's
Streamable HTTP transport, at http://ADDR/mcp (https with --tls-cert and --tls-key). Each client gets its
own session; a session without a request for 30 minutes is closed. The server stops on interrupt, letting
requests in flight finish.

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
others. A principal over its rate limit gets 429 with Retry-After, and its call does not run. A --writes
flag that contradicts the file stops startup, as does any unknown field or bad value.

Revisions the agents make record their principal as their author: the token's principal, or without
tokens the OS user running the server.`,
		Example: `  strata serve --data ./strata-data
  strata serve --data ./strata-data --writes branches --listen 127.0.0.1:8080
  strata serve --data ./strata-data --config strata.json --token-file tokens --listen 0.0.0.0:7411 \
      --tls-cert cert.pem --tls-key key.pem
  claude mcp add --transport http strata http://127.0.0.1:7411/mcp`,
		Args: args(0, 0),
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			o.writesSet = cmd.Flags().Changed("writes")
			return serveHTTP(cmd.Context(), cmd.ErrOrStderr(), g, o)
		}),
	}
	o.register(cmd, "agents")
	cmd.Flags().StringVar(&o.listen, "listen", defaultListen, "address to listen on (loopback only without --token-file)")
	cmd.Flags().StringVar(&o.tokenFile, "token-file", "", "file of PRINCIPAL TOKEN lines (mode 600): require bearer tokens")
	cmd.Flags().StringVar(&o.tlsCert, "tls-cert", "", "TLS certificate (PEM) to serve HTTPS; needs --tls-key")
	cmd.Flags().StringVar(&o.tlsKey, "tls-key", "", "TLS private key (PEM) of --tls-cert")
	return cmd
}

// checkListen checks a listen address: without tokens it must be on the loopback interface.
func checkListen(addr string, tokens bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErrorf("--listen %q: %v (use HOST:PORT, such as %s)", addr, err, defaultListen)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return usageErrorf("--listen %q: bad port %q", addr, port)
	}
	if tokens || strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return usageErrorf("--listen %q: without bearer tokens (--token-file), strata serve listens only on a loopback address (127.0.0.1, ::1 or localhost); a server reachable from other machines would let anyone on the network use it", addr)
}

// loadTLS loads --tls-cert and --tls-key (both or neither).
func loadTLS(certFile, keyFile string) (*tls.Config, error) {
	switch {
	case certFile == "" && keyFile == "":
		return nil, nil
	case certFile == "" || keyFile == "":
		return nil, usageErrorf("--tls-cert and --tls-key go together: give both or neither")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, usageErrorf("--tls-cert %s, --tls-key %s: %v", certFile, keyFile, err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}, nil
}

// serveHTTP serves MCP over HTTP until ctx ends.
func serveHTTP(ctx context.Context, stderr io.Writer, g *globalOptions, o *serveOptions) (err error) {
	logger := mcpLogger(stderr)
	var tokens []tokenEntry
	var tlsConfig *tls.Config
	b, err := openMCP(g, &o.mcpFlags, logger, func(*gate.Settings) error {
		if o.tokenFile != "" {
			if tokens, err = loadTokens(o.tokenFile); err != nil {
				return err
			}
		}
		if err := checkListen(o.listen, tokens != nil); err != nil {
			return err
		}
		tlsConfig, err = loadTLS(o.tlsCert, o.tlsKey)
		return err
	})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := b.close(); err == nil {
			err = cerr
		}
	}()
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.listen, err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	if tokens == nil && !addr.IP.IsLoopback() { // "localhost" resolved to something else
		ln.Close()
		return usageErrorf("--listen %q resolved to %s, which is not a loopback address", o.listen, addr)
	}
	gt := newAuthGate(tokens, g.env.user(), b)
	b.transport = audit.TransportHTTP
	gt.onRefused = b.refused
	if o.onRefused != nil {
		gt.onRefused = func(principal, remote, decision string) {
			b.refused(principal, remote, decision)
			o.onRefused(principal, remote, decision)
		}
	}
	sessions := mcpsdk.NewStreamableHTTPHandler(gt.server,
		&mcpsdk.StreamableHTTPOptions{
			SessionTimeout:      sessionIdle,
			MaxRequestBodyBytes: maxBodyBytes,
			Logger:              logger,
			// With tokens the server may sit behind a proxy on the same machine; guard checks Host and Origin.
			DisableLocalhostProtection: tokens != nil,
		})
	perRequest := mcpsdk.NewStreamableHTTPHandler(gt.server,
		&mcpsdk.StreamableHTTPOptions{
			Stateless:                    true,
			PropagateRequestCancellation: true,
			MaxRequestBodyBytes:          maxBodyBytes,
			Logger:                       logger,
			DisableLocalhostProtection:   tokens != nil,
		})
	mux := http.NewServeMux()
	mux.Handle("/mcp", gt.handler(byRevision(sessions, perRequest)))
	hs := &http.Server{
		Handler:           guard(listenHosts(o.listen, addr.Port), tokens != nil, http.NewCrossOriginProtection().Handler(mux)),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		TLSConfig:         tlsConfig,
		// No ReadTimeout or WriteTimeout: they would cut the long-lived event streams. guard bounds body reads.
	}
	scheme, who := "http", "as "+g.env.user()
	if tlsConfig != nil {
		scheme = "https"
	}
	if tokens != nil {
		who = fmt.Sprintf("bearer tokens for %d principal%s", len(tokens), plural(len(tokens)))
	}
	fmt.Fprintf(stderr, "strata serve: serving %s at %s://%s/mcp, writes %s, %s\n", b.dir.Path(), scheme, addr, b.mode(), who)
	errc := make(chan error, 1)
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
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintln(stderr, "strata serve: stopped")
	return nil
}

// sessionlessRevision is the first MCP revision without sessions: every request carries its protocol version,
// client and capabilities, a subscription is a subscriptions/listen stream, a confirmation is an input request
// answered by calling again, and closing the request cancels it.
const sessionlessRevision = "2026-07-28"

// byRevision serves each request with the handler of its protocol revision, named by its MCP-Protocol-Version
// header (which that revision requires on every request, server/discover included): from sessionlessRevision on,
// perRequest (the go-sdk serves those revisions only statelessly, and refuses them in the stateful mode every
// request had before, so that a default mark3labs/mcp-go client, which keeps the newest revision after
// server/discover, failed every call); earlier revisions, and the initialize handshake, sessions.
func byRevision(sessions, perRequest http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("MCP-Protocol-Version") >= sessionlessRevision {
			perRequest.ServeHTTP(w, r)
			return
		}
		sessions.ServeHTTP(w, r)
	})
}

// listenHosts is the set of Host header values the server answers to: the listen host and the loopback names, each
// with the port it listens on.
func listenHosts(listen string, port int) map[string]bool {
	host, _, _ := net.SplitHostPort(listen)
	p := strconv.Itoa(port)
	hosts := map[string]bool{}
	for _, h := range []string{host, "localhost", "127.0.0.1", "::1"} {
		hosts[strings.ToLower(net.JoinHostPort(h, p))] = true
	}
	return hosts
}

// guard refuses, before anything is parsed, what a web page could send to a local server (docs/security.md T9): a Host
// that is not this server's (DNS rebinding), an Origin that is not this server's (including "null"), a cross-site or
// same-site fetch, and a POST body that is not JSON (a "simple" cross-origin request needs no preflight). It caps
// the body size (413) and the time to send the body.
//
// With tokens (anyHost) the server may be reached under any name, so any Host is accepted; an Origin must then be
// the Host the request was sent to, or one of the listen hosts.
func guard(hosts map[string]bool, anyHost bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := strings.ToLower(r.Host)
		if !anyHost && !hosts[host] {
			http.Error(w, "Forbidden: this server answers only to its loopback address (Host header refused)", http.StatusForbidden)
			return
		}
		for _, origin := range r.Header.Values("Origin") {
			u, err := url.Parse(origin)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") ||
				!(hosts[strings.ToLower(u.Host)] || anyHost && strings.EqualFold(u.Host, host)) {
				http.Error(w, "Forbidden: cross-origin requests are refused", http.StatusForbidden)
				return
			}
		}
		if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
			http.Error(w, "Forbidden: cross-site requests are refused", http.StatusForbidden)
			return
		}
		if r.Method == http.MethodPost {
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
				http.Error(w, "Forbidden: the body must be application/json", http.StatusForbidden)
				return
			}
		}
		if r.ContentLength > maxBodyBytes {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", maxBodyBytes), http.StatusRequestEntityTooLarge)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(bodyReadTimeout)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
			r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the read deadline once the body has been read, so that it does not cut a long answer (the
// server watches the connection to notice a client that goes away). A body that failed (a client too slow) keeps
// it: net/http then gives up on the rest of the body at once instead of waiting for it before answering.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

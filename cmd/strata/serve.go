package main

import (
	"context"
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

	strataMCP "github.com/strata-db/strata/mcp"
)

// Limits of the HTTP transport.
const (
	defaultListen = "127.0.0.1:7411"
	// maxBodyBytes caps one request body; a bigger one is refused with 413 before it is parsed.
	maxBodyBytes = 4 << 20
	// sessionIdle closes a session after this long without a request from its client.
	sessionIdle = 30 * time.Minute
	// bodyReadTimeout bounds the time a client may take to send one request body (slowloris).
	bodyReadTimeout = 30 * time.Second
	// shutdownGrace is how long a shutdown waits for requests in flight before closing connections.
	shutdownGrace = 5 * time.Second
)

type serveOptions struct {
	writes string
	listen string
}

// newServeCommand is `strata serve`: the MCP server over Streamable HTTP at /mcp.
func newServeCommand(g *globalOptions) *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the databases to AI agents over MCP (Streamable HTTP)",
		Long: `Serve the databases of the data directory (--data) to AI agents over the Model Context Protocol's
Streamable HTTP transport, at http://ADDR/mcp. Each client gets its own session; a session without a request
for 30 minutes is closed. The server stops on interrupt, letting requests in flight finish.

It listens on the loopback interface only (--listen, default 127.0.0.1:7411): bearer tokens, which a
server reachable from other machines needs, are not built yet. Requests from web pages are refused: a Host
other than the listen address or localhost (DNS rebinding), any cross-origin Origin (including "null") or
cross-site fetch, and bodies that are not JSON or larger than 4 MiB.

--writes decides what agents may change, as for 'strata mcp':
  off       (the default) read-only: no write tool is offered at all
  branches  agents may create branches and write on any branch but main; main changes only
            through a confirmed plan
  on        agents may write everywhere, but removing or overwriting data on main still needs
            a confirmed plan

Revisions the agents make record the OS user running the server as their author.`,
		Example: `  strata serve --data ./strata-data
  strata serve --data ./strata-data --writes branches --listen 127.0.0.1:8080
  claude mcp add --transport http strata http://127.0.0.1:7411/mcp`,
		Args: args(0, 0),
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			return serveHTTP(cmd.Context(), cmd.ErrOrStderr(), g, o)
		}),
	}
	cmd.Flags().StringVar(&o.writes, "writes", strataMCP.WritesOff, "what agents may change: off, branches or on")
	cmd.Flags().StringVar(&o.listen, "listen", defaultListen, "address to listen on (loopback only for now)")
	return cmd
}

// checkLoopback refuses a listen address that is not on the loopback interface.
func checkLoopback(addr string) (host string, err error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", usageErrorf("--listen %q: %v (use HOST:PORT, such as %s)", addr, err, defaultListen)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", usageErrorf("--listen %q: bad port %q", addr, port)
	}
	if strings.EqualFold(host, "localhost") {
		return host, nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return host, nil
	}
	return "", usageErrorf("--listen %q: strata serve listens only on a loopback address (127.0.0.1, ::1 or localhost) until bearer tokens come with the guardrails work; a server reachable from other machines would let anyone on the network use it", addr)
}

// serveHTTP serves MCP over HTTP until ctx ends.
func serveHTTP(ctx context.Context, stderr io.Writer, g *globalOptions, o *serveOptions) (err error) {
	logger := mcpLogger(stderr)
	srv, dir, closeAll, err := openMCPServer(g, o.writes, logger, func() error {
		_, err := checkLoopback(o.listen)
		return err
	})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := closeAll(); err == nil {
			err = cerr
		}
	}()
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.listen, err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	if !addr.IP.IsLoopback() { // "localhost" resolved to something else
		ln.Close()
		return usageErrorf("--listen %q resolved to %s, which is not a loopback address", o.listen, addr)
	}
	mcpHandler := mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv },
		&mcpsdk.StreamableHTTPOptions{
			SessionTimeout:      sessionIdle,
			MaxRequestBodyBytes: maxBodyBytes,
			Logger:              logger,
		})
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpHandler)
	hs := &http.Server{
		Handler:           guard(listenHosts(o.listen, addr.Port), http.NewCrossOriginProtection().Handler(mux)),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		// No ReadTimeout or WriteTimeout: they would cut the long-lived event streams. guard bounds body reads.
	}
	fmt.Fprintf(stderr, "strata serve: serving %s at http://%s/mcp, writes %s\n", dir.Path(), addr, o.writes)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
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

// guard refuses, before anything is parsed, what a web page could send to a local server (SECURITY.md T9): a Host
// that is not this server's (DNS rebinding), an Origin that is not this server's (including "null"), a cross-site or
// same-site fetch, and a POST body that is not JSON (a "simple" cross-origin request needs no preflight). It caps
// the body size (413) and the time to send the body.
func guard(hosts map[string]bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hosts[strings.ToLower(r.Host)] {
			http.Error(w, "Forbidden: this server answers only to its loopback address (Host header refused)", http.StatusForbidden)
			return
		}
		for _, origin := range r.Header.Values("Origin") {
			u, err := url.Parse(origin)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !hosts[strings.ToLower(u.Host)] {
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
// server watches the connection to notice a client that goes away).
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.done {
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

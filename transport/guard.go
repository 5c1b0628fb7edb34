package transport

import (
	"crypto/tls"
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
)

// Limits of the HTTP transport.
const (
	// MaxBodyBytes caps one request body; a bigger one is refused with 413 before it is parsed.
	MaxBodyBytes = 4 << 20
)

// Timeouts against slow clients (slowloris); variables so that tests can shorten them.
var (
	// ReadHeaderTimeout bounds the time a client may take to send a request's headers.
	ReadHeaderTimeout = 10 * time.Second
	// BodyReadTimeout bounds the time a client may take to send one request body.
	BodyReadTimeout = 30 * time.Second
	// WriteStallTimeout bounds the time one write of an answer may wait for a client that stopped reading: its
	// connection is then closed, so that it cannot hold a handler (and what the handler holds) for ever. It bounds
	// each write, not a whole answer, so an event stream may stay open and quiet for as long as it likes.
	WriteStallTimeout = 30 * time.Second
)

// DefaultListen is where a server listens unless told otherwise: loopback.
const DefaultListen = "127.0.0.1:7411"

// CheckListen checks the listen address addr that the flag (such as "--listen") gave: without tokens it must be on
// the loopback interface.
func CheckListen(flag, addr string, tokens bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q: %v (use HOST:PORT, such as %s)", flag, addr, err, DefaultListen)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("%s %q: bad port %q", flag, addr, port)
	}
	if tokens || strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%s %q: without bearer tokens (--token-file), strata serve listens only on a loopback address (127.0.0.1, ::1 or localhost); a server reachable from other machines would let anyone on the network use it", flag, addr)
}

// LoadTLS loads a certificate and its key (PEM files, both or neither: neither is no TLS), for TLS 1.2 and later.
func LoadTLS(certFile, keyFile string) (*tls.Config, error) {
	switch {
	case certFile == "" && keyFile == "":
		return nil, nil
	case certFile == "" || keyFile == "":
		return nil, fmt.Errorf("--tls-cert and --tls-key go together: give both or neither")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s, --tls-key %s: %v", certFile, keyFile, err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}, nil
}

// ListenHosts is the set of Host header values the server answers to: the listen host and the loopback names, each
// with the port it listens on.
func ListenHosts(listen string, port int) map[string]bool {
	host, _, _ := net.SplitHostPort(listen)
	p := strconv.Itoa(port)
	hosts := map[string]bool{}
	for _, h := range []string{host, "localhost", "127.0.0.1", "::1"} {
		hosts[strings.ToLower(net.JoinHostPort(h, p))] = true
	}
	return hosts
}

// Guard refuses, before anything is parsed, what a web page could send to a local server (docs/security.md T9): a Host
// that is not this server's (DNS rebinding), an Origin that is not this server's (including "null"), a cross-site or
// same-site fetch, and a POST body that is not JSON (a "simple" cross-origin request needs no preflight). It caps
// the body size (413) and the time to send the body.
//
// With tokens (anyHost) the server may be reached under any name, so any Host is accepted; an Origin must then be
// the Host the request was sent to, or one of the listen hosts.
func Guard(hosts map[string]bool, anyHost bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAndOrigin(w, r, hosts, anyHost) {
			return
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
		if !limitBody(w, r, MaxBodyBytes) {
			return
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

// NewHTTPServer is an http.Server with the transport's limits: a bound on the time to send headers (bodies are
// bounded by Guard), on header bytes, on idle connections, and on each write of an answer (WriteStallTimeout).
// There is no ReadTimeout or WriteTimeout: they would cut the long-lived event streams.
func NewHTTPServer(h http.Handler, tlsConfig *tls.Config, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           stallGuard(h),
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		TLSConfig:         tlsConfig,
	}
}

// stallGuard gives each write of next's answer WriteStallTimeout to complete. The deadline is set before a write
// and lifted after it, not left running: over HTTP/2 a write deadline that passes resets the stream even when
// nothing is being written, which would cut a quiet event stream. What the server writes after the handler has
// returned (the rest of its buffer, the last chunk) gets the same bound.
func stallGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if rc.SetWriteDeadline(time.Time{}) != nil {
			next.ServeHTTP(w, r) // a writer without deadlines: nothing to bound
			return
		}
		d := WriteStallTimeout // read once: a request keeps the bound it started with
		defer func() { rc.SetWriteDeadline(time.Now().Add(d)) }()
		next.ServeHTTP(&stallWriter{ResponseWriter: w, rc: rc, d: d}, r)
	})
}

// stallWriter bounds each Write and Flush with WriteStallTimeout.
type stallWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

func (s *stallWriter) Write(p []byte) (int, error) {
	s.rc.SetWriteDeadline(time.Now().Add(s.d))
	defer s.rc.SetWriteDeadline(time.Time{})
	return s.ResponseWriter.Write(p)
}

func (s *stallWriter) Flush() { s.FlushError() }

// FlushError is what http.ResponseController.Flush calls.
func (s *stallWriter) FlushError() error {
	s.rc.SetWriteDeadline(time.Now().Add(s.d))
	defer s.rc.SetWriteDeadline(time.Time{})
	return s.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (s *stallWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// limitBody refuses a request whose declared body is longer than max (413), and bounds the body it reads to max
// bytes and BodyReadTimeout. It reports whether the request may go on.
func limitBody(w http.ResponseWriter, r *http.Request, max int64) bool {
	if r.ContentLength > max {
		http.Error(w, fmt.Sprintf("request body exceeds %d bytes", max), http.StatusRequestEntityTooLarge)
		return false
	}
	if r.Body != nil && r.Body != http.NoBody {
		rc := http.NewResponseController(w)
		if rc.SetReadDeadline(time.Now().Add(BodyReadTimeout)) == nil {
			r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		}
		// The server's own writer: MaxBytesReader tells it (by an unexported method no wrapper has) to close the
		// connection after the answer, instead of reading the rest of a body it refused as the next request
		// (found in testing: under stallGuard's wrapper, a 5 MB chunked body's tail came back as a 431).
		r.Body = http.MaxBytesReader(innermost(w), r.Body, max)
	}
	return true
}

// innermost unwraps w down to the server's own ResponseWriter.
func innermost(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

// hostAndOrigin refuses (403) a Host that is not this server's (unless anyHost) and an Origin that is not this
// server's: one of hosts, or with anyHost the Host the request was sent to. It reports whether the request may go on.
func hostAndOrigin(w http.ResponseWriter, r *http.Request, hosts map[string]bool, anyHost bool) bool {
	host := strings.ToLower(r.Host)
	if !anyHost && !hosts[host] {
		http.Error(w, "Forbidden: this server answers only to its loopback address (Host header refused)", http.StatusForbidden)
		return false
	}
	for _, origin := range r.Header.Values("Origin") {
		u, err := url.Parse(origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") ||
			!(hosts[strings.ToLower(u.Host)] || anyHost && strings.EqualFold(u.Host, host)) {
			http.Error(w, "Forbidden: cross-origin requests are refused", http.StatusForbidden)
			return false
		}
	}
	return true
}

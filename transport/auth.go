// Package transport holds the pieces every network front end of Strata shares, so that a program embedding Strata's
// server, the MCP handler and the review page get the same ones: bearer tokens read from a token file, authentication
// with a limit on failed attempts per address, per-principal rate limits, sessions bound to the principal that
// opened them, the Host/Origin/body guard against web pages, TLS, the HTTP server's timeouts, and the stdio framer.
// It decides who is calling; what they may do is package gate's.
package transport

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/strata-db/strata/gate"
)

// This file holds the HTTP server's principals (docs/security.md T8, T18): the token file, bearer authentication, the
// limit on failed attempts, the per-principal rate limits, and the binding of each session to the principal that
// opened it.

const (
	// minTokenLen is the shortest token accepted (32 characters of a random token are 160+ bits).
	minTokenLen = 32
	// maxAuthHeader bounds the Authorization header; a longer one is refused without being compared.
	maxAuthHeader = 1024
	// failureBurst failed attempts in a row from one address are let through; then failureRate per second.
	failureBurst = 10
	failureRate  = 1.0
	// maxTrackedAddrs bounds the addresses whose failures are remembered.
	maxTrackedAddrs = 1 << 16
)

// Decisions passed to OnRefused.
const (
	RefusedUnauthenticated = "unauthenticated"
	RefusedRateLimited     = "rate_limited"
)

// Token is one line of a token file: a principal and the SHA-256 of its token (the token itself is not kept).
type Token struct {
	Principal string
	digest    [sha256.Size]byte
}

// NewToken is the entry of a principal's token (tests and embedding programs make them without a file).
func NewToken(principal, token string) Token {
	return Token{Principal: principal, digest: sha256.Sum256([]byte(token))}
}

// LoadTokens reads a token file: each line that is not blank and does not start with # is `PRINCIPAL TOKEN`. The
// file must be readable by its owner only (on Unix; on Windows its ACL is not checked). Errors name the line, never the token.
func LoadTokens(path string) ([]Token, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	// Windows has no mode bits (Go reports 0666 for every writable file); access there is by ACL, which Strata does
	// not inspect: the README says so.
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("readable or writable by others (mode %04o): its tokens grant access to the databases; run chmod 600 %s", fi.Mode().Perm(), path)
	}
	var entries []Token
	principals := map[string]int{}
	digests := map[[sha256.Size]byte]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("line %d: want PRINCIPAL TOKEN, separated by spaces (found %d fields)", n, len(fields))
		}
		principal, token := fields[0], fields[1]
		if err := gate.ValidPrincipal(principal); err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		if len(token) < minTokenLen || len(token) > maxAuthHeader-len("Bearer ") {
			return nil, fmt.Errorf("line %d: the token of %s has %d characters; use %d to %d (for example: openssl rand -hex 32)", n, principal, len(token), minTokenLen, maxAuthHeader-len("Bearer "))
		}
		for _, c := range []byte(token) {
			if c < 0x21 || c > 0x7e {
				return nil, fmt.Errorf("line %d: the token of %s has a character that is not printable ASCII", n, principal)
			}
		}
		if prev, ok := principals[principal]; ok {
			return nil, fmt.Errorf("line %d: principal %s already has a token (line %d); give each principal one token", n, principal, prev)
		}
		d := sha256.Sum256([]byte(token))
		if prev, ok := digests[d]; ok {
			return nil, fmt.Errorf("line %d: the same token as line %d; each principal needs its own token", n, prev)
		}
		principals[principal], digests[d] = n, n
		entries = append(entries, Token{Principal: principal, digest: d})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("no tokens (each line is PRINCIPAL TOKEN)")
	}
	return entries, nil
}

// principalKey carries the authenticated principal in a request's context.
type principalKey struct{}

// PrincipalFrom is the principal Auth authenticated for a request ("" when the request did not come through it).
func PrincipalFrom(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}

// WithPrincipal is ctx carrying a principal, as Auth's handler passes it on.
func WithPrincipal(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, principalKey{}, principal)
}

// Default caps of Auth.
const (
	// DefaultMaxSessions caps the sessions open at once, of all principals.
	DefaultMaxSessions = 1024
	// DefaultMaxSessionsPerPrincipal caps the sessions one principal has open at once.
	DefaultMaxSessionsPerPrincipal = 64
	// MaxBatch caps the messages of one JSON-RPC batch (protocol 2025-03-26): a 4 MiB body holds ~20,000 calls.
	MaxBatch = 64
)

// AuthOptions configures Auth.
type AuthOptions struct {
	// Tokens are the principals' tokens. With none, every request is LocalUser's (a server then listens on loopback
	// only: see CheckListen).
	Tokens    []Token
	LocalUser string
	// RateLimit is the rate limit of a principal (nil: gate.DefaultRateLimit for everyone).
	RateLimit func(principal string) gate.RateLimit
	// SessionIdle is how long a session without a request is remembered (it should match the MCP handler's
	// SessionTimeout). Default 30 minutes.
	SessionIdle time.Duration
	// OnRefused, when set, hears of every refused request: decision is RefusedUnauthenticated or
	// RefusedRateLimited. It is the audit log's hook; principal is empty when none was authenticated.
	OnRefused func(principal, remote, decision string)
	// MaxSessions and MaxSessionsPerPrincipal cap the sessions open at once (0: the defaults); a request that would
	// open one more is refused with 429 (503 when the server is full).
	MaxSessions, MaxSessionsPerPrincipal int
	// Stateless, when set, reports whether a request is answered on its own and never opens a session (MCP
	// 2026-07-28 and later): such a request is not held to the session caps.
	Stateless func(r *http.Request) bool
	// SessionLive, when set, reports whether the MCP handler still holds a session it just gave out: one whose
	// initialize failed is closed at once, and must not keep a place under the caps.
	SessionLive func(principal, sid string) bool
}

// Auth authenticates requests, limits them, and binds each session (Mcp-Session-Id) to the principal that opened
// it. It is safe for concurrent use.
type Auth struct {
	tokens      []Token
	localUser   string
	rateLimit   func(principal string) gate.RateLimit
	sessionIdle time.Duration
	onRefused   func(principal, remote, decision string)
	maxSessions int
	maxPer      int
	stateless   func(r *http.Request) bool
	sessionLive func(principal, sid string) bool

	mu       sync.Mutex
	pending  map[string]int           // per principal: requests admitted under the session caps whose session is not recorded yet
	pendingN int                      // their sum
	limits   map[string]*rate.Limiter // per principal
	failures map[string]*failBucket   // failed attempts per remote address
	sessions map[string]*sessionOwner // Mcp-Session-Id -> principal
	swept    time.Time
	now      func() time.Time
}

type sessionOwner struct {
	principal string
	seen      time.Time
	// inflight counts the session's requests still being served: the go-sdk does not time a session out while one
	// runs, so neither does the sweep (found in review: a call longer than the idle timeout lost its session here).
	inflight int
}

// NewAuth returns an authenticator.
func NewAuth(o AuthOptions) *Auth {
	a := &Auth{
		tokens:      o.Tokens,
		localUser:   o.LocalUser,
		rateLimit:   o.RateLimit,
		sessionIdle: o.SessionIdle,
		onRefused:   o.OnRefused,
		maxSessions: o.MaxSessions,
		maxPer:      o.MaxSessionsPerPrincipal,
		stateless:   o.Stateless,
		sessionLive: o.SessionLive,
		pending:     map[string]int{},
		limits:      map[string]*rate.Limiter{},
		failures:    map[string]*failBucket{},
		sessions:    map[string]*sessionOwner{},
		now:         time.Now,
	}
	if a.rateLimit == nil {
		a.rateLimit = func(string) gate.RateLimit { return gate.DefaultRateLimit }
	}
	if a.sessionIdle <= 0 {
		a.sessionIdle = 30 * time.Minute
	}
	if a.maxSessions <= 0 {
		a.maxSessions = DefaultMaxSessions
	}
	if a.maxPer <= 0 {
		a.maxPer = DefaultMaxSessionsPerPrincipal
	}
	return a
}

func (g *Auth) refused(principal string, r *http.Request, decision string) {
	if g.onRefused != nil {
		g.onRefused(principal, remoteHost(r), decision)
	}
}

// remoteHost is the address of the client, without its port.
func remoteHost(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// credentialParams are query parameters that carry credentials by convention. A token in a URL ends up in logs,
// histories and Referer headers: such a request is refused whatever it carries.
var credentialParams = []string{"access_token", "token", "bearer", "bearer_token", "auth", "authorization", "api_key", "apikey", "key"}

// Handler wraps next (the MCP handler, the review page) with authentication, session binding and rate limits. The
// principal reaches next in the request's context (PrincipalFrom).
func (g *Auth) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		for k := range q {
			for _, c := range credentialParams {
				if strings.EqualFold(k, c) {
					g.unauthorized(w, r, "", "invalid_request", fmt.Sprintf("credentials in the URL (query parameter %q) are refused: they end up in logs and histories; send the token in an Authorization: Bearer header", k))
					return
				}
			}
		}
		principal := g.localUser
		if len(g.tokens) > 0 {
			// Every attempt takes a token from its address's bucket of failures, and a success gives it back:
			// concurrent guesses cannot slip past the limit.
			addr := remoteHost(r)
			if d := g.attempt(addr); d > 0 {
				g.refused("", r, RefusedRateLimited)
				tooMany(w, d, "too many failed authentication attempts from this address")
				return
			}
			var ok bool
			if principal, ok = g.authenticate(w, r); !ok {
				return
			}
			g.succeeded(addr)
		}
		sid := r.Header.Values("Mcp-Session-Id")
		if len(sid) > 1 {
			http.Error(w, "Bad Request: more than one Mcp-Session-Id header", http.StatusBadRequest)
			return
		}
		stateless := g.stateless != nil && g.stateless(r)
		if stateless {
			// A request of a sessionless revision is answered on its own: a session id it carries means nothing
			// to it, and its answer (a JSON-RPC 404 for an unknown method) must not end that session here (found
			// in review: it did, and the live session's client got 404, and the caps stopped counting it).
			sid = nil
		}
		if len(sid) == 1 {
			if !g.ownsSession(principal, sid[0]) {
				http.Error(w, "session not found", http.StatusNotFound) // the go-sdk's own answer for an unknown session
				return
			}
			defer g.endRequest(sid[0])
		}
		var body []byte
		if r.Method == http.MethodPost {
			var err error
			if body, err = readBody(r); err != nil {
				var mbe *http.MaxBytesError
				if errors.As(err, &mbe) {
					http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
				} else {
					http.Error(w, "failed to read the body", http.StatusBadRequest)
				}
				return
			}
		}
		if d := duplicateMember(body); d != "" {
			http.Error(w, "Bad Request: "+duplicateError(d), http.StatusBadRequest)
			return
		}
		ctx := WithPrincipal(r.Context(), principal)
		if len(sid) == 0 && r.Method == http.MethodPost && !stateless {
			res, ok := g.admitSession(w, r, principal)
			if !ok {
				return
			}
			defer res.release()
			ctx = context.WithValue(ctx, reservationKey{}, res)
		}
		r = r.WithContext(ctx)
		if r.Method == http.MethodPost && isBatch(body) {
			// Every call in a batch counts against the limit, not the one POST that carries them.
			g.batch(w, r, principal, body, next, sid)
			return
		}
		if r.Method == http.MethodPost || r.Method == http.MethodGet {
			// A GET opens an event stream: it counts as a call too.
			now := g.now()
			res := g.limiter(principal).ReserveN(now, 1)
			if d := res.DelayFrom(now); !res.OK() || d > 0 {
				res.CancelAt(now)
				g.refused(principal, r, RefusedRateLimited)
				tooMany(w, d, "rate limit of principal "+principal+" exceeded")
				return
			}
		}
		g.serve(w, r, principal, sid, next)
	})
}

// authenticate checks the Authorization header. It answers 401 itself when the request is refused.
func (g *Auth) authenticate(w http.ResponseWriter, r *http.Request) (string, bool) {
	values := r.Header.Values("Authorization")
	switch {
	case len(values) == 0:
		g.unauthorized(w, r, "", "", "Unauthorized: send Authorization: Bearer TOKEN")
		return "", false
	case len(values) > 1:
		g.unauthorized(w, r, "", "invalid_request", "Unauthorized: more than one Authorization header")
		return "", false
	case len(values[0]) > maxAuthHeader:
		g.unauthorized(w, r, "", "invalid_token", "Unauthorized: the Authorization header is too long")
		return "", false
	}
	scheme, token, _ := strings.Cut(values[0], " ")
	if !strings.EqualFold(scheme, "Bearer") {
		g.unauthorized(w, r, "", "invalid_request", "Unauthorized: only Bearer tokens are accepted")
		return "", false
	}
	token = strings.TrimLeft(token, " ")
	d := sha256.Sum256([]byte(token))
	// Compare with every token, whatever matches: the time taken says nothing about which one did, or how close.
	match := -1
	for i := range g.tokens {
		eq := subtle.ConstantTimeCompare(d[:], g.tokens[i].digest[:])
		match = subtle.ConstantTimeSelect(eq, i, match)
	}
	if match < 0 || token == "" {
		g.unauthorized(w, r, "", "invalid_token", "Unauthorized: the token is not valid")
		return "", false
	}
	return g.tokens[match].Principal, true
}

// unauthorized answers 401 with the challenge of RFC 6750. errCode is "" when no credentials came.
func (g *Auth) unauthorized(w http.ResponseWriter, r *http.Request, principal, errCode, msg string) {
	g.refused(principal, r, RefusedUnauthenticated)
	challenge := `Bearer realm="strata"`
	if errCode != "" {
		challenge += `, error="` + errCode + `"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	http.Error(w, msg, http.StatusUnauthorized)
}

// tooMany answers 429 with Retry-After in whole seconds, rounded up.
func tooMany(w http.ResponseWriter, d time.Duration, msg string) {
	secs := int64(math.Ceil(d.Seconds()))
	if secs < 1 || d == rate.InfDuration {
		secs = 1
	}
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	http.Error(w, fmt.Sprintf("Too Many Requests: %s; retry after %d s", msg, secs), http.StatusTooManyRequests)
}

// limiter is the rate limiter of a principal.
func (g *Auth) limiter(principal string) *rate.Limiter {
	g.mu.Lock()
	defer g.mu.Unlock()
	lim := g.limits[principal]
	if lim == nil {
		rl := g.rateLimit(principal)
		lim = rate.NewLimiter(rate.Limit(rl.PerSecond), rl.Burst)
		g.limits[principal] = lim
	}
	return lim
}

// failBucket counts the failed authentication attempts of one address: a token bucket of failureBurst tokens,
// refilled at failureRate per second. An attempt takes a token; a success gives it back.
type failBucket struct {
	tokens float64
	last   time.Time
}

func (b *failBucket) refill(now time.Time) {
	b.tokens = min(failureBurst, b.tokens+now.Sub(b.last).Seconds()*failureRate)
	b.last = now
}

// attempt takes a token from the address's bucket. It returns how long to wait when the bucket is empty (and then
// takes nothing).
func (g *Auth) attempt(addr string) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	b := g.failures[addr]
	if b == nil {
		if len(g.failures) >= maxTrackedAddrs {
			// Forget the addresses that have recovered; if that is not enough, start over.
			for a, fb := range g.failures {
				if fb.refill(now); fb.tokens >= failureBurst {
					delete(g.failures, a)
				}
			}
			if len(g.failures) >= maxTrackedAddrs {
				clear(g.failures)
			}
		}
		b = &failBucket{tokens: failureBurst, last: now}
		g.failures[addr] = b
	}
	b.refill(now)
	if b.tokens < 1 {
		return time.Duration((1 - b.tokens) / failureRate * float64(time.Second))
	}
	b.tokens--
	return 0
}

// succeeded gives back the token of an attempt that authenticated.
func (g *Auth) succeeded(addr string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if b := g.failures[addr]; b != nil {
		b.tokens = min(failureBurst, b.tokens+1)
	}
}

// ownsSession reports whether a session was opened by the principal. A session of another principal is treated
// exactly like one that does not exist.
func (g *Auth) ownsSession(principal, sid string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	o := g.sessions[sid]
	if o == nil || o.principal != principal {
		return false
	}
	o.seen = g.now()
	o.inflight++
	return true
}

// endRequest is the end of a request ownsSession let through: the session's idle time starts again from now.
func (g *Auth) endRequest(sid string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if o := g.sessions[sid]; o != nil {
		o.inflight--
		o.seen = g.now()
	}
}

// recordSession binds a new session to the principal that opened it; the place res held under the caps becomes
// the session's.
func (g *Auth) recordSession(principal, sid string, res *reservation) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if res != nil {
		res.releaseLocked()
	}
	now := g.now()
	g.sweep(now)
	if _, taken := g.sessions[sid]; !taken {
		g.sessions[sid] = &sessionOwner{principal: principal, seen: now}
	}
}

// sweep forgets sessions idle for longer than the go-sdk keeps them (gone there too), at most once a minute; g.mu
// is held.
func (g *Auth) sweep(now time.Time) {
	if now.Sub(g.swept) <= time.Minute {
		return
	}
	for id, o := range g.sessions {
		if o.inflight == 0 && now.Sub(o.seen) > g.sessionIdle+time.Minute {
			delete(g.sessions, id)
		}
	}
	g.swept = now
}

// Sessions is how many sessions are open now: opened by a principal, not closed, and used within the idle timeout
// (for an operator's metrics).
func (g *Auth) Sessions() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	now, n := g.now(), 0
	for _, o := range g.sessions {
		if o.inflight > 0 || now.Sub(o.seen) <= g.sessionIdle {
			n++
		}
	}
	return n
}

func (g *Auth) forgetSession(sid string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.sessions, sid)
}

// sessionRecorder watches the answer to a request: the session id the go-sdk gives a new session is bound to the
// principal before the answer reaches the client; a session that ended (DELETE, or unknown to the go-sdk) is
// forgotten.
type sessionRecorder struct {
	http.ResponseWriter
	g         *Auth
	principal string
	sid       string // the request's session, if any
	method    string
	res       *reservation // the request's place under the session caps, if it was admitted under them
	recorded  string       // the session this answer gave out, if any
	wrote     bool
}

func (s *sessionRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.wrote = true
		if s.sid == "" {
			if id := s.Header().Get("Mcp-Session-Id"); id != "" && code < 300 {
				s.recorded = id
				s.g.recordSession(s.principal, id, s.res)
			}
		} else if code == http.StatusNotFound || (s.method == http.MethodDelete && code < 300) {
			s.g.forgetSession(s.sid)
		}
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *sessionRecorder) Write(p []byte) (int, error) {
	if !s.wrote {
		s.WriteHeader(http.StatusOK)
	}
	return s.ResponseWriter.Write(p)
}

func (s *sessionRecorder) Flush() {
	if !s.wrote {
		s.WriteHeader(http.StatusOK)
	}
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (read deadlines).
func (s *sessionRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// admitSession refuses a request that would open a session over the caps (a POST without a session: an
// initialize, or a stateless call). It answers the refusal itself.
//
// An admitted request holds a place under the caps (a reservation, released when it ends) until the session it
// opens is recorded: initializes sent at once cannot all pass the caps before any of their sessions is recorded.
func (g *Auth) admitSession(w http.ResponseWriter, r *http.Request, principal string) (*reservation, bool) {
	g.mu.Lock()
	g.sweep(g.now())
	total, mine := len(g.sessions)+g.pendingN, g.pending[principal]
	for _, o := range g.sessions {
		if o.principal == principal {
			mine++
		}
	}
	ok := mine < g.maxPer && total < g.maxSessions
	if ok {
		g.pending[principal]++
		g.pendingN++
	}
	g.mu.Unlock()
	switch {
	case mine >= g.maxPer:
		// Over a limit, as a rate limit is: reported (audited and counted) as one (a review's suspicion: these
		// refusals left no trace).
		g.refused(principal, r, RefusedRateLimited)
		w.Header().Set("Retry-After", "60")
		http.Error(w, fmt.Sprintf("Too Many Requests: principal %s has %d sessions open, the most it may; close one (DELETE) or reuse it", principal, mine), http.StatusTooManyRequests)
		return nil, false
	case total >= g.maxSessions:
		g.refused(principal, r, RefusedRateLimited)
		w.Header().Set("Retry-After", "60")
		http.Error(w, "Service Unavailable: the server has as many sessions open as it takes; retry later", http.StatusServiceUnavailable)
		return nil, false
	}
	return &reservation{g: g, principal: principal}, true
}

// reservationKey is the context key of a request's reservation.
type reservationKey struct{}

// reservation is a place under the session caps that an admitted request holds until its session is recorded or
// it ends.
type reservation struct {
	g         *Auth
	principal string
	done      bool // guarded by g.mu
}

func (res *reservation) release() {
	res.g.mu.Lock()
	defer res.g.mu.Unlock()
	res.releaseLocked()
}

// releaseLocked gives the place back once; g.mu is held.
func (res *reservation) releaseLocked() {
	if res.done {
		return
	}
	res.done = true
	g := res.g
	g.pendingN--
	if g.pending[res.principal]--; g.pending[res.principal] <= 0 {
		delete(g.pending, res.principal)
	}
}

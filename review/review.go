// Package review is Strata's review page (docs/design.md §6, docs/security.md T25): the pages `strata serve`
// offers people at /ui/ on its own listener, to see what agents did and to approve or reject their plans. It shows
// the databases, their branches, snapshots and history, one revision, a structural diff between any two states,
// the queue of plans with each plan's preview, and the audit log.
//
// Every request is a call through package gate, as the signed-in principal, with its scopes, and audited like an
// MCP call (tool "ui PAGE"): the page makes no decision of its own. A principal signs in with its bearer token
// (any principal may read through its scopes; only one the configuration marks "review": true sees Approve and
// Reject, and the gate refuses the others' decisions); without tokens, the operator signs in once with an address
// printed on the server's standard error.
//
// The pages are rendered on the server with html/template from embedded templates, a stylesheet and a little
// script (live updates of the plan queue, expand and collapse); nothing is fetched from elsewhere, and everything
// works without the script. Every answer forbids framing and carries a strict Content-Security-Policy; every POST
// carries the session's CSRF token and an Origin of this server (transport.PageGuard refuses the rest before
// anything is parsed); text an agent wrote is escaped, and invisible, bidirectional and control characters in it
// are shown as visible marks.
package review

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strata-db/strata/audit"
	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/transport"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configures the review page.
type Options struct {
	// Gate is the one gate of the process: every page goes through it.
	Gate *gate.Gate
	// Principal is the principal of a name as the configuration makes it (gate.Settings.For).
	Principal func(name string) gate.Principal
	// Auth checks the tokens typed into the sign-in form and holds the per-principal rate limits that MCP calls
	// share. Without tokens (Auth.HasTokens false) only the one-time sign-in address signs in, as Operator.
	Auth *transport.Auth
	// Operator is who signs in with the one-time address (the OS user running the server): the operator, as at the
	// command line.
	Operator string
	// Base is the server's own address, "http://127.0.0.1:7411": the sign-in address starts with it.
	Base string
	// Announce, without tokens, is told each new one-time sign-in address after the first (SignInAddress): one is
	// made each time the session the last one opened has ended. strata serve prints it on standard error.
	Announce func(address string)
	// TLS says the page is served over TLS: the session cookie is then Secure.
	TLS bool
	// SessionIdle ends a session after that long without a request (default 1 hour); SessionMax after that long in
	// all (default 12 hours).
	SessionIdle, SessionMax time.Duration
	// PollInterval is how often the live plan queue looks for new plans (default 2 s).
	PollInterval time.Duration
	// Logger receives the page's own errors. nil discards them.
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Handler serves the review page under /ui/. It is safe for concurrent use.
type Handler struct {
	o     Options
	mux   *http.ServeMux
	pages *pageSet

	mu       sync.Mutex
	sessions map[string]*session // by the SHA-256 of the cookie's value
	code     string              // the one-time sign-in code (no tokens); "" when none is open
	codeUsed string              // the session the last code opened, while it lasts
	streams  int                 // event streams open
}

// Limits of the page.
const (
	maxSessions             = 1024
	maxSessionsPerPrincipal = 16
	maxStreams              = 256
	// pageOps is how many diff operations a page shows; countOps how many a diff computes at least, for its counts
	// (past them the counts say "at least").
	pageOps  = 200
	countOps = 5000
	// maxReason bounds a rejection's reason.
	maxReason = 2000
)

// New returns the review page's handler; without tokens, it opens the first one-time sign-in address (SignInAddress).
func New(o Options) (*Handler, error) {
	if o.Gate == nil || o.Principal == nil || o.Auth == nil {
		return nil, errors.New("review.New: Gate, Principal and Auth are required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = time.Hour
	}
	if o.SessionMax <= 0 {
		o.SessionMax = 12 * time.Hour
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 2 * time.Second
	}
	if !o.Auth.HasTokens() && o.Operator == "" {
		return nil, errors.New("review.New: without tokens, Operator names who signs in with the one-time address")
	}
	ps, err := parsePages()
	if err != nil {
		return nil, err
	}
	h := &Handler{o: o, pages: ps, sessions: map[string]*session{}}
	h.routes()
	if !o.Auth.HasTokens() {
		h.mu.Lock()
		h.newCodeLocked()
		h.mu.Unlock()
	}
	return h, nil
}

// Address is where a person opens the page: o.Base + "/ui/".
func (h *Handler) Address() string { return h.o.Base + "/ui/" }

// SignInAddress is, without tokens, the one-time sign-in address open now ("" when its session is open, or with
// tokens). The caller prints the first one at start; Announce is told the later ones.
func (h *Handler) SignInAddress() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.code == "" {
		return ""
	}
	return h.codeAddress()
}

func (h *Handler) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	files := http.StripPrefix("/ui/static/", http.FileServerFS(static))
	m.Handle("GET /ui/static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	}))
	m.HandleFunc("GET /ui", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ui/", http.StatusSeeOther) })
	m.HandleFunc("GET /ui/login", h.loginPage)
	m.HandleFunc("POST /ui/login", h.signIn)
	m.Handle("POST /ui/logout", h.page("sign_out", h.signOut))
	m.Handle("GET /ui/{$}", h.page("databases", h.databases))
	m.Handle("GET /ui/db/{db}", h.page("database", h.database))
	m.Handle("GET /ui/db/{db}/history", h.page("history", h.history))
	m.Handle("GET /ui/db/{db}/rev/{n}", h.page("revision", h.revisionPage))
	m.Handle("GET /ui/db/{db}/diff", h.page("diff", h.diffPage))
	m.Handle("GET /ui/db/{db}/value", h.page("value", h.valuePage))
	m.Handle("GET /ui/plans", h.page("plans", h.plans))
	m.Handle("GET /ui/plans/{db}/{id}", h.page("plan", h.plan))
	m.Handle("POST /ui/plans/{db}/{id}/approve", h.page("approve", h.decide(true)))
	m.Handle("POST /ui/plans/{db}/{id}/reject", h.page("reject", h.decide(false)))
	m.Handle("GET /ui/audit", h.page("audit", h.auditPage))
	m.Handle("GET /ui/events", h.page("events", h.events))
	m.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		h.plainError(w, r, http.StatusNotFound, "There is no such page.")
	})
	h.mux = m
}

// ServeHTTP serves a request under /ui/. Put it behind transport.PageGuard.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	hd.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
	if !strings.HasPrefix(r.URL.Path, "/ui/static/") {
		hd.Set("Cache-Control", "no-store")
	}
	h.mux.ServeHTTP(w, r)
}

// req is one page request of a signed-in principal, inside its gate call.
type req struct {
	h    *Handler
	w    http.ResponseWriter
	r    *http.Request
	s    *session
	ctx  context.Context
	call *gate.Call
	a    *gate.Actor
}

// page wraps a page: it finds the session (or sends the browser to sign in, and reports the refusal to the audit
// hook, which aggregates them as it does MCP's), takes one call from the principal's
// rate limit, checks the CSRF token and Origin of a POST, and makes the request one gate call, audited as
// "ui NAME". A page that returns an error gets an error page with the status of its code.
func (h *Handler) page(name string, fn func(q *req) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := h.lookup(r, name != "events")
		if s == nil {
			h.o.Auth.SignedOut(r)
			if r.Method == http.MethodGet && name != "events" {
				http.Redirect(w, r, "/ui/login?"+url.Values{"next": {r.URL.RequestURI()}}.Encode(), http.StatusSeeOther)
			} else {
				h.plainError(w, r, http.StatusUnauthorized, "You are not signed in (or your session has ended): sign in again.")
			}
			return
		}
		if d := h.o.Auth.Limit(r, s.p.Name); d > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((d+time.Second-1)/time.Second)))
			h.plainError(w, r, http.StatusTooManyRequests, "Too many requests: wait a moment, then reload the page.")
			return
		}
		args := r.URL.RequestURI()
		if r.Method == http.MethodPost {
			if err := r.ParseForm(); err != nil {
				h.plainError(w, r, http.StatusBadRequest, "The form could not be read.")
				return
			}
			form := r.PostForm
			args += "?" + url.Values{"reason": form["reason"]}.Encode()
		}
		ctx, call := s.a.Call(r.Context(), gate.CallInfo{Transport: audit.TransportHTTP, Client: "review page",
			Tool: "ui " + name, Args: []byte(args), Database: r.PathValue("db"), PlanID: r.PathValue("id")})
		q := &req{h: h, w: w, r: r, s: s, ctx: ctx, call: call, a: s.a}
		var err error
		if r.Method == http.MethodPost && !h.sameOrigin(r) {
			err = errForbidden("this form did not come from this server's own page")
		} else if r.Method == http.MethodPost && !s.checkCSRF(r.PostForm.Get("csrf")) {
			err = errForbidden("this form carries no valid CSRF token: reload the page and submit it again")
		} else {
			err = fn(q)
		}
		if err != nil {
			q.fail(err)
		}
		outcome := gate.OutcomeOf(err)
		call.End(outcome)
	})
}

// sameOrigin reports whether a POST's Origin is this server as the browser reached it.
func (h *Handler) sameOrigin(r *http.Request) bool {
	origins := r.Header.Values("Origin")
	if len(origins) != 1 {
		return false
	}
	u, err := url.Parse(origins[0])
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && strings.EqualFold(u.Host, r.Host) && u.Path == ""
}

// errForbidden is a refusal of the page itself (CSRF, Origin): DENIED, 403.
func errForbidden(msg string) error {
	return gate.Errorf(gate.CodeDenied, "refused: %s", msg)
}

// status is the HTTP status of an error code.
func status(code string) int {
	switch code {
	case gate.CodeNotFound:
		return http.StatusNotFound
	case gate.CodeDenied:
		return http.StatusForbidden
	case gate.CodeInvalidArgument, gate.CodeInvalidPath:
		return http.StatusBadRequest
	case gate.CodeConflict, gate.CodePlanChanged, gate.CodePlanExpired:
		return http.StatusConflict
	case gate.CodeLimitExceeded:
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusInternalServerError
}

// fail answers a page's error.
func (q *req) fail(err error) {
	code := gate.Code(err)
	st := status(code)
	if st == http.StatusInternalServerError {
		q.h.o.Logger.Error("review page", "path", q.r.URL.Path, "err", err)
	}
	msg := err.Error()
	var ge *gate.Error
	hint := ""
	if errors.As(err, &ge) {
		hint = ge.Hint
		if ge.Detail != "" {
			msg += ": " + ge.Detail // the template escapes it as it does every stored text
		}
	}
	if gate.FileFault(err) {
		// The library's message names the server's files: the page says only what its reader can act on, and the
		// log has the rest.
		if st != http.StatusInternalServerError {
			q.h.o.Logger.Error("review page", "path", q.r.URL.Path, "err", err)
		}
		msg, hint = gate.FileFaultMessage, gate.FileFaultHint
	}
	q.render(st, "error", "Error", map[string]any{"Code": code, "Message": msg, "Hint": hint})
}

// render writes a page with the layout.
func (q *req) render(st int, tmpl, title string, data map[string]any) {
	data["Title"] = title
	data["Me"] = q.s.p.Name
	data["Reviewer"] = q.s.reviewer()
	data["Operator"] = q.s.operator
	data["CSRF"] = q.s.csrf
	data["Page"] = tmpl
	if _, ok := data["Pending"]; !ok && q.s.reviewer() {
		n, _ := q.h.pendingCount(q.ctx, q.a)
		data["Pending"] = n
	}
	q.h.write(q.w, st, tmpl, data)
}

func (h *Handler) write(w http.ResponseWriter, st int, tmpl string, data map[string]any) {
	var buf bytes.Buffer
	if err := h.pages.execute(&buf, tmpl, data); err != nil {
		h.o.Logger.Error("review page: template", "template", tmpl, "err", err)
		http.Error(w, "Internal Server Error: the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(st)
	w.Write(buf.Bytes())
}

// plainError answers outside a session (no principal, no layout links).
func (h *Handler) plainError(w http.ResponseWriter, r *http.Request, st int, msg string) {
	h.write(w, st, "error", map[string]any{"Title": http.StatusText(st), "Message": msg, "Code": strconv.Itoa(st)})
}

// redirect sends the browser on after a POST.
func (q *req) redirect(to string) {
	http.Redirect(q.w, q.r, to, http.StatusSeeOther)
}

// errBadInput is an invalid argument of a page.
func errBadInput(format string, args ...any) error {
	return gate.Errorf(gate.CodeInvalidArgument, format, args...)
}

func pathEsc(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(p))
	}
	return b.String()
}

func dbURL(db string, rest ...string) string {
	return "/ui/db" + pathEsc(append([]string{db}, rest...)...)
}

func planURL(db, id string) string { return "/ui/plans" + pathEsc(db, id) }

func revURL(db string, n uint64) string { return dbURL(db, "rev", strconv.FormatUint(n, 10)) }

func withQuery(path string, v url.Values) string {
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}

var _ = fmt.Sprintf

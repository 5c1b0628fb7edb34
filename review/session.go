package review

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/strata-db/strata/audit"
	"github.com/strata-db/strata/gate"
)

// Sessions (docs/security.md T25). Signing in makes a session: a random 256-bit id in a cookie that is HttpOnly,
// SameSite=Strict, Secure under TLS, scoped to /ui/, and expires (after SessionIdle without a request, and
// SessionMax in all); the server keeps only the id's SHA-256. Each session has its own CSRF token, which every form
// carries. Without tokens there is one way in: a one-time code, announced at start, that makes its user the
// operator; while the session it opened lasts no other code exists, and when it ends a new one is announced.

// cookieName is the session cookie.
const cookieName = "strata_review"

type session struct {
	key      string // SHA-256 of the cookie value, hex
	p        gate.Principal
	a        *gate.Actor
	csrf     string
	created  time.Time
	seen     time.Time
	operator bool // signed in with the one-time address
}

func (s *session) reviewer() bool { return s.p.Review || s.p.Operator }

func (s *session) checkCSRF(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.csrf)) == 1
}

func random(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func digest(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}

// session is the live session of a request, or nil; the request counts as activity (the session's idle time
// starts again).
func (h *Handler) session(r *http.Request) *session { return h.lookup(r, true) }

// lookup is the live session of a request, or nil; touch says whether the request renews its idle time (the
// page's own event stream, which polls in the background, does not: a tab left open still idles out).
func (h *Handler) lookup(r *http.Request, touch bool) *session {
	c, err := r.Cookie(cookieName)
	if err != nil || c.Value == "" || len(c.Value) > 100 {
		return nil
	}
	key := digest(c.Value)
	now := h.o.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[key]
	if s == nil {
		return nil
	}
	if now.Sub(s.seen) > h.o.SessionIdle || now.Sub(s.created) > h.o.SessionMax {
		h.endLocked(s)
		return nil
	}
	if touch {
		s.seen = now
	}
	return s
}

// endLocked forgets a session; h.mu is held. The end of the session the one-time code opened opens a new code.
func (h *Handler) endLocked(s *session) {
	delete(h.sessions, s.key)
	if s.operator && h.codeUsed == s.key {
		h.codeUsed = ""
	}
}

// sweepLocked forgets expired sessions; h.mu is held.
func (h *Handler) sweepLocked(now time.Time) {
	for _, s := range h.sessions {
		if now.Sub(s.seen) > h.o.SessionIdle || now.Sub(s.created) > h.o.SessionMax {
			h.endLocked(s)
		}
	}
}

// start opens a session for a principal and sets its cookie.
func (h *Handler) start(w http.ResponseWriter, p gate.Principal, operator bool) (*session, error) {
	a, err := h.o.Gate.As(p)
	if err != nil {
		return nil, err
	}
	value := random(32)
	now := h.o.Now()
	s := &session{key: digest(value), p: a.Principal(), a: a, csrf: random(32), created: now, seen: now, operator: operator}
	h.mu.Lock()
	h.sweepLocked(now)
	var oldest *session
	mine := 0
	for _, o := range h.sessions {
		if o.p.Name == s.p.Name {
			mine++
			if oldest == nil || o.seen.Before(oldest.seen) {
				oldest = o
			}
		}
	}
	if mine >= maxSessionsPerPrincipal && oldest != nil {
		h.endLocked(oldest)
	}
	if len(h.sessions) >= maxSessions {
		for _, o := range h.sessions {
			if oldest == nil || o.seen.Before(oldest.seen) {
				oldest = o
			}
		}
		h.endLocked(oldest)
	}
	h.sessions[s.key] = s
	if operator {
		h.codeUsed = s.key
	}
	h.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: value, Path: "/ui/", MaxAge: int(h.o.SessionMax / time.Second),
		HttpOnly: true, Secure: h.secure(), SameSite: http.SameSiteStrictMode})
	return s, nil
}

func (h *Handler) secure() bool { return h.o.TLS }

func (h *Handler) clearCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/ui/", MaxAge: -1, HttpOnly: true,
		Secure: h.secure(), SameSite: http.SameSiteStrictMode})
}

// newCodeLocked draws a one-time sign-in code and returns its address; h.mu is held.
func (h *Handler) newCodeLocked() string {
	h.code = random(24)
	return h.codeAddress()
}

func (h *Handler) codeAddress() string {
	return h.o.Base + "/ui/login?" + url.Values{"code": {h.code}}.Encode()
}

// nextPath is where to go after signing in: a path of the page, never another site.
func nextPath(s string) string {
	if !strings.HasPrefix(s, "/ui/") || strings.HasPrefix(s, "//") || strings.ContainsAny(s, "\\\r\n") {
		return "/ui/"
	}
	return s
}

// loginPage shows the sign-in form (with tokens), or signs the operator in with the one-time code (without).
func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	next := nextPath(r.URL.Query().Get("next"))
	if h.o.Auth.HasTokens() {
		if s := h.session(r); s != nil && r.URL.Query().Get("next") != "" {
			http.Redirect(w, r, next, http.StatusSeeOther)
			return
		}
		h.write(w, http.StatusOK, "login", map[string]any{"Title": "Sign in", "Tokens": true, "Next": next})
		return
	}
	code := r.URL.Query().Get("code")
	if code == "" {
		h.mu.Lock()
		h.sweepLocked(h.o.Now())
		var announce string
		if h.codeUsed == "" && h.code == "" {
			announce = h.newCodeLocked()
		}
		h.mu.Unlock()
		if announce != "" && h.o.Announce != nil {
			h.o.Announce(announce)
		}
		h.write(w, http.StatusOK, "login", map[string]any{"Title": "Sign in", "Tokens": false, "Next": next})
		return
	}
	h.mu.Lock()
	ok := h.code != "" && subtle.ConstantTimeCompare([]byte(code), []byte(h.code)) == 1
	if ok {
		h.code = ""
	}
	h.mu.Unlock()
	if !ok {
		// Counted as a failed attempt and audited as one (a code has 144 random bits: guessing is hopeless anyway).
		h.o.Auth.SignIn(r, "")
		h.write(w, http.StatusForbidden, "login", map[string]any{"Title": "Sign in", "Tokens": false, "Next": next,
			"Failed": "This sign-in address is not valid: each one works once. strata serve prints a new one on its standard error when the session the last one opened has ended."})
		return
	}
	s, err := h.start(w, gate.Operator(h.o.Operator), true)
	if err != nil {
		h.plainError(w, r, http.StatusInternalServerError, "The session could not be opened.")
		return
	}
	h.audited(r, s, "sign_in")
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

// signIn checks the token typed into the form.
func (h *Handler) signIn(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		h.plainError(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	next := nextPath(r.PostForm.Get("next"))
	if !h.o.Auth.HasTokens() {
		h.write(w, http.StatusForbidden, "login", map[string]any{"Title": "Sign in", "Tokens": false, "Next": next,
			"Failed": "This server has no tokens: only the sign-in address it printed signs in."})
		return
	}
	if !h.sameOrigin(r) {
		h.plainError(w, r, http.StatusForbidden, "This form did not come from this server's own page.")
		return
	}
	name, wait, ok := h.o.Auth.SignIn(r, r.PostForm.Get("token"))
	if wait > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
		h.write(w, http.StatusTooManyRequests, "login", map[string]any{"Title": "Sign in", "Tokens": true, "Next": next,
			"Failed": "Too many failed attempts from this address: wait a little, then try again."})
		return
	}
	if !ok {
		h.write(w, http.StatusUnauthorized, "login", map[string]any{"Title": "Sign in", "Tokens": true, "Next": next,
			"Failed": "That token is not valid."})
		return
	}
	s, err := h.start(w, h.o.Principal(name), false)
	if err != nil {
		h.o.Logger.Error("review page: a principal's settings are not valid", "principal", name, "err", err)
		h.plainError(w, r, http.StatusInternalServerError, "The session could not be opened.")
		return
	}
	h.audited(r, s, "sign_in")
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// audited records a call of a session that is not a page (signing in).
func (h *Handler) audited(r *http.Request, s *session, name string) {
	_, call := s.a.Call(r.Context(), gate.CallInfo{Transport: audit.TransportHTTP, Client: "review page", Tool: "ui " + name,
		Args: []byte(r.URL.Path)})
	call.End(audit.OutcomeOK)
}

// signOut ends the session.
func (h *Handler) signOut(q *req) error {
	h.mu.Lock()
	h.endLocked(q.s)
	var announce string
	if q.s.operator && h.codeUsed == "" && h.code == "" {
		announce = h.newCodeLocked()
	}
	h.mu.Unlock()
	if announce != "" && h.o.Announce != nil {
		h.o.Announce(announce)
	}
	h.clearCookie(q.w)
	q.redirect("/ui/login")
	return nil
}

package transport

import (
	"crypto/sha256"
	"crypto/subtle"
	"mime"
	"net/http"
	"strings"
	"time"
)

// What a web page served next to the MCP endpoint (the review page, docs/security.md T25) shares with it: the same
// tokens, the same limit on failed attempts per address, the same per-principal rate limits, and a guard against
// other web pages that lets a browser's own forms through.

// MaxFormBytes caps the body of a form a page receives.
const MaxFormBytes = 64 << 10

// HasTokens reports whether the authenticator checks tokens (false: every request is the local user's).
func (g *Auth) HasTokens() bool { return len(g.tokens) > 0 }

// SignIn checks a token typed into a sign-in form and returns its principal. A wrong token counts against the
// address's failed attempts, as a wrong bearer token does, and is reported to OnRefused; when the address has
// failed too often, wait is how long it must wait (and the token is not compared).
func (g *Auth) SignIn(r *http.Request, token string) (principal string, wait time.Duration, ok bool) {
	addr := remoteHost(r)
	if d := g.attempt(addr); d > 0 {
		g.refused("", r, RefusedRateLimited)
		return "", d, false
	}
	token = strings.TrimSpace(token)
	if token == "" || len(token) > maxAuthHeader || len(g.tokens) == 0 {
		g.refused("", r, RefusedUnauthenticated)
		return "", 0, false
	}
	d := sha256.Sum256([]byte(token))
	match := -1
	for i := range g.tokens {
		eq := subtle.ConstantTimeCompare(d[:], g.tokens[i].digest[:])
		match = subtle.ConstantTimeSelect(eq, i, match)
	}
	if match < 0 {
		g.refused("", r, RefusedUnauthenticated)
		return "", 0, false
	}
	g.succeeded(addr)
	return g.tokens[match].Principal, 0, true
}

// SignedOut reports to OnRefused a page request refused because it carried no live session (none, an unknown one or
// an expired one), as a bearer request without a valid token is reported.
func (g *Auth) SignedOut(r *http.Request) { g.refused("", r, RefusedUnauthenticated) }

// Limit takes one call of a principal from its rate limit (the one its MCP calls share): 0 when the call may go on,
// else how long to wait (the refusal is reported to OnRefused).
func (g *Auth) Limit(r *http.Request, principal string) time.Duration {
	now := g.now()
	res := g.limiter(principal).ReserveN(now, 1)
	if d := res.DelayFrom(now); !res.OK() || d > 0 {
		res.CancelAt(now)
		g.refused(principal, r, RefusedRateLimited)
		return max(d, time.Second)
	}
	return 0
}

// PageGuard is Guard for pages a person opens in a browser. It refuses, before anything is parsed: a Host that is
// not this server's (unless anyHost), an Origin that is not this server's, a request another site made (a
// cross-site or same-site fetch, image, frame or form), a POST without an Origin or whose body is not a form
// (application/x-www-form-urlencoded), any method but GET, HEAD and POST, and a form larger than MaxFormBytes. A
// link followed from another site (a top-level GET navigation) is let through: the page's session cookie is
// SameSite=Strict, so such a request arrives signed out.
func PageGuard(hosts map[string]bool, anyHost bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAndOrigin(w, r, hosts, anyHost) {
			return
		}
		origins := r.Header.Values("Origin")
		get := r.Method == http.MethodGet || r.Method == http.MethodHead
		if !get && r.Method != http.MethodPost {
			w.Header().Set("Allow", "GET, HEAD, POST")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
			navigation := get && r.Header.Get("Sec-Fetch-Mode") == "navigate" && r.Header.Get("Sec-Fetch-Dest") == "document"
			if !navigation {
				http.Error(w, "Forbidden: cross-site requests are refused", http.StatusForbidden)
				return
			}
		}
		if r.Method == http.MethodPost {
			if len(origins) != 1 {
				http.Error(w, "Forbidden: a form must come from this server's own page (no Origin header)", http.StatusForbidden)
				return
			}
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/x-www-form-urlencoded" {
				http.Error(w, "Forbidden: the body must be a form (application/x-www-form-urlencoded)", http.StatusForbidden)
				return
			}
		}
		if !limitBody(w, r, MaxFormBytes) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

package transport

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/strata-db/strata/gate"
)

// TestPageGuard: what the review page's guard lets through and what it refuses before the page sees it.
func TestPageGuard(t *testing.T) {
	hosts := ListenHosts("127.0.0.1:7411", 7411)
	reached := 0
	h := PageGuard(hosts, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached++ }))
	form := "application/x-www-form-urlencoded"
	cases := []struct {
		name, method, host, ctype string
		headers                   map[string]string
		want                      int
	}{
		{"a page", "GET", "127.0.0.1:7411", "", nil, 200},
		{"a page under localhost", "GET", "localhost:7411", "", nil, 200},
		{"a rebound name", "GET", "evil.example:7411", "", nil, 403},
		{"a link from another site", "GET", "127.0.0.1:7411", "", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}, 200},
		{"a script of another site", "GET", "127.0.0.1:7411", "", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "script"}, 403},
		{"a frame of another site", "GET", "127.0.0.1:7411", "", map[string]string{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"}, 403},
		{"a form of this page", "POST", "127.0.0.1:7411", form, map[string]string{"Origin": "http://127.0.0.1:7411", "Sec-Fetch-Site": "same-origin"}, 200},
		{"a form without Origin", "POST", "127.0.0.1:7411", form, nil, 403},
		{"a form of another origin", "POST", "127.0.0.1:7411", form, map[string]string{"Origin": "http://127.0.0.1:8080"}, 403},
		{"a form of another site, navigating", "POST", "127.0.0.1:7411", form, map[string]string{"Origin": "http://127.0.0.1:7411", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}, 403},
		{"a text/plain POST", "POST", "127.0.0.1:7411", "text/plain", map[string]string{"Origin": "http://127.0.0.1:7411"}, 403},
		{"a multipart POST", "POST", "127.0.0.1:7411", "multipart/form-data; boundary=x", map[string]string{"Origin": "http://127.0.0.1:7411"}, 403},
		{"a PUT", "PUT", "127.0.0.1:7411", form, map[string]string{"Origin": "http://127.0.0.1:7411"}, 405},
	}
	for _, c := range cases {
		reached = 0
		req := httptest.NewRequest(c.method, "http://"+c.host+"/ui/", strings.NewReader("a=b"))
		req.Host = c.host
		if c.ctype != "" {
			req.Header.Set("Content-Type", c.ctype)
		}
		for k, v := range c.headers {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != c.want || (c.want == 200) != (reached == 1) {
			t.Errorf("%s: %d (reached %d), want %d", c.name, w.Code, reached, c.want)
		}
	}
	big := httptest.NewRequest("POST", "http://127.0.0.1:7411/ui/login", strings.NewReader(strings.Repeat("a", MaxFormBytes+1)))
	big.Header.Set("Content-Type", form)
	big.Header.Set("Origin", "http://127.0.0.1:7411")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, big)
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("a big form: %d", w.Code)
	}
}

// TestSignIn: a typed token names its principal; wrong ones count against the address like wrong bearer tokens;
// Limit shares the principal's rate limit.
func TestSignIn(t *testing.T) {
	var heard []string
	g := NewAuth(AuthOptions{Tokens: []Token{NewToken("rita", "rita-0123456789abcdef0123456789abcdef")},
		RateLimit: func(string) gate.RateLimit { return gate.RateLimit{PerSecond: 0.001, Burst: 2} },
		OnRefused: func(p, _, d string) { heard = append(heard, p+"|"+d) }})
	r := httptest.NewRequest("POST", "/ui/login", nil)
	if p, _, ok := g.SignIn(r, " rita-0123456789abcdef0123456789abcdef\n"); !ok || p != "rita" {
		t.Fatalf("the right token: %q %v", p, ok)
	}
	for i := range failureBurst {
		if _, wait, ok := g.SignIn(r, "wrong"); ok || wait != 0 {
			t.Fatalf("wrong token %d: %v %v", i, ok, wait)
		}
	}
	if _, wait, ok := g.SignIn(r, "rita-0123456789abcdef0123456789abcdef"); ok || wait <= 0 {
		t.Errorf("after %d failures the right token goes through at once: %v %v", failureBurst, ok, wait)
	}
	if g.Limit(r, "rita") != 0 || g.Limit(r, "rita") != 0 || g.Limit(r, "rita") == 0 {
		t.Error("the rate limit of burst 2 let a third call through")
	}
	if heard[0] != "|unauthenticated" || heard[len(heard)-1] != "rita|rate_limited" {
		t.Errorf("heard %q", heard)
	}
}

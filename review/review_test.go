package review

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata/audit"
	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/query"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/transport"
)

// The review page's own tests (docs/security.md T25): who signs in and how, the session cookie, CSRF and Origin on
// every POST, framing and the Content-Security-Policy, stored text shown escaped, an agent that cannot decide, no
// self-approval, scopes as over MCP, one audit record per page, and the pages themselves. The browser tests of
// cmd/strata (TestE2EReviewPage) drive the same pages in Chromium.

func TestMain(m *testing.M) {
	query.WorkerMain()
	os.Exit(m.Run())
}

const (
	ritaToken = "rita-0123456789abcdef0123456789abcdef"
	bobToken  = "bob-0123456789abcdef0123456789abcdef0"
	samToken  = "sam-0123456789abcdef0123456789abcdef0"
)

// env is a data directory with a database shop, a gate with an audit log, and the review page over it behind its
// guard, with tokens for rita (a reviewer), bob (an agent) and sam (a reviewer who may not see the resource
// secrets nor the database vault).
type env struct {
	t        *testing.T
	dir      *snapshots.Dir
	gate     *gate.Gate
	log      *audit.Log
	settings *gate.Settings
	h        *Handler
	srv      *httptest.Server
	clock    *clock

	mu        sync.Mutex
	announced []string
	refused   []string // what the authenticator reported to OnRefused: "principal decision"
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newEnv(t *testing.T, tokens bool, tls bool) *env {
	t.Helper()
	ctx := context.Background()
	dir, err := snapshots.OpenDir(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	log, err := audit.Open(audit.PathIn(dir.Path()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	g, err := gate.New(dir, &gate.Options{Audit: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	shop, err := dir.Create(ctx, "shop", "admin")
	if err != nil {
		t.Fatal(err)
	}
	w := snapshots.WriteOptions{Author: "admin", Message: "first orders"}
	if _, err := shop.Put(ctx, "orders", []byte(`[{"id":1,"price":10},{"id":2,"price":20}]`), w); err != nil {
		t.Fatal(err)
	}
	w.Message = "the secrets"
	if _, err := shop.Put(ctx, "secrets", []byte(`{"key":"TOPSECRET"}`), w); err != nil {
		t.Fatal(err)
	}
	vault, err := dir.Create(ctx, "vault", "admin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vault.Put(ctx, "v", []byte(`1`), w); err != nil {
		t.Fatal(err)
	}
	settings := &gate.Settings{Writes: gate.WritesBranches, Principals: map[string]gate.PrincipalSettings{
		"rita": {Review: true},
		"bob":  {},
		"sam":  {Review: true, Scopes: gate.Scope{Databases: gate.Names{Deny: []string{"vault"}}, Resources: gate.Names{Deny: []string{"secrets"}}}},
	}}
	var toks []transport.Token
	if tokens {
		toks = []transport.Token{transport.NewToken("rita", ritaToken), transport.NewToken("bob", bobToken), transport.NewToken("sam", samToken)}
	}
	e := &env{t: t, dir: dir, gate: g, log: log, settings: settings, clock: &clock{t: time.Now()}}
	auth := transport.NewAuth(transport.AuthOptions{Tokens: toks, LocalUser: "ada",
		OnRefused: func(principal, remote, decision string) {
			e.mu.Lock()
			e.refused = append(e.refused, principal+" "+decision)
			e.mu.Unlock()
		}})
	var handler http.Handler
	var h *Handler
	mk := func(base string) {
		h, err = New(Options{Gate: g, Principal: settings.For, Auth: auth, Operator: "ada", Base: base, TLS: tls,
			PollInterval: 20 * time.Millisecond, Now: e.clock.now,
			Announce: func(a string) { e.mu.Lock(); e.announced = append(e.announced, a); e.mu.Unlock() }})
		if err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	srvHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hh := handler
		mu.Unlock()
		hh.ServeHTTP(w, r)
	})
	if tls {
		e.srv = httptest.NewTLSServer(srvHandler)
	} else {
		e.srv = httptest.NewServer(srvHandler)
	}
	t.Cleanup(e.srv.Close)
	mk(e.srv.URL)
	u, _ := url.Parse(e.srv.URL)
	hosts := map[string]bool{u.Host: true}
	mu.Lock()
	handler = transport.PageGuard(hosts, tokens, h)
	mu.Unlock()
	e.h = h
	return e
}

// browser is a client with its own cookies that sends what a browser sends with its forms.
type browser struct {
	e *env
	c *http.Client
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	c := *e.srv.Client()
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &browser{e: e, c: &c}
}

type page struct {
	status int
	body   string
	header http.Header
}

func (b *browser) do(req *http.Request) page {
	b.e.t.Helper()
	res, err := b.c.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return page{status: res.StatusCode, body: string(body), header: res.Header}
}

func (b *browser) get(path string) page {
	b.e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.e.srv.URL+path, nil)
	return b.do(req)
}

// post sends a form as the page's own form would: with this server's Origin.
func (b *browser) post(path string, form url.Values) page {
	b.e.t.Helper()
	return b.postWith(path, form, map[string]string{"Origin": b.e.srv.URL})
}

func (b *browser) postWith(path string, form url.Values, headers map[string]string) page {
	b.e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.e.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return b.do(req)
}

func (b *browser) signIn(token string) page {
	b.e.t.Helper()
	p := b.post("/ui/login", url.Values{"token": {token}, "next": {"/ui/plans"}})
	if p.status != http.StatusSeeOther {
		b.e.t.Fatalf("sign in: %d\n%s", p.status, p.body)
	}
	return p
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the CSRF token of the signed-in session, read from a page's forms.
func (b *browser) csrf() string {
	b.e.t.Helper()
	m := csrfRE.FindStringSubmatch(b.get("/ui/").body)
	if m == nil {
		b.e.t.Fatal("no CSRF token on the page")
	}
	return m[1]
}

// plan makes a plan as a principal: a change to protected main.
func (e *env) plan(principal, resource, path, value string) string {
	e.t.Helper()
	a, err := e.gate.As(e.settings.For(principal))
	if err != nil {
		e.t.Fatal(err)
	}
	ctx := context.Background()
	v, err := a.Open(ctx, "shop")
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := v.Write(ctx, gate.Change{Op: gate.OpUpdate, Resource: resource, Path: path, Value: json.RawMessage(value), Tool: "update"})
	if err != nil || out.Plan == nil {
		e.t.Fatalf("an update on main by %s: %+v %v, want a plan", principal, out, err)
	}
	return out.Plan.Plan.ID
}

func (e *env) planState(id string) snapshots.Plan {
	e.t.Helper()
	db, err := e.dir.Open(context.Background(), "shop")
	if err != nil {
		e.t.Fatal(err)
	}
	p, err := db.GetPlan(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) records() []audit.Record {
	e.t.Helper()
	f, err := os.Open(e.log.Path())
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	var out []audit.Record
	if err := audit.Read(f, audit.Filter{}, func(r audit.Record) error { out = append(out, r); return nil }); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// TestSignIn: the form has a field labelled Token and a button Sign in; a wrong token is refused (and rate-limited
// per address), a right one opens a session whose cookie is HttpOnly, SameSite=Strict, scoped to /ui/, expiring,
// and Secure under TLS; the session ends after its idle time, and on sign-out.
func TestSignIn(t *testing.T) {
	for _, tls := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", tls), func(t *testing.T) {
			e := newEnv(t, true, tls)
			b := e.browser()
			if p := b.get("/ui/plans"); p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/ui/login?next=") {
				t.Fatalf("signed out: %d %s", p.status, p.header.Get("Location"))
			}
			login := b.get("/ui/login")
			for _, want := range []string{`<label for="token">Token</label>`, `id="token" name="token" type="password"`, `<button type="submit">Sign in</button>`} {
				if !strings.Contains(login.body, want) {
					t.Errorf("the sign-in page lacks %s", want)
				}
			}
			if p := b.post("/ui/login", url.Values{"token": {ritaToken + "x"}}); p.status != http.StatusUnauthorized || !strings.Contains(p.body, "not valid") {
				t.Errorf("a wrong token: %d", p.status)
			}
			p := b.signIn(ritaToken)
			if p.header.Get("Location") != "/ui/plans" {
				t.Errorf("after sign-in: to %q, want the page asked for", p.header.Get("Location"))
			}
			c := p.header.Get("Set-Cookie")
			for _, want := range []string{"strata_review=", "Path=/ui/", "HttpOnly", "SameSite=Strict", "Max-Age=43200"} {
				if !strings.Contains(c, want) {
					t.Errorf("the session cookie %q lacks %s", c, want)
				}
			}
			if strings.Contains(c, "Secure") != tls {
				t.Errorf("the session cookie %q: Secure should be %v", c, tls)
			}
			if p := b.get("/ui/plans"); p.status != 200 || !strings.Contains(p.body, "Signed in as <strong>rita</strong> (reviewer)") {
				t.Fatalf("signed in: %d\n%s", p.status, p.body)
			}
			e.clock.add(61 * time.Minute)
			if p := b.get("/ui/plans"); p.status != http.StatusSeeOther {
				t.Errorf("after an hour idle the session goes on: %d", p.status)
			}
			b.signIn(ritaToken)
			if p := b.post("/ui/logout", url.Values{"csrf": {b.csrf()}}); p.status != http.StatusSeeOther {
				t.Errorf("sign out: %d", p.status)
			}
			if p := b.get("/ui/plans"); p.status != http.StatusSeeOther {
				t.Errorf("after sign-out the session goes on: %d", p.status)
			}
			// Wrong tokens from one address: after about ten, 429 whatever comes.
			last := 0
			for i := 0; i < 12; i++ {
				last = b.post("/ui/login", url.Values{"token": {"guess-0123456789abcdef0123456789abc"}}).status
			}
			if last != http.StatusTooManyRequests {
				t.Errorf("the 12th wrong token in a row: %d, want 429", last)
			}
		})
	}
	// Failed sign-ins are audited as unauthenticated requests (here through the page's own record of its calls).
}

// TestHeaders: every answer forbids framing and sends a strict Content-Security-Policy.
func TestHeaders(t *testing.T) {
	e := newEnv(t, true, false)
	b := e.browser()
	b.signIn(ritaToken)
	id := e.plan("bob", "orders", "/0/price", "11")
	for _, path := range []string{"/ui/login", "/ui/", "/ui/db/shop", "/ui/db/shop/history", "/ui/db/shop/rev/1", "/ui/db/shop/diff?from=1&to=2",
		"/ui/plans", "/ui/plans/shop/" + id, "/ui/audit", "/ui/db/nope", "/ui/static/style.css", "/ui/static/review.js", "/ui/nothing"} {
		p := b.get(path)
		csp := p.header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "form-action 'self'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: Content-Security-Policy %q lacks %s", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("%s: Content-Security-Policy %q allows unsafe sources", path, csp)
		}
		if p.header.Get("X-Frame-Options") != "DENY" || p.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: X-Frame-Options %q, X-Content-Type-Options %q", path, p.header.Get("X-Frame-Options"), p.header.Get("X-Content-Type-Options"))
		}
		if strings.Contains(p.body, "<script>") || strings.Contains(p.body, " on") && regexp.MustCompile(`<[^>]+ on[a-z]+=`).MatchString(p.body) {
			t.Errorf("%s: inline script in the page", path)
		}
	}
}

// TestPostNeedsCSRFAndOrigin: a POST without the session's CSRF token, with a wrong one, from another origin,
// without an Origin, from another site, or that is not a form, is refused before anything happens; the plan stays
// pending. With all of them, the decision goes through.
func TestPostNeedsCSRFAndOrigin(t *testing.T) {
	e := newEnv(t, true, false)
	b := e.browser()
	b.signIn(ritaToken)
	id := e.plan("bob", "orders", "/0/price", "11")
	csrf := b.csrf()
	path := "/ui/plans/shop/" + id + "/approve"
	good := map[string]string{"Origin": e.srv.URL}
	cases := []struct {
		name    string
		form    url.Values
		headers map[string]string
		ctype   string
	}{
		{"no CSRF token", url.Values{}, good, ""},
		{"a wrong CSRF token", url.Values{"csrf": {csrf + "x"}}, good, ""},
		{"another session's CSRF token", url.Values{"csrf": {"AAAA" + csrf[4:]}}, good, ""},
		{"another origin", url.Values{"csrf": {csrf}}, map[string]string{"Origin": "http://evil.example"}, ""},
		{"a sibling port (same site, other origin)", url.Values{"csrf": {csrf}}, map[string]string{"Origin": "http://127.0.0.1:1"}, ""},
		{"Origin null", url.Values{"csrf": {csrf}}, map[string]string{"Origin": "null"}, ""},
		{"no Origin", url.Values{"csrf": {csrf}}, map[string]string{}, ""},
		{"a cross-site fetch", url.Values{"csrf": {csrf}}, map[string]string{"Origin": e.srv.URL, "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}, ""},
		{"a same-site fetch", url.Values{"csrf": {csrf}}, map[string]string{"Origin": e.srv.URL, "Sec-Fetch-Site": "same-site"}, ""},
		{"a text/plain body", url.Values{"csrf": {csrf}}, good, "text/plain"},
		{"a JSON body", url.Values{"csrf": {csrf}}, good, "application/json"},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(c.form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if c.ctype != "" {
			req.Header.Set("Content-Type", c.ctype)
		}
		for k, v := range c.headers {
			req.Header.Set(k, v)
		}
		if p := b.do(req); p.status != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", c.name, p.status)
		}
		if st := e.planState(id).State; st != snapshots.PlanPending {
			t.Fatalf("%s: the plan is %s", c.name, st)
		}
	}
	if p := b.post(path, url.Values{"csrf": {csrf}}); p.status != http.StatusSeeOther {
		t.Fatalf("a proper approval: %d\n%s", p.status, p.body)
	}
	if p := e.planState(id); p.State != snapshots.PlanApproved || p.DecidedBy != "rita" {
		t.Fatalf("after approval: %+v", p)
	}
	// A GET that follows a link from another site is let through (it arrives without the SameSite cookie); any
	// other cross-site request is not.
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/ui/plans", nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Sec-Fetch-Mode", "navigate")
	req.Header.Set("Sec-Fetch-Dest", "document")
	if p := e.browser().do(req); p.status != http.StatusSeeOther {
		t.Errorf("a link from another site: %d, want the sign-in redirect", p.status)
	}
	req.Header.Set("Sec-Fetch-Dest", "iframe")
	if p := b.do(req); p.status != http.StatusForbidden {
		t.Errorf("a frame on another site: %d, want 403", p.status)
	}
	req.Header.Set("Sec-Fetch-Mode", "no-cors")
	req.Header.Set("Sec-Fetch-Dest", "image")
	if p := b.do(req); p.status != http.StatusForbidden {
		t.Errorf("an image on another site: %d, want 403", p.status)
	}
}

// TestAgentCannotDecide: a principal without review sees its own plans, no Approve or Reject, and its POST is
// refused with 403 (audited as denied); it does not see other principals' plans, nor the audit log.
func TestAgentCannotDecide(t *testing.T) {
	e := newEnv(t, true, false)
	mine := e.plan("bob", "orders", "/0/price", "11")
	theirs := e.plan("rita", "orders", "/1/price", "21")
	b := e.browser()
	b.signIn(bobToken)
	p := b.get("/ui/plans/shop/" + mine)
	if p.status != 200 || !strings.Contains(p.body, "/0/price") {
		t.Fatalf("bob's own plan: %d\n%s", p.status, p.body)
	}
	for _, not := range []string{"Approve", "Reject", "/approve", "/reject"} {
		if strings.Contains(p.body, not) {
			t.Errorf("an agent's page shows %q", not)
		}
	}
	if !strings.Contains(p.body, "Only a reviewer can approve or reject this plan") {
		t.Errorf("the agent's page does not say who decides")
	}
	csrf := b.csrf()
	for _, action := range []string{"approve", "reject"} {
		if p := b.post("/ui/plans/shop/"+mine+"/"+action, url.Values{"csrf": {csrf}, "reason": {"I say so"}}); p.status != http.StatusForbidden {
			t.Errorf("the agent's %s: %d, want 403", action, p.status)
		}
	}
	if st := e.planState(mine).State; st != snapshots.PlanPending {
		t.Fatalf("the agent decided its plan: %s", st)
	}
	if p := b.get("/ui/plans/shop/" + theirs); p.status != http.StatusNotFound {
		t.Errorf("another principal's plan: %d, want 404", p.status)
	}
	if p := b.get("/ui/plans"); strings.Contains(p.body, theirs) || !strings.Contains(p.body, mine) {
		t.Errorf("the agent's plan list:\n%s", p.body)
	}
	if p := b.get("/ui/audit"); p.status != http.StatusForbidden {
		t.Errorf("the agent reads the audit log: %d", p.status)
	}
	denied := 0
	for _, r := range e.records() {
		if r.Principal == "bob" && (r.Tool == "ui approve" || r.Tool == "ui reject") && r.Decision == audit.DecisionDeny && r.Outcome == gate.CodeDenied {
			denied++
		}
	}
	if denied != 2 {
		t.Errorf("%d denied decisions of the agent audited, want 2", denied)
	}
}

// TestNoSelfApproval: a reviewer's own plan shows no decision controls, and deciding it is refused.
func TestNoSelfApproval(t *testing.T) {
	e := newEnv(t, true, false)
	id := e.plan("rita", "orders", "/0/price", "11")
	b := e.browser()
	b.signIn(ritaToken)
	p := b.get("/ui/plans/shop/" + id)
	if strings.Contains(p.body, `class="approve"`) || !strings.Contains(p.body, "You made this plan") {
		t.Errorf("a reviewer's own plan:\n%s", p.body)
	}
	if p := b.post("/ui/plans/shop/"+id+"/approve", url.Values{"csrf": {b.csrf()}}); p.status != http.StatusForbidden {
		t.Errorf("approving one's own plan: %d, want 403", p.status)
	}
	if st := e.planState(id).State; st != snapshots.PlanPending {
		t.Fatalf("self-approved: %s", st)
	}
}

// TestRejectWithReason: a rejection needs a reason, and the agent's apply_plan then answers DENIED with it; an
// approval lets the agent's apply commit; the queue shows both, settled.
func TestRejectWithReason(t *testing.T) {
	e := newEnv(t, true, false)
	r1 := e.plan("bob", "orders", "/0/price", "11")
	r2 := e.plan("bob", "orders", "/1/price", "21")
	b := e.browser()
	b.signIn(ritaToken)
	q := b.get("/ui/plans")
	for _, want := range []string{r1, r2, "Waiting for a decision (2)", "update at orders/0/price", "<td>bob</td>", "1: <code>/orders/0/price</code>"} {
		if !strings.Contains(q.body, want) {
			t.Errorf("the queue lacks %q", want)
		}
	}
	p := b.get("/ui/plans/shop/" + r1)
	for _, want := range []string{`<button type="submit" class="approve">Approve</button>`, `<button type="submit" class="reject">Reject</button>`,
		`<label for="reason">Reason (required`, `required maxlength="2000"`, "<code>/0/price</code>", "<code>10</code>", "<code>11</code>"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the plan page lacks %s", want)
		}
	}
	csrf := b.csrf()
	if p := b.post("/ui/plans/shop/"+r1+"/reject", url.Values{"csrf": {csrf}, "reason": {"  "}}); p.status != http.StatusBadRequest {
		t.Errorf("a rejection without a reason: %d, want 400", p.status)
	}
	reason := "too expensive <b>now</b>"
	if p := b.post("/ui/plans/shop/"+r1+"/reject", url.Values{"csrf": {csrf}, "reason": {reason}}); p.status != http.StatusSeeOther {
		t.Fatalf("reject: %d\n%s", p.status, p.body)
	}
	if p := b.post("/ui/plans/shop/"+r2+"/approve", url.Values{"csrf": {csrf}}); p.status != http.StatusSeeOther {
		t.Fatalf("approve: %d\n%s", p.status, p.body)
	}
	agent, _ := e.gate.As(e.settings.For("bob"))
	ctx := context.Background()
	v, p1, err := agent.FindPlan(ctx, r1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.ApplyPlan(ctx, p1, "")
	var ge *gate.Error
	if gate.Code(err) != gate.CodeDenied || !errors.As(err, &ge) || ge.Detail != reason {
		t.Errorf("applying the rejected plan: %v", err)
	}
	v, p2, _ := agent.FindPlan(ctx, r2)
	out, err := v.ApplyPlan(ctx, p2, "")
	if err != nil || out.Result == nil {
		t.Fatalf("applying the approved plan: %+v %v", out, err)
	}
	page := b.get("/ui/plans/shop/" + r1).body
	if !strings.Contains(page, "rejected by rita") || !strings.Contains(page, "too expensive &lt;b&gt;now&lt;/b&gt;") {
		t.Errorf("the rejected plan's page:\n%s", page)
	}
	page = b.get("/ui/plans").body
	if !strings.Contains(page, fmt.Sprintf(`revision %d</a>`, out.Result.Revision)) || !strings.Contains(page, "Waiting for a decision (0)") {
		t.Errorf("the settled queue:\n%s", page)
	}
}

// TestStoredTextEscaped: text an agent wrote (a commit message, a value, a reason) is shown escaped, and the
// characters that hide or reorder text are shown as visible marks.
func TestStoredTextEscaped(t *testing.T) {
	e := newEnv(t, true, false)
	ctx := context.Background()
	a, _ := e.gate.As(e.settings.For("bob"))
	v, _ := a.Open(ctx, "shop")
	if _, err := v.CreateBranch(ctx, "work", snapshots.Ref{}); err != nil {
		t.Fatal(err)
	}
	msg := "fix</td><script>alert(1)</script><img src=x onerror=alert(2)> \u202Egnp.exe\u202C \u200Bzero \x1b[31mred\u0007 \u2066iso\u2069 \U000E0041tag"
	val := `{"html":"<script>alert(3)</script>","bidi":"abc\u202Edef","nul":"a\u0000b"}`
	out, err := v.Write(ctx, gate.Change{Op: gate.OpPut, Resource: "notes", Branch: "work", Value: json.RawMessage(val), Message: msg, Tool: "put"})
	if err != nil || out.Result == nil {
		t.Fatalf("%+v %v", out, err)
	}
	b := e.browser()
	b.signIn(ritaToken)
	for _, path := range []string{fmt.Sprintf("/ui/db/shop/rev/%d", out.Result.Revision), "/ui/db/shop/history?branch=work",
		"/ui/db/shop/diff?from=main&to=work", "/ui/db/shop/value?at=work&path=/notes"} {
		p := b.get(path)
		if p.status != 200 {
			t.Fatalf("%s: %d\n%s", path, p.status, p.body)
		}
		for _, bad := range []string{"<script>alert", "<img src=x", "\u202E", "\u200B", "\x1b", "\u0007", "\u2066", "\U000E0041"} {
			if strings.Contains(p.body, bad) {
				t.Errorf("%s shows %q raw", path, bad)
			}
		}
		if !strings.Contains(p.body, "⟨U+202E⟩") {
			t.Errorf("%s does not mark the bidi override", path)
		}
	}
	p := b.get(fmt.Sprintf("/ui/db/shop/rev/%d", out.Result.Revision)).body
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "⟨U+200B⟩", "⟨U+001B⟩", "⟨U+0007⟩", "⟨U+2066⟩", "⟨U+E0041⟩"} {
		if !strings.Contains(p, want) {
			t.Errorf("the revision page lacks %s", want)
		}
	}
}

// TestScopedReviewer: a reviewer with scopes sees only what they allow, as over MCP: no hidden database, no hidden
// resource in diffs or revisions, no plan that touches a hidden resource, no audit record of a hidden database.
func TestScopedReviewer(t *testing.T) {
	e := newEnv(t, true, false)
	visible := e.plan("bob", "orders", "/0/price", "11")
	bob, _ := e.gate.As(e.settings.For("bob"))
	ctx, call := bob.Call(context.Background(), gate.CallInfo{Transport: audit.TransportHTTP, Tool: "update", Database: "shop"})
	v, _ := bob.Open(ctx, "shop")
	out, err := v.Write(ctx, gate.Change{Op: gate.OpUpdate, Resource: "secrets", Path: "/key", Value: json.RawMessage(`"LEAKED"`), Tool: "update"})
	if err != nil || out.Plan == nil {
		t.Fatalf("%+v %v", out, err)
	}
	call.End(audit.OutcomeOK)
	hidden := out.Plan.Plan.ID
	if p := e.browser(); true {
		p.signIn(ritaToken)
		if !strings.Contains(p.get("/ui/audit").body, hidden) {
			t.Fatal("an unscoped reviewer does not see the plan in the audit log")
		}
	}
	rita := e.browser()
	rita.signIn(ritaToken)
	rita.get("/ui/db/vault") // an audit record naming vault
	b := e.browser()
	b.signIn(samToken)
	checks := []struct {
		path   string
		status int
	}{{"/ui/audit", 200}, {"/ui/", 200}, {"/ui/db/shop/rev/2", 200}, {"/ui/db/shop/diff?from=1&to=2", 200},
		{"/ui/plans", 200}, {"/ui/plans/shop/" + visible, 200}, {"/ui/db/vault", 404}, {"/ui/plans/shop/" + hidden, 404},
		{"/ui/db/shop/value?at=2&path=/secrets", 404}, {"/ui/db/shop/history?resource=secrets", 200}}
	for _, c := range checks {
		p := b.get(c.path)
		if p.status != c.status {
			t.Errorf("%s: %d, want %d", c.path, p.status, c.status)
		}
		for _, leak := range []string{"TOPSECRET", "LEAKED", "vault", hidden, "the secrets"} {
			if strings.Contains(p.body, leak) && !strings.Contains(c.path, leak) {
				t.Errorf("%s shows %q to a principal whose scope hides it", c.path, leak)
			}
		}
	}
}

// TestNoTokens: without tokens only the one-time address signs in, once, as the operator (who may decide a plan
// the local user's agent made); the token form is refused; after sign-out a new address is announced.
func TestNoTokens(t *testing.T) {
	e := newEnv(t, false, false)
	addr := e.h.SignInAddress()
	if !strings.HasPrefix(addr, e.srv.URL+"/ui/login?code=") || len(addr) < len(e.srv.URL)+40 {
		t.Fatalf("sign-in address %q", addr)
	}
	id := e.plan("ada", "orders", "/0/price", "11") // the agent runs as the OS user, as the operator does
	b := e.browser()
	if p := b.post("/ui/login", url.Values{"token": {ritaToken}}); p.status != http.StatusForbidden {
		t.Errorf("a token without a token file: %d", p.status)
	}
	page := b.get("/ui/login")
	if strings.Contains(page.body, `name="token"`) {
		t.Errorf("the sign-in page offers a token field without tokens")
	}
	if p := b.get(strings.TrimPrefix(addr, e.srv.URL) + "x"); p.status != http.StatusForbidden {
		t.Errorf("a wrong code: %d", p.status)
	}
	p := b.get(strings.TrimPrefix(addr, e.srv.URL))
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/" {
		t.Fatalf("the one-time address: %d %s", p.status, p.header.Get("Location"))
	}
	if p := b.get("/ui/"); !strings.Contains(p.body, "Signed in as <strong>ada</strong> (the operator)") {
		t.Fatalf("after the one-time sign-in:\n%s", p.body)
	}
	if p := e.browser().get(strings.TrimPrefix(addr, e.srv.URL)); p.status != http.StatusForbidden {
		t.Errorf("the address used twice: %d", p.status)
	}
	if e.h.SignInAddress() != "" {
		t.Errorf("a sign-in address is open while the operator's session lasts")
	}
	if p := b.post("/ui/plans/shop/"+id+"/approve", url.Values{"csrf": {b.csrf()}}); p.status != http.StatusSeeOther {
		t.Fatalf("the operator approves: %d\n%s", p.status, p.body)
	}
	if st := e.planState(id); st.State != snapshots.PlanApproved || st.DecidedBy != "ada" {
		t.Errorf("%+v", st)
	}
	b.post("/ui/logout", url.Values{"csrf": {b.csrf()}})
	e.mu.Lock()
	announced := append([]string{}, e.announced...)
	e.mu.Unlock()
	if len(announced) != 1 || announced[0] == addr || !strings.HasPrefix(announced[0], e.srv.URL+"/ui/login?code=") {
		t.Fatalf("after sign-out, announced %q", announced)
	}
	if p := e.browser().get(strings.TrimPrefix(announced[0], e.srv.URL)); p.status != http.StatusSeeOther {
		t.Errorf("the new address: %d", p.status)
	}
}

// TestEveryPageAudited: each page request is one audit record, as the principal, with tool "ui PAGE".
func TestEveryPageAudited(t *testing.T) {
	e := newEnv(t, true, false)
	id := e.plan("bob", "orders", "/0/price", "11")
	b := e.browser()
	b.signIn(ritaToken)
	before := len(e.records())
	paths := []string{"/ui/", "/ui/db/shop", "/ui/db/shop/history", "/ui/db/shop/rev/2", "/ui/db/shop/diff?from=1&to=2",
		"/ui/db/shop/value?at=2&path=/orders", "/ui/plans", "/ui/plans/shop/" + id, "/ui/audit", "/ui/db/nope"}
	for _, p := range paths {
		b.get(p)
	}
	recs := e.records()[before:]
	var got []string
	for _, r := range recs {
		got = append(got, r.Principal+" "+r.Tool+" "+r.Transport+" "+r.Outcome)
	}
	want := []string{"rita ui databases http ok", "rita ui database http ok", "rita ui history http ok", "rita ui revision http ok",
		"rita ui diff http ok", "rita ui value http ok", "rita ui plans http ok", "rita ui plan http ok", "rita ui audit http ok",
		"rita ui database http NOT_FOUND"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit records:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if recs[7].PlanID != id || recs[7].Database != "shop" {
		t.Errorf("the plan page's record: %+v", recs[7])
	}
}

// TestSignedOutAudited: a page request without a live session (none, an unknown or an expired one) is refused, and
// the refusal reaches the audit hook as an MCP request without a valid token does (the hook aggregates them).
func TestSignedOutAudited(t *testing.T) {
	e := newEnv(t, true, false)
	id := e.plan("bob", "orders", "/0/price", "11")
	count := func() int { e.mu.Lock(); defer e.mu.Unlock(); return len(e.refused) }
	b := e.browser()
	if p := b.get("/ui/plans"); p.status != http.StatusSeeOther {
		t.Fatalf("signed out: %d", p.status)
	}
	if n := count(); n != 1 {
		t.Fatalf("a page without a session: %d refusals reported, want 1", n)
	}
	u, _ := url.Parse(e.srv.URL)
	b.c.Jar.SetCookies(u, []*http.Cookie{{Name: cookieName, Value: "forged-session-value", Path: "/"}})
	if p := b.postWith("/ui/plans/shop/"+id+"/approve", url.Values{"csrf": {"x"}}, map[string]string{"Origin": e.srv.URL}); p.status != http.StatusUnauthorized {
		t.Fatalf("an approval with a forged session: %d", p.status)
	}
	if n := count(); n != 2 {
		t.Fatalf("an approval with a forged session: %d refusals reported, want 2", n)
	}
	e.mu.Lock()
	got := strings.Join(e.refused, "; ")
	e.mu.Unlock()
	if got != " unauthenticated;  unauthenticated" {
		t.Fatalf("refusals = %q", got)
	}
}

// TestDiffPage: counts on top, a sign and a word for each change, old and new side by side, unchanged parts
// collapsed, a large value elided with a way to see it whole, pages of operations.
func TestDiffPage(t *testing.T) {
	e := newEnv(t, true, false)
	ctx := context.Background()
	db, _ := e.dir.Open(ctx, "shop")
	w := snapshots.WriteOptions{Author: "admin", Branch: "work"}
	if _, err := db.CreateBranch(ctx, "work", snapshots.Ref{}, "admin"); err != nil {
		t.Fatal(err)
	}
	var items []string
	for i := range 500 {
		items = append(items, fmt.Sprintf(`{"id":%d,"v":"x"}`, i))
	}
	big := strings.Repeat("long text ", 1000) // 10 KB: behind a disclosure
	huge := strings.Repeat("y", 100_000)      // 100 KB: a link to the value page
	doc := fmt.Sprintf(`{"items":[%s],"big":"a","huge":"b"}`, strings.Join(items, ","))
	if _, err := db.Put(ctx, "doc", []byte(doc), w); err != nil {
		t.Fatal(err)
	}
	for i := range items {
		if i%2 == 0 {
			items[i] = fmt.Sprintf(`{"id":%d,"v":"changed"}`, i)
		}
	}
	doc2 := fmt.Sprintf(`{"items":[%s],"big":%q,"huge":%q}`, strings.Join(items, ","), big, huge)
	r2, err := db.Put(ctx, "doc", []byte(doc2), w)
	if err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	b.signIn(ritaToken)
	from := r2.Revision - 1
	p := b.get(fmt.Sprintf("/ui/db/shop/diff?from=%d&to=%d", from, r2.Revision))
	if p.status != 200 {
		t.Fatalf("%d\n%s", p.status, p.body)
	}
	for _, want := range []string{"252 changed", `<td class="sign" title="changed"><span aria-hidden="true">~</span><span class="visually-hidden">changed</span>`,
		"<code>/big</code>", "show all (9.8 KiB)", "(97.7 KiB in all: elided)", "open the whole value", "⋯ unchanged ⋯",
		"<code>/items/0/v</code>", `<code>&#34;x&#34;</code>`, `<code>&#34;changed&#34;</code>`, "Next operations →"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the diff page lacks %s", want)
		}
	}
	next := regexp.MustCompile(`<a href="([^"]+)">Next operations`).FindStringSubmatch(p.body)
	p2 := b.get(strings.ReplaceAll(next[1], "&amp;", "&"))
	if !strings.Contains(p2.body, "Operations 201 to") || !strings.Contains(p2.body, "← Previous operations") {
		t.Errorf("the second page:\n%s", p2.body)
	}
	link := regexp.MustCompile(`<a href="(/ui/db/shop/value[^"]+)">open the whole value`).FindStringSubmatch(p.body)
	v := b.get(strings.ReplaceAll(link[1], "&amp;", "&"))
	if v.status != 200 || !strings.Contains(v.body, strings.Repeat("y", 1000)) {
		t.Errorf("the whole value: %d", v.status)
	}
	if p := b.get("/ui/db/shop/diff?from=nope&to=2"); p.status != 404 {
		t.Errorf("a missing ref: %d", p.status)
	}
	if p := b.get("/ui/db/shop/diff?from=1&to=2&path=/x"); p.status != 400 {
		t.Errorf("a path without a resource: %d", p.status)
	}
}

// TestBranchMoved: a plan whose branch moved since it was made warns, with the revisions and the paths that
// moved, and which of them the plan changes too.
func TestBranchMoved(t *testing.T) {
	e := newEnv(t, true, false)
	id := e.plan("bob", "orders", "/0/price", "11")
	ctx := context.Background()
	db, _ := e.dir.Open(ctx, "shop")
	if _, err := db.Put(ctx, "orders", []byte(`[{"id":1,"price":12},{"id":2,"price":20}]`), snapshots.WriteOptions{Author: "carol", Message: "price fix"}); err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	b.signIn(ritaToken)
	p := b.get("/ui/plans/shop/" + id).body
	for _, want := range []string{"The branch has moved since this plan was made", "by carol", "price fix", "<code>/orders/0/price</code> <strong>— this plan changes it too</strong>", "PLAN_CHANGED"} {
		if !strings.Contains(p, want) {
			t.Errorf("the plan page lacks %s", want)
		}
	}
}

// TestAuditPage: the audit log, newest first, filtered by principal, tool, decision and time, linked to the
// revisions and plans it names.
func TestAuditPage(t *testing.T) {
	e := newEnv(t, true, false)
	id := e.plan("bob", "orders", "/0/price", "11")
	// bob's plan call as MCP would audit it.
	a, _ := e.gate.As(e.settings.For("bob"))
	ctx, call := a.Call(context.Background(), gate.CallInfo{Transport: audit.TransportHTTP, Tool: "update"})
	v, _ := a.Open(ctx, "shop")
	if _, err := v.Write(ctx, gate.Change{Op: gate.OpUpdate, Resource: "orders", Path: "/1/price", Value: json.RawMessage(`3`), Tool: "update"}); err != nil {
		t.Fatal(err)
	}
	call.End(audit.OutcomeOK)
	b := e.browser()
	b.signIn(ritaToken)
	b.post("/ui/plans/shop/"+id+"/approve", url.Values{"csrf": {b.csrf()}})
	bb := e.browser()
	bb.signIn(bobToken)
	bb.post("/ui/plans/shop/"+id+"/approve", url.Values{"csrf": {bb.csrf()}}) // denied
	p := b.get("/ui/audit?principal=bob")
	if !strings.Contains(p.body, "<td>update</td>") || !strings.Contains(p.body, "<td>ui approve</td>") || strings.Contains(p.body, "<td>rita</td>") {
		t.Errorf("filtered by principal bob:\n%s", p.body)
	}
	if !regexp.MustCompile(`<a href="/ui/plans/shop/plan-[a-z0-9]+">plan-`).MatchString(p.body) {
		t.Errorf("no link to the plan:\n%s", p.body)
	}
	p = b.get("/ui/audit?decision=deny")
	if !strings.Contains(p.body, "<td>ui approve</td>") || strings.Contains(p.body, "<td>update</td>") {
		t.Errorf("filtered by decision deny:\n%s", p.body)
	}
	p = b.get("/ui/audit?tool=ui+approve&principal=rita")
	if strings.Count(p.body, "<td>ui approve</td>") != 1 {
		t.Errorf("filtered by tool and principal:\n%s", p.body)
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if p := b.get("/ui/audit?since=" + future); !strings.Contains(p.body, "No record matches") {
		t.Errorf("since an hour from now:\n%s", p.body)
	}
	if p := b.get("/ui/audit?since=yesterday"); p.status != 400 {
		t.Errorf("a bad time: %d", p.status)
	}
	if p := b.get("/ui/audit?decision=maybe"); p.status != 400 {
		t.Errorf("a bad decision: %d", p.status)
	}
}

// TestLiveQueue: the event stream announces the pending plans, and again when a new plan arrives.
func TestLiveQueue(t *testing.T) {
	e := newEnv(t, true, false)
	b := e.browser()
	b.signIn(ritaToken)
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/ui/events", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req = req.WithContext(ctx)
	res, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	events := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: ") {
				events <- strings.TrimPrefix(sc.Text(), "data: ")
			}
		}
		close(events)
	}()
	next := func() map[string]any {
		t.Helper()
		select {
		case ev := <-events:
			var m map[string]any
			json.Unmarshal([]byte(ev), &m)
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
		}
		return nil
	}
	if m := next(); m["pending"] != 0.0 {
		t.Errorf("first event %v", m)
	}
	e.plan("bob", "orders", "/0/price", "11")
	if m := next(); m["pending"] != 1.0 {
		t.Errorf("after a plan: %v", m)
	}
}

// A page about a database whose file cannot be used says so, without the server's path or the file's bytes (found
// in security review: the page showed the library's whole message); the log has them.
func TestFileFaultHidesPath(t *testing.T) {
	e := newEnv(t, true, false)
	path := filepath.Join(e.dir.Path(), "broken"+snapshots.Ext)
	if err := os.WriteFile(path, []byte(strings.Repeat("garbage!", 1024)), 0o600); err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	b.signIn(bobToken)
	p := b.get("/ui/db/broken")
	if strings.Contains(p.body, e.dir.Path()) || strings.Contains(p.body, "garbage") || !strings.Contains(p.body, "the database file is damaged or cannot be used now") {
		t.Fatalf("the page about a damaged database (%d):\n%s", p.status, p.body)
	}
}

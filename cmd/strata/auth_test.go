package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tokens of the tests: 43 characters each.
const (
	aliceToken = "alice-0123456789abcdefghijklmnopqrstuvwxyzAB"
	bobToken   = "bob-00123456789abcdefghijklmnopqrstuvwxyzABC"
)

// writeFile writes a file of the test with a mode.
func writeFile(t *testing.T, name, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return p
}

// tokenFile is a token file of the given PRINCIPAL TOKEN lines, mode 600.
func tokenFile(t *testing.T, lines ...string) string {
	return writeFile(t, "tokens", "# principals of the test\n\n"+strings.Join(lines, "\n")+"\n", 0o600)
}

// rawClient speaks Streamable HTTP by hand, to send what the go-sdk client would not.
type rawClient struct {
	t     *testing.T
	url   string
	token string
	sid   string
	hc    *http.Client
}

func newRawClient(t *testing.T, url, token string) *rawClient {
	return &rawClient{t: t, url: url, token: token, hc: &http.Client{Timeout: 30 * time.Second}}
}

type rawResponse struct {
	code   int
	header http.Header
	body   string
}

// post sends one body; mod may change the request before it goes.
func (c *rawClient) post(body string, mod func(r *http.Request)) rawResponse {
	c.t.Helper()
	r, err := c.do(body, mod)
	if err != nil {
		c.t.Fatalf("POST: %v", err)
	}
	return r
}

// do is post for other goroutines than the test's: it returns its error.
func (c *rawClient) do(body string, mod func(r *http.Request)) (rawResponse, error) {
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		return rawResponse{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
	}
	if mod != nil {
		mod(req)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return rawResponse{}, err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return rawResponse{res.StatusCode, res.Header, string(b)}, nil
}

// initialize opens a session.
func (c *rawClient) initialize() {
	c.t.Helper()
	r := c.post(initializeBody, nil)
	if r.code != http.StatusOK || r.header.Get("Mcp-Session-Id") == "" {
		c.t.Fatalf("initialize: %d %v %s", r.code, r.header, r.body)
	}
	c.sid = r.header.Get("Mcp-Session-Id")
	if r := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil); r.code != http.StatusAccepted {
		c.t.Fatalf("initialized: %d %s", r.code, r.body)
	}
}

func toolCall(id int, name, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, name, args)
}

// bearerTransport adds an Authorization header to every request.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (b *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// connect opens a go-sdk client session with a token.
func connect(t *testing.T, ctx context.Context, url, token string, base http.RoundTripper) *mcpsdk.ClientSession {
	t.Helper()
	if base == nil {
		base = http.DefaultTransport
	}
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: &bearerTransport{token: token, base: base}}}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolNames(t *testing.T, ctx context.Context, cs *mcpsdk.ClientSession) map[string]bool {
	t.Helper()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools.Tools {
		names[tl.Name] = true
	}
	return names
}

func TestAuthTokenFileRefused(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	good := "alice " + aliceToken
	for _, tc := range []struct {
		name    string
		path    string
		want    []string
		secrets []string
	}{
		{"missing", filepath.Join(t.TempDir(), "nope"), []string{"--token-file", "no such file"}, nil},
		{"group readable", writeFile(t, "tokens", good+"\n", 0o640), []string{"chmod 600"}, []string{aliceToken}},
		{"world readable", writeFile(t, "tokens", good+"\n", 0o604), []string{"chmod 600"}, []string{aliceToken}},
		{"short token", tokenFile(t, "alice short-token-of-31-characters-x"), []string{"line 3", "use 32"}, []string{"short-token"}},
		{"bad principal", tokenFile(t, "al/ice "+aliceToken), []string{"line 3", "al/ice"}, []string{aliceToken}},
		{"one field", tokenFile(t, aliceToken), []string{"line 3", "PRINCIPAL TOKEN"}, []string{aliceToken}},
		{"three fields", tokenFile(t, good+" extra"), []string{"line 3", "PRINCIPAL TOKEN"}, []string{aliceToken}},
		{"duplicate principal", tokenFile(t, good, "alice "+bobToken), []string{"line 4", "alice", "line 3"}, []string{aliceToken, bobToken}},
		{"duplicate token", tokenFile(t, good, "bob "+aliceToken), []string{"line 4", "same token", "line 3"}, []string{aliceToken}},
		{"empty", tokenFile(t, "# nothing"), []string{"no tokens"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := s.run("", "serve", "--listen", "127.0.0.1:0", "--token-file", tc.path)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d: %s", code, exitUsage, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q does not say %q", errOut, w)
				}
			}
			for _, secret := range tc.secrets {
				if strings.Contains(errOut, secret) {
					t.Errorf("stderr shows a token: %q", errOut)
				}
			}
		})
	}
}

// TestAuthRefusesWithoutToken holds docs/security.md T8: every request without the right bearer token gets 401 with a
// WWW-Authenticate challenge, and nothing it asks for happens; tokens never reach the log.
func TestAuthRefusesWithoutToken(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	sv := startServe(t, s, "--writes", "branches", "--token-file", tokenFile(t, "alice "+aliceToken, "bob "+bobToken))
	alice := newRawClient(t, sv.url, aliceToken)
	alice.initialize()
	// Each refused request carries alice's session and asks to create a database.
	attack := func(mod func(r *http.Request)) rawResponse {
		t.Helper()
		c := newRawClient(t, sv.url, "")
		c.sid = alice.sid
		return c.post(toolCall(7, "create_database", `{"database":"evil"}`), mod)
	}
	nearMiss := aliceToken[:len(aliceToken)-1] + "C"
	for _, tc := range []struct {
		name      string
		mod       func(r *http.Request)
		challenge string // the WWW-Authenticate header wanted
	}{
		{"no token", nil, `Bearer realm="strata"`},
		{"wrong token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+strings.Repeat("z", 43)) }, `Bearer realm="strata", error="invalid_token"`},
		{"near miss", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+nearMiss) }, `Bearer realm="strata", error="invalid_token"`},
		{"prefix", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+aliceToken[:32]) }, `Bearer realm="strata", error="invalid_token"`},
		{"empty bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer ") }, `Bearer realm="strata", error="invalid_token"`},
		{"token in query string", func(r *http.Request) {
			r.URL.RawQuery = "access_token=" + aliceToken
		}, `Bearer realm="strata", error="invalid_request"`},
		{"token in query string with header", func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+aliceToken)
			r.URL.RawQuery = "Token=" + aliceToken
		}, `Bearer realm="strata", error="invalid_request"`},
		{"basic", func(r *http.Request) { r.SetBasicAuth("alice", aliceToken) }, `Bearer realm="strata", error="invalid_request"`},
		{"token without scheme", func(r *http.Request) { r.Header.Set("Authorization", aliceToken) }, `Bearer realm="strata", error="invalid_request"`},
		{"two headers", func(r *http.Request) {
			r.Header["Authorization"] = []string{"Bearer " + aliceToken, "Bearer " + aliceToken}
		}, `Bearer realm="strata", error="invalid_request"`},
		{"8 KB token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+aliceToken+strings.Repeat("a", 8<<10)) }, `Bearer realm="strata", error="invalid_token"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := attack(tc.mod)
			if r.code != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401: %s", r.code, r.body)
			}
			if got := r.header.Get("WWW-Authenticate"); got != tc.challenge {
				t.Errorf("WWW-Authenticate %q, want %q", got, tc.challenge)
			}
			if strings.Contains(r.body, "jsonrpc") {
				t.Errorf("the request reached the MCP server: %s", r.body)
			}
		})
	}
	t.Run("query string says why", func(t *testing.T) {
		r := attack(func(r *http.Request) { r.URL.RawQuery = "access_token=x" })
		if !strings.Contains(r.body, "Authorization: Bearer") || !strings.Contains(r.body, "URL") {
			t.Errorf("body %q", r.body)
		}
	})
	// A header past the server's limit is refused by net/http itself (431), before any handler.
	t.Run("100 KB header", func(t *testing.T) {
		r := attack(func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+strings.Repeat("a", 100<<10)) })
		if r.code != http.StatusRequestHeaderFieldsTooLarge && r.code != http.StatusUnauthorized {
			t.Fatalf("status %d, want 431 or 401: %.200s", r.code, r.body)
		}
	})
	// Nothing was executed; the same request with alice's token is (the test can fail).
	if out := s.must("", "db", "list"); strings.Contains(out, "evil") {
		t.Fatalf("a refused request created a database: %s", out)
	}
	if r := alice.post(toolCall(8, "create_database", `{"database":"good"}`), nil); r.code != http.StatusOK || strings.Contains(r.body, `"isError":true`) {
		t.Fatalf("create_database with the token: %d %s", r.code, r.body)
	}
	if out := s.must("", "db", "list"); !strings.Contains(out, "good") {
		t.Fatalf("the authenticated request did not run: %s", out)
	}
	sv.stop()
	log := sv.stderr.String()
	for _, secret := range []string{aliceToken, bobToken, aliceToken[:32], nearMiss} {
		if strings.Contains(log, secret) {
			t.Errorf("a token is in the server's log:\n%s", log)
		}
	}
	// T12, T21: the refused requests are in the audit log (no token in it), counted in one record for the address
	// (the server stopped within the interval: the record was written at shutdown), and alice's call with its
	// principal.
	trail := s.must("", "audit", "--json")
	if recs, n := refusedCounts(t, trail, "unauthenticated"); recs != 1 || n < 11 {
		t.Errorf("%d unauthenticated requests audited in %d records, want at least 11 in 1:\n%s", n, recs, trail)
	}
	if !strings.Contains(trail, `"principal":"alice","client":"t/1","transport":"http","tool":"create_database","database":"good"`) {
		t.Errorf("alice's create_database is not audited:\n%s", trail)
	}
	for _, secret := range []string{aliceToken, bobToken, aliceToken[:32], nearMiss} {
		if strings.Contains(trail, secret) {
			t.Errorf("a token is in the audit log")
		}
	}
	if out := s.must("", "audit", "--verify"); !strings.Contains(out, "chain intact") {
		t.Errorf("audit --verify: %s", out)
	}
}

// TestAuthRateLimitsFailures: after about 10 rapid failures from one address, requests get 429 with Retry-After,
// even with the right token, and nothing runs.
func TestAuthRateLimitsFailures(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	sv := startServe(t, s, "--writes", "branches", "--token-file", tokenFile(t, "alice "+aliceToken))
	alice := newRawClient(t, sv.url, aliceToken)
	alice.initialize()
	wrong := newRawClient(t, sv.url, strings.Repeat("w", 40))
	wrong.sid = alice.sid
	codes := map[int]int{}
	first429 := -1
	for i := range 100 {
		r := wrong.post(toolCall(i, "create_database", fmt.Sprintf(`{"database":"evil%d"}`, i)), nil)
		codes[r.code]++
		if r.code == http.StatusTooManyRequests {
			if first429 < 0 {
				first429 = i
			}
			if n, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || n < 1 {
				t.Fatalf("429 with Retry-After %q", r.header.Get("Retry-After"))
			}
		} else if r.code != http.StatusUnauthorized {
			t.Fatalf("attempt %d: status %d: %s", i, r.code, r.body)
		}
	}
	if first429 < 0 || first429 > 15 || codes[http.StatusTooManyRequests] < 80 {
		t.Fatalf("statuses %v, first 429 at attempt %d: want 429 after about 10 failures", codes, first429)
	}
	// The address is blocked for now: the right token waits too.
	if r := alice.post(toolCall(200, "create_database", `{"database":"evil-alice"}`), nil); r.code != http.StatusTooManyRequests {
		t.Fatalf("right token from a blocked address: %d %s", r.code, r.body)
	}
	if out := s.must("", "db", "list"); strings.Contains(out, "evil") {
		t.Fatalf("a refused request created a database: %s", out)
	}
}

// TestAuthListen: tokens let the server listen beyond loopback; without them it refuses.
func TestAuthListen(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	if _, errOut, code := s.run("", "serve", "--listen", "0.0.0.0:0"); code != exitUsage || !strings.Contains(errOut, "loopback") || !strings.Contains(errOut, "--token-file") {
		t.Fatalf("--listen 0.0.0.0:0 without tokens: exit %d: %s", code, errOut)
	}
	sv := startServe(t, s, "--listen", "0.0.0.0:0", "--token-file", tokenFile(t, "alice "+aliceToken))
	host, port, err := net.SplitHostPort(sv.host)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsUnspecified() {
		t.Fatalf("listening on %s", sv.host)
	}
	url := "http://127.0.0.1:" + port + "/mcp"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := connect(t, ctx, url, aliceToken, nil)
	if names := toolNames(t, ctx, cs); !names["read"] {
		t.Fatalf("tools %v", names)
	}
	if r := newRawClient(t, url, "").post(initializeBody, nil); r.code != http.StatusUnauthorized {
		t.Fatalf("no token: %d", r.code)
	}
	// Any Host is answered with tokens, but web pages are still refused: an Origin must be the server itself.
	c := newRawClient(t, url, aliceToken)
	for origin, want := range map[string]int{"https://evil.example": 403, "null": 403, "http://127.0.0.1:" + port: 200} {
		if r := c.post(initializeBody, func(r *http.Request) { r.Header.Set("Origin", origin) }); r.code != want {
			t.Errorf("Origin %s: %d, want %d", origin, r.code, want)
		}
	}
	if r := c.post(initializeBody, func(r *http.Request) { r.Host = "strata.example:443" }); r.code != http.StatusOK {
		t.Errorf("Host strata.example: %d %s", r.code, r.body)
	}
}

// TestAuthSessionBoundToPrincipal: a session belongs to the principal that opened it; another principal's request
// naming it is answered as if it did not exist, and nothing runs.
func TestAuthSessionBoundToPrincipal(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	sv := startServe(t, s, "--writes", "branches", "--token-file", tokenFile(t, "alice "+aliceToken, "bob "+bobToken))
	alice := newRawClient(t, sv.url, aliceToken)
	alice.initialize()
	bob := newRawClient(t, sv.url, bobToken)
	bob.sid = alice.sid
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		r := bob.post(toolCall(3, "create_branch", `{"database":"shop","name":"bob-in-alice"}`), func(r *http.Request) { r.Method = method })
		if r.code != http.StatusNotFound {
			t.Fatalf("%s on alice's session with bob's token: %d %s", method, r.code, r.body)
		}
	}
	unknown := newRawClient(t, sv.url, bobToken)
	unknown.sid = "no-such-session"
	if r := unknown.post(toolCall(3, "list_databases", `{}`), nil); r.code != http.StatusNotFound {
		t.Fatalf("unknown session: %d %s", r.code, r.body)
	}
	// Alice's session lives on; bob has sessions of his own.
	if r := alice.post(toolCall(4, "create_branch", `{"database":"shop","name":"alice-work"}`), nil); r.code != http.StatusOK || strings.Contains(r.body, `"isError":true`) {
		t.Fatalf("alice: %d %s", r.code, r.body)
	}
	bob.sid = ""
	bob.initialize()
	if r := bob.post(toolCall(5, "list_databases", `{}`), nil); r.code != http.StatusOK || !strings.Contains(r.body, "shop") {
		t.Fatalf("bob: %d %s", r.code, r.body)
	}
	out := s.must("", "branch", "shop", "--json")
	if strings.Contains(out, "bob-in-alice") || !strings.Contains(out, "alice-work") {
		t.Fatalf("branches: %s", out)
	}
	// Revisions record their principal.
	if !regexp.MustCompile(`"name": *"alice-work",[^}]*"creator": *"alice"`).MatchString(out) {
		t.Errorf("alice's branch does not name her: %s", out)
	}
}

// TestAuthRateLimitPerPrincipal holds docs/security.md T18: a principal hammering the server gets 429 with
// Retry-After, and its refused calls do not run, while another principal's calls all succeed.
func TestAuthRateLimitPerPrincipal(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	cfg := writeFile(t, "strata.json", `{"writes":"branches","principals":{"hammer":{"rate_limit":{"calls_per_second":20,"burst":20}}}}`, 0o600)
	sv := startServe(t, s, "--config", cfg, "--token-file", tokenFile(t, "hammer "+aliceToken, "worker "+bobToken))
	hammer := newRawClient(t, sv.url, aliceToken)
	hammer.initialize()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	worker := connect(t, ctx, sv.url, bobToken, nil)

	var ok200, limited, next atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var stopOnce sync.Once
	stopHammer := func() { stopOnce.Do(func() { close(stop); wg.Wait() }) }
	defer stopHammer()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(4 * time.Millisecond) // 4 × 250/s: about 1,000 calls a second
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				n := next.Add(1)
				r, err := hammer.do(toolCall(int(n), "create_branch", fmt.Sprintf(`{"database":"shop","name":"h-%d"}`, n)), nil)
				if err != nil {
					t.Errorf("hammer: %v", err)
					return
				}
				switch r.code {
				case http.StatusOK:
					if !strings.Contains(r.body, `"result"`) || strings.Contains(r.body, `"isError":true`) {
						t.Errorf("hammer call let through failed: %s", r.body)
					}
					ok200.Add(1)
				case http.StatusTooManyRequests:
					if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 {
						t.Errorf("429 with Retry-After %q", r.header.Get("Retry-After"))
					}
					limited.Add(1)
				default:
					t.Errorf("hammer: %d %s", r.code, r.body)
				}
			}
		}()
	}
	var workerCalls int
	var slowest time.Duration
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		start := time.Now()
		res, err := worker.CallTool(ctx, &mcpsdk.CallToolParams{Name: "read", Arguments: map[string]any{"database": "shop", "resource": "doc", "path": "/a"}})
		if err != nil || res.IsError {
			t.Fatalf("worker call %d: %v %v", workerCalls, err, res)
		}
		slowest = max(slowest, time.Since(start))
		workerCalls++
		time.Sleep(20 * time.Millisecond)
	}
	stopHammer()
	t.Logf("hammer: %d sent, %d ok, %d limited; worker: %d calls, slowest %v", next.Load(), ok200.Load(), limited.Load(), workerCalls, slowest)
	if limited.Load() == 0 {
		t.Fatal("the hammering principal was never rate-limited")
	}
	if workerCalls < 10 {
		t.Fatalf("the worker made only %d calls", workerCalls)
	}
	// Refused calls did not run: only as many branches as calls let through (burst 20 + 20/s).
	out := s.must("", "branch", "shop", "--json")
	if got := int64(len(regexp.MustCompile(`"name": *"h-`).FindAllString(out, -1))); got != ok200.Load() {
		t.Fatalf("%d branches made for %d calls let through", got, ok200.Load())
	}
	if ok200.Load() > 20+20*3 {
		t.Fatalf("%d calls let through in under 3 s at 20/s, burst 20", ok200.Load())
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key, and returns a pool that trusts it.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "strata test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile = writeFile(t, "cert.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), 0o644)
	keyFile = writeFile(t, "key.pem", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})), 0o600)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestServeTLS(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	certFile, keyFile, pool := selfSigned(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"cert without key", []string{"--tls-cert", certFile}, "both or neither"},
		{"key without cert", []string{"--tls-key", keyFile}, "both or neither"},
		{"bad cert", []string{"--tls-cert", writeFile(t, "bad.pem", "not a certificate", 0o644), "--tls-key", keyFile}, "--tls-cert"},
		{"missing key", []string{"--tls-cert", certFile, "--tls-key", filepath.Join(t.TempDir(), "nope.pem")}, "nope.pem"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := s.run("", append([]string{"serve", "--listen", "127.0.0.1:0"}, tc.args...)...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stderr %q; want a usage error saying %q", code, errOut, tc.want)
			}
		})
	}
	sv := startServe(t, s, "--tls-cert", certFile, "--tls-key", keyFile, "--token-file", tokenFile(t, "alice "+aliceToken))
	if !strings.HasPrefix(sv.url, "https://") {
		t.Fatalf("url %s", sv.url)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := connect(t, ctx, sv.url, aliceToken, &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}})
	res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "read", Arguments: map[string]any{"database": "shop", "resource": "doc", "path": "/a"}})
	if err != nil || res.IsError {
		t.Fatalf("read over TLS: %v %v", err, res)
	}
	// Plain HTTP, an untrusting client and TLS 1.1 get nowhere.
	if r, err := http.Post(strings.Replace(sv.url, "https", "http", 1), "application/json", strings.NewReader(initializeBody)); err == nil {
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode == http.StatusOK {
			t.Fatalf("plain HTTP answered: %s", b)
		}
	}
	if _, err := http.Post(sv.url, "application/json", strings.NewReader(initializeBody)); err == nil {
		t.Fatal("a client that does not trust the certificate connected")
	}
	old := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS11}}}
	if _, err := old.Post(sv.url, "application/json", strings.NewReader(initializeBody)); err == nil {
		t.Fatal("TLS 1.1 accepted")
	}
}

// TestServeConfig: --config on both servers; a bad file or a contradicting --writes stops startup before the data
// directory is opened.
func TestServeConfig(t *testing.T) {
	s := newSession(t, false, nil)
	for _, tc := range []struct {
		name, config string
		args         []string
		want         []string
	}{
		{"bad JSON", `{"writes": "branches",}`, nil, []string{"--config", "line 1"}},
		{"unknown field", `{"writes": "branches", "wrties": "on"}`, nil, []string{"--config", "wrties"}},
		{"bad mode", `{"writes": "yes"}`, nil, []string{"unknown write mode"}},
		{"contradicting --writes", `{"writes": "off"}`, []string{"--writes", "on"}, []string{"--writes on contradicts", `"off"`}},
		{"bad policy", `{"principals": {"bob": {"policy": {"read": "ask"}}}}`, nil, []string{"bob", "ask"}},
	} {
		for _, command := range []string{"mcp", "serve"} {
			t.Run(command+" "+tc.name, func(t *testing.T) {
				cfg := writeFile(t, "strata.json", tc.config, 0o600)
				args := append([]string{"--data", filepath.Join(t.TempDir(), "no-data-here"), command, "--config", cfg}, tc.args...)
				var out, errOut bytes.Buffer
				code := runIn(s.e, args, strings.NewReader(""), &out, &errOut)
				if code != exitUsage {
					t.Fatalf("exit %d, want %d: %s", code, exitUsage, errOut.String())
				}
				for _, w := range tc.want {
					if !strings.Contains(errOut.String(), w) {
						t.Errorf("stderr %q does not say %q", errOut.String(), w)
					}
				}
				if strings.Contains(errOut.String(), "data directory") {
					t.Errorf("the data directory was looked at first: %s", errOut.String())
				}
			})
		}
	}
	t.Run("missing file", func(t *testing.T) {
		_, errOut, code := s.run("", "mcp", "--config", filepath.Join(t.TempDir(), "nope.json"))
		if code != exitUsage || !strings.Contains(errOut, "nope.json") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	})
}

// TestServeConfigPolicies: each principal gets its own server with its own policy.
func TestServeConfigPolicies(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	cfg := writeFile(t, "strata.json", `{"writes":"branches","principals":{"reader":{"policy":{"write":"deny","protected":"deny","admin":"deny"}}}}`, 0o600)
	sv := startServe(t, s, "--config", cfg, "--token-file", tokenFile(t, "reader "+aliceToken, "writer "+bobToken))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	writer := toolNames(t, ctx, connect(t, ctx, sv.url, bobToken, nil))
	reader := toolNames(t, ctx, connect(t, ctx, sv.url, aliceToken, nil))
	if !writer["put"] || !writer["create_branch"] || !writer["read"] {
		t.Errorf("writer's tools: %v", writer)
	}
	if !reader["read"] {
		t.Errorf("reader's tools: %v", reader)
	}
	for _, w := range []string{"put", "patch", "create_branch", "create_database", "promote"} {
		if reader[w] {
			t.Errorf("reader, whose policy denies every change, is offered %s", w)
		}
	}
}

// TestMCPConfigPrincipalIsLocalUser: over stdio the configuration's entry for the OS user applies.
func TestMCPConfigPrincipalIsLocalUser(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	cfg := writeFile(t, "strata.json", `{"writes":"branches","principals":{"ada":{"policy":{"write":"deny","protected":"deny","admin":"deny"}}}}`, 0o600)
	names := stdioTools(t, s, "--config", cfg)
	if names["put"] || !names["read"] {
		t.Errorf("ada's tools: %v", names)
	}
	cfg = writeFile(t, "strata.json", `{"writes":"branches","principals":{"someone-else":{"policy":{"write":"deny","protected":"deny","admin":"deny"}}}}`, 0o600)
	if names := stdioTools(t, s, "--config", cfg); !names["put"] {
		t.Errorf("ada's tools: %v", names)
	}
}

// stdioTools lists the tools of `strata mcp ARGS`.
func stdioTools(t *testing.T, s *session, extra ...string) map[string]bool {
	t.Helper()
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	done := make(chan int, 1)
	var stderr lockedBuffer
	go func() {
		done <- runIn(s.e, append([]string{"--data", s.data, "mcp"}, extra...), serverIn, serverOut, &stderr)
		serverOut.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcpsdk.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	names := toolNames(t, ctx, cs)
	cs.Close()
	clientOut.Close()
	if code := <-done; code != 0 {
		t.Fatalf("strata mcp exited %d: %s", code, stderr.String())
	}
	return names
}

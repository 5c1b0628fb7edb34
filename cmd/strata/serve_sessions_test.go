package main

import (
	"net/http"
	"testing"
)

// An initialize the go-sdk's handler fails (params null or of the wrong shape) is answered 200 with an
// Mcp-Session-Id, but the go-sdk closes that session at once; Auth records it all the same, so each failed
// initialize holds one of the principal's places until the sweep (session_idle + 1 min).
func TestFailedInitializeHoldsNoPlace(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	cfg := writeFile(t, "strata.json", `{"max_sessions_per_principal":2,"rate_limit":{"calls_per_second":100,"burst":100}}`, 0o600)
	sv := startServe(t, s, "--config", cfg, "--token-file", tokenFile(t, "alice "+aliceToken))
	for _, b := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5}}`,
	} {
		r := newRawClient(t, sv.url, aliceToken).post(b, nil)
		t.Logf("failed initialize: %d, Mcp-Session-Id %q", r.code, r.header.Get("Mcp-Session-Id"))
	}
	r := newRawClient(t, sv.url, aliceToken).post(initializeBody, nil)
	if r.code != http.StatusOK {
		t.Fatalf("alice has no session open, yet her initialize gets %d %s", r.code, r.body)
	}
}

// A request naming a live session but sent as MCP 2026-07-28 goes to the per-request handler, which answers an
// unknown method with 404; sessionRecorder takes any 404 on a session for "the session is gone" and forgets it,
// although the go-sdk still holds it: its client is locked out of it, and the caps no longer count it.
func TestStateless404KeepsSession(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	cfg := writeFile(t, "strata.json", `{"max_sessions_per_principal":1,"rate_limit":{"calls_per_second":100,"burst":100}}`, 0o600)
	sv := startServe(t, s, "--config", cfg, "--token-file", tokenFile(t, "alice "+aliceToken))
	c := newRawClient(t, sv.url, aliceToken)
	c.initialize()
	r := c.post(`{"jsonrpc":"2.0","id":5,"method":"no/such/method"}`, func(r *http.Request) {
		r.Header.Set("MCP-Protocol-Version", "2026-07-28")
	})
	t.Logf("stateless unknown method with the session's id: %d %s", r.code, r.body)
	if r := c.post(`{"jsonrpc":"2.0","id":6,"method":"ping"}`, nil); r.code != http.StatusOK {
		t.Errorf("the session, still open in the go-sdk, after that: %d %s", r.code, r.body)
	}
	if r := newRawClient(t, sv.url, aliceToken).post(initializeBody, nil); r.code != http.StatusTooManyRequests {
		t.Errorf("a second session with max_sessions_per_principal 1 and the first still open: %d", r.code)
	}
}

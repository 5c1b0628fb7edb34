package mcp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-db/strata/gate"
)

// TestSubscriptionsBounded: one session may hold maxSubscriptionsPerSession subscriptions, each polled every
// pollInterval (found in review: it could hold any number, memory and CPU growing with one client's requests); the
// next is refused naming the cap, a repeated one costs nothing, an unsubscribe frees a place, and a URI over
// maxURIBytes is refused. (On resources/subscribe, which answers each request: a subscriptions/listen stream is
// refused the same way, on its stream.)
func TestSubscriptionsBounded(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesOn, Protected: []string{}})
	h.ok("create_database", `{"database":"shop"}`)
	s := newRawSession(t, h, Config{})
	req := func(method, uri string) string {
		s.t.Helper()
		s.id++
		s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"uri":%q}}`, s.id, method, uri))
		m := s.read()
		return string(m["error"])
	}
	uri := func(i int) string { return fmt.Sprintf("strata://shop/r%05d", i) }
	for i := range maxSubscriptionsPerSession {
		if e := req("resources/subscribe", uri(i)); e != "" {
			t.Fatalf("subscription %d: %s", i, e)
		}
	}
	if e := req("resources/subscribe", uri(0)); e != "" {
		t.Fatalf("a repeated subscription: %s", e)
	}
	if e := req("resources/subscribe", uri(maxSubscriptionsPerSession)); !strings.Contains(e, "the most it may") {
		t.Fatalf("one over the cap: %q", e)
	}
	if e := req("resources/unsubscribe", uri(0)); e != "" {
		t.Fatal(e)
	}
	if e := req("resources/subscribe", uri(maxSubscriptionsPerSession)); e != "" {
		t.Fatalf("after an unsubscribe: %s", e)
	}
	if e := req("resources/subscribe", "strata://shop/"+strings.Repeat("a", maxURIBytes)); !strings.Contains(e, "over the limit") {
		t.Fatalf("a long URI: %q", e)
	}
}

package transport

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/strata-db/strata/gate"
)

// TestAuthOnRefusedHook: the audit hook hears of every refusal, with the principal when one was authenticated, and
// refused requests never reach the MCP handler.
func TestAuthOnRefusedHook(t *testing.T) {
	const aliceToken = "alice-0123456789abcdef0123456789abcdef"
	var mu sync.Mutex
	var heard []string
	g := NewAuth(AuthOptions{Tokens: []Token{NewToken("alice", aliceToken)}, LocalUser: "ada",
		RateLimit: func(string) gate.RateLimit { return gate.RateLimit{PerSecond: 0.001, Burst: 1} },
		OnRefused: func(principal, remote, decision string) {
			mu.Lock()
			defer mu.Unlock()
			heard = append(heard, principal+"|"+remote+"|"+decision)
		}})
	var reached []string
	h := g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = append(reached, PrincipalFrom(r.Context()))
	}))
	do := func(auth string) int {
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
		req.RemoteAddr = "192.0.2.7:5555"
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	codes := []int{do(""), do("Bearer " + aliceToken), do("Bearer " + aliceToken)}
	if want := []int{401, 200, 429}; !slices.Equal(codes, want) {
		t.Fatalf("statuses %v, want %v", codes, want)
	}
	want := []string{"|192.0.2.7|unauthenticated", "alice|192.0.2.7|rate_limited"}
	if !slices.Equal(heard, want) || !slices.Equal(reached, []string{"alice"}) {
		t.Fatalf("heard %q, reached %q", heard, reached)
	}
	g.onRefused = nil // nil-safe
	if code := do(""); code != 401 {
		t.Fatalf("status %d", code)
	}
}

package transport

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata/gate"
)

// A session busy with one long call (the go-sdk stops its idle timer while a POST is in flight, and restarts it
// when the POST ends) is swept by Auth when the call outlasts SessionIdle+1min, since Auth's "seen" is the call's
// start: the client's next request on its live session gets 404, and the caps stop counting it.
func TestLongCallKeepsSession(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	g := NewAuth(AuthOptions{LocalUser: "ada", SessionIdle: time.Minute,
		RateLimit: func(string) gate.RateLimit { return gate.RateLimit{PerSecond: 1000, Burst: 1000} }})
	g.now = clock
	inCall, finish := make(chan struct{}), make(chan struct{})
	n := 0
	h := g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Session-Id") == "" {
			n++
			w.Header().Set("Mcp-Session-Id", "s"+string(rune('0'+n)))
			w.WriteHeader(http.StatusOK)
			return
		}
		if r.Header.Get("X-Long") != "" {
			close(inCall)
			<-finish
		}
	}))
	post := func(sid, long string) int {
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"x"}`))
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		if long != "" {
			req.Header.Set("X-Long", long)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	if post("", "") != 200 { // s1
		t.Fatal("initialize")
	}
	done := make(chan int)
	go func() { done <- post("s1", "yes") }()
	select {
	case <-inCall:
	case code := <-done:
		t.Fatalf("the long call: %d", code)
	}
	advance(3 * time.Minute) // the call runs for 3 minutes
	post("", "")             // someone's initialize: a sweep
	close(finish)
	<-done
	if code := post("s1", ""); code != http.StatusOK {
		t.Fatalf("the next request on a session whose call just ended (idle for 0 s in the go-sdk): %d", code)
	}
}

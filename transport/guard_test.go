package transport

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// serveStall serves h through NewHTTPServer on a loopback port, with WriteStallTimeout shortened to d.
func serveStall(t *testing.T, d time.Duration, h http.Handler) string {
	t.Helper()
	old := WriteStallTimeout
	WriteStallTimeout = d
	t.Cleanup(func() { WriteStallTimeout = old })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := NewHTTPServer(h, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

// A client that asks for an answer and then stops reading must not hold the handler for ever: once a write has
// waited WriteStallTimeout, it fails and the handler ends.
func TestWriteStallEndsHandler(t *testing.T) {
	ended := make(chan error, 1)
	addr := serveStall(t, 200*time.Millisecond, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 1<<20))
		for i := 0; i < 4096; i++ { // 4 GiB: far more than any socket buffer holds
			if _, err := w.Write(chunk); err != nil {
				ended <- err
				return
			}
		}
		ended <- nil
	}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", addr) // and never read the answer
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the handler wrote 4 GiB to a client that reads nothing")
		}
	case <-time.After(time.Minute):
		t.Fatal("a client that stopped reading held the handler for a minute (WriteStallTimeout 200ms)")
	}
}

// The bound is on each write, not on the answer: an event stream that stays quiet for longer than
// WriteStallTimeout between two events still delivers both, and its end.
func TestWriteStallKeepsQuietStream(t *testing.T) {
	d := 100 * time.Millisecond
	addr := serveStall(t, d, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(5 * d)
		io.WriteString(w, "data: two\n\n")
		http.NewResponseController(w).Flush()
		time.Sleep(5 * d) // the server's own last write comes after this quiet
	}))
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(bufio.NewReader(resp.Body))
	if err != nil {
		t.Fatalf("the stream broke after %q: %v", body, err)
	}
	if string(body) != "data: one\n\ndata: two\n\n" {
		t.Fatalf("stream = %q", body)
	}
}

// Over HTTP/2 (strata serve with TLS) a write deadline left running would reset a quiet stream when it passes.
func TestWriteStallKeepsQuietStreamHTTP2(t *testing.T) {
	d := 100 * time.Millisecond
	old := WriteStallTimeout
	WriteStallTimeout = d
	t.Cleanup(func() { WriteStallTimeout = old })
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			http.Error(w, "not HTTP/2: "+r.Proto, http.StatusBadRequest)
			return
		}
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(5 * d)
		io.WriteString(w, "data: two\n\n")
	}), nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	defer ts.Close()
	resp, err := ts.Client().Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != "data: one\n\ndata: two\n\n" {
		t.Fatalf("stream = %q, %v", body, err)
	}
}

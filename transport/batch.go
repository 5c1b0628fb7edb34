package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
)

// JSON-RPC batches (protocol 2025-03-26 and earlier): one POST may carry many calls, and each counts against the
// principal's rate limit. The calls the limit lets through run, as a batch of their own; the others are answered,
// in the same response, with a JSON-RPC error that says when to retry. A batch of more than MaxBatch messages is
// refused whole.

// codeRateLimited is the JSON-RPC error code of a call in a batch over the rate limit (the implementation-defined
// server-error range).
const codeRateLimited = -32029

// readBody reads a request's body and puts it back for the next handler.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, err
}

// isBatch reports whether a body is a JSON array (a batch).
func isBatch(body []byte) bool {
	b := bytes.TrimLeft(body, " \t\r\n")
	return len(b) > 0 && b[0] == '['
}

type batchMessage struct {
	raw    json.RawMessage
	id     json.RawMessage // a request's id; nil for a notification or a response
	method string
}

func (g *Auth) batch(w http.ResponseWriter, r *http.Request, principal string, body []byte, next http.Handler, sid []string) {
	var raws []json.RawMessage
	if err := json.Unmarshal(body, &raws); err != nil {
		next.ServeHTTP(w, r) // malformed: the MCP handler says so
		return
	}
	if len(raws) > MaxBatch {
		http.Error(w, fmt.Sprintf("a JSON-RPC batch of %d messages: the most this server takes is %d; send fewer at a time", len(raws), MaxBatch), http.StatusRequestEntityTooLarge)
		return
	}
	msgs := make([]batchMessage, len(raws))
	calls := 0
	for i, raw := range raws {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal(raw, &m)
		msgs[i] = batchMessage{raw: raw, method: m.Method}
		if m.Method != "" {
			calls++
			if len(m.ID) > 0 && string(m.ID) != "null" {
				msgs[i].id = m.ID
			}
		}
	}
	if calls == 0 {
		// Responses to the server's requests (an elicitation's answer), or nothing: no call to count, and none to
		// refuse (found in review: such a batch got 429 however many tokens were left, and its client retried
		// forever). The MCP handler takes or refuses it.
		g.serve(w, r, principal, sid, next)
		return
	}
	lim := g.limiter(principal)
	now := g.now()
	allowed := min(calls, int(math.Floor(lim.TokensAt(now))))
	if allowed < calls {
		g.refused(principal, r, RefusedRateLimited)
	}
	if allowed <= 0 {
		res := lim.ReserveN(now, 1)
		d := res.DelayFrom(now)
		res.CancelAt(now)
		tooMany(w, d, "rate limit of principal "+principal+" exceeded")
		return
	}
	lim.AllowN(now, allowed)
	if allowed == calls {
		g.serve(w, r, principal, sid, next)
		return
	}
	// Run the first calls the limit lets through; answer the others as rate-limited.
	var kept []json.RawMessage
	var refusedIDs []json.RawMessage
	n := 0
	for _, m := range msgs {
		switch {
		case m.method == "":
			kept = append(kept, m.raw) // a response to the server: no call
		case n < allowed:
			kept = append(kept, m.raw)
			n++
		case m.id != nil:
			refusedIDs = append(refusedIDs, m.id)
		}
	}
	reduced, _ := json.Marshal(kept)
	r.Body = io.NopCloser(bytes.NewReader(reduced))
	r.ContentLength = int64(len(reduced))
	retry := int64(math.Ceil(float64(calls-allowed) / max(float64(lim.Limit()), 1e-9)))
	errs := make([][]byte, len(refusedIDs))
	for i, id := range refusedIDs {
		errs[i], _ = json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   any             `json:"error"`
		}{"2.0", id, map[string]any{"code": codeRateLimited,
			"message": fmt.Sprintf("Too Many Requests: rate limit of principal %s exceeded; this call did not run; retry after %d s", principal, max(retry, 1)),
			"data":    map[string]any{"retry_after": max(retry, 1)}}})
	}
	bw := &batchWriter{w: w}
	g.serve(bw, r, principal, sid, next)
	if bw.stream {
		// The calls' answers went out as they came (a call may ask the client something midway, and wait for the
		// answer: found in review, a buffered stream held that question back until the client gave up); the
		// refusals follow as events of their own.
		for _, e := range errs {
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", e)
		}
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		return
	}
	out := bw.body.Bytes()
	if strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		var arr []json.RawMessage
		if json.Unmarshal(out, &arr) == nil {
			for _, e := range errs {
				arr = append(arr, e)
			}
			out, _ = json.Marshal(arr)
		}
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(bw.code())
	w.Write(out)
}

// batchWriter is the answer to the calls of a batch the rate limit cut short: an event stream passes straight
// through (with the refusals to follow), any other answer is kept to have the refusals joined to it.
type batchWriter struct {
	w      http.ResponseWriter
	status int
	stream bool
	body   bytes.Buffer
}

func (b *batchWriter) Header() http.Header { return b.w.Header() }

func (b *batchWriter) WriteHeader(code int) {
	if b.status != 0 {
		return
	}
	b.status = code
	if strings.HasPrefix(b.w.Header().Get("Content-Type"), "text/event-stream") {
		b.stream = true
		b.w.Header().Del("Content-Length")
		b.w.WriteHeader(code)
	}
}

func (b *batchWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.WriteHeader(http.StatusOK)
	}
	if b.stream {
		return b.w.Write(p)
	}
	return b.body.Write(p)
}

func (b *batchWriter) Flush() {
	if f, ok := b.w.(http.Flusher); ok && b.stream {
		f.Flush()
	}
}

func (b *batchWriter) code() int {
	if b.status == 0 {
		return http.StatusOK
	}
	return b.status
}

// serve passes a request on to next, recording the session it opens or ends.
func (g *Auth) serve(w http.ResponseWriter, r *http.Request, principal string, sid []string, next http.Handler) {
	if len(sid) == 1 {
		next.ServeHTTP(&sessionRecorder{ResponseWriter: w, g: g, principal: principal, sid: sid[0], method: r.Method}, r)
		return
	}
	res, _ := r.Context().Value(reservationKey{}).(*reservation)
	rec := &sessionRecorder{ResponseWriter: w, g: g, principal: principal, res: res}
	next.ServeHTTP(rec, r)
	if rec.recorded != "" && g.sessionLive != nil && !g.sessionLive(principal, rec.recorded) {
		// The handler gave the session out and closed it (its initialize failed): it holds no place (found in
		// review: each failed initialize kept one until the sweep, and 64 of them locked the principal out).
		g.forgetSession(rec.recorded)
	}
}

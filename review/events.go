package review

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// The live plan queue: /ui/events is a stream of server-sent events, one call (one audit record) however long it
// lasts. It looks for plans every PollInterval, as the principal sees them, and sends an event "plans" with the
// number of pending plans and a fingerprint of their ids each time they change; the page's script then fetches the
// queue again. Without the script the page works the same, reloaded by hand.

// keepAlive is how often a quiet stream sends a comment (a dead client is noticed when the write fails).
const keepAlive = 25 * time.Second

// maxStreamAge ends a stream after this long; the browser's EventSource reconnects by itself.
const maxStreamAge = 30 * time.Minute

func (h *Handler) events(q *req) error {
	fl, ok := q.w.(http.Flusher)
	if !ok {
		return fmt.Errorf("the connection cannot stream events")
	}
	h.mu.Lock()
	if h.streams >= maxStreams {
		h.mu.Unlock()
		q.w.Header().Set("Retry-After", "30")
		http.Error(q.w, "Service Unavailable: too many event streams open", http.StatusServiceUnavailable)
		return nil
	}
	h.streams++
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.streams--
		h.mu.Unlock()
	}()
	hd := q.w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	q.w.WriteHeader(http.StatusOK)
	// It ends with the session, or after maxStreamAge.
	tick := time.NewTicker(h.o.PollInterval)
	defer tick.Stop()
	start, last, sent := time.Now(), "", time.Now()
	for {
		if h.lookup(q.r, false) == nil {
			fmt.Fprint(q.w, "event: signed-out\ndata: {}\n\n")
			fl.Flush()
			return nil
		}
		n, fp := h.pendingCount(q.ctx, q.a)
		if !q.s.reviewer() {
			n, fp = 0, ""
		}
		if fp != last {
			b, _ := json.Marshal(map[string]any{"pending": n, "fingerprint": fp})
			if _, err := fmt.Fprintf(q.w, "event: plans\ndata: %s\n\n", b); err != nil {
				return nil
			}
			fl.Flush()
			last, sent = fp, time.Now()
		} else if time.Since(sent) > keepAlive {
			if _, err := fmt.Fprint(q.w, ": keep-alive\n\n"); err != nil {
				return nil
			}
			fl.Flush()
			sent = time.Now()
		}
		if time.Since(start) > maxStreamAge {
			return nil
		}
		select {
		case <-q.ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

package mcp

import (
	"context"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Progress and cancellation (docs/design.md §3.7). Every tool call goes through server.handler, which runs the tool with
// the request's own context: the go-sdk cancels it when the client sends notifications/cancelled, and queries,
// diffs and history walks stop at their next check (a commit that has begun is finished by the snapshots writer).
// When the call carries a progress token, the handler also reports progress while the tool runs.

// progressInterval is how often a running call reports progress after its first report.
const progressInterval = 250 * time.Millisecond

// startProgress reports the progress of a tool call that asked for it (its request carries a progress token): one
// notification at once, then one every progressInterval while the tool runs. Progress is the milliseconds elapsed
// (strictly increasing; the total is unknown). The returned stop ends the reports and returns only when none is being
// sent, so that no report follows the result. Without a token, or without a session, nothing is sent.
func (s *server) startProgress(ctx context.Context, req *mcpsdk.CallToolRequest, tool string) (stop func()) {
	if req == nil || req.Session == nil || req.Params == nil {
		return func() {}
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return func() {}
	}
	start := time.Now()
	msg := tool + ": running"
	last := -1.0
	notify := func() {
		p := float64(time.Since(start).Milliseconds())
		if p <= last {
			p = last + 1
		}
		last = p
		err := req.Session.NotifyProgress(ctx, &mcpsdk.ProgressNotificationParams{ProgressToken: token, Progress: p, Message: msg})
		if err != nil && ctx.Err() == nil {
			s.cfg.Logger.Debug("progress notification not sent", "tool", tool, "error", err)
		}
	}
	// The first report is sent before the tool starts, so it always precedes the result.
	notify()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(progressInterval)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tk.C:
			}
			// The tool may have returned while the ticker fired: check again, so that a report is never sent after stop.
			select {
			case <-done:
				return
			default:
			}
			notify()
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}

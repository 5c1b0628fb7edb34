package main

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	strataMCP "github.com/strata-db/strata/mcp"
)

// logSink is the server log's writer: it gathers records and writes them to stderr in one write(2) at most
// logFlushDelay after the first of them, or as soon as logFlushBytes are waiting, so that a request's log line does
// not cost the request a system call of its own (measured: the request log was most of what metrics and logs added
// to a read over pipes, BenchmarkReadToolTelemetry). Records at warn and above are written at once
// (flushingHandler), and the server flushes before it writes to stderr itself and when it stops.
type logSink struct {
	mu      sync.Mutex
	w       io.Writer
	buf     []byte
	pending bool // a flush is scheduled
}

const (
	logFlushDelay = 20 * time.Millisecond
	logFlushBytes = 32 << 10
)

func newLogSink(w io.Writer) *logSink { return &logSink{w: w} }

// Write takes one record (a handler writes each in one call). It never fails: a failed write to stderr has nowhere
// to be reported.
func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	if len(s.buf) >= logFlushBytes {
		s.flushLocked()
	} else if !s.pending {
		s.pending = true
		time.AfterFunc(logFlushDelay, s.Flush)
	}
	return len(p), nil
}

// Flush writes what is waiting.
func (s *logSink) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
}

func (s *logSink) flushLocked() {
	s.pending = false
	if len(s.buf) == 0 {
		return
	}
	_, _ = s.w.Write(s.buf)
	if cap(s.buf) > 4*logFlushBytes {
		s.buf = nil // a burst's buffer is not kept
	} else {
		s.buf = s.buf[:0]
	}
}

// flushingHandler writes records at warn and above through to stderr at once, with whatever was waiting before them.
type flushingHandler struct {
	slog.Handler
	sink *logSink
}

func (h flushingHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		h.sink.Flush()
	}
	return err
}

func (h flushingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return flushingHandler{h.Handler.WithAttrs(as), h.sink}
}

func (h flushingHandler) WithGroup(name string) slog.Handler {
	return flushingHandler{h.Handler.WithGroup(name), h.sink}
}

// requestLog writes the request log's lines from a goroutine of its own, so that formatting a request's line is not
// part of its round trip: the request's handler only queues what it was and when it ended. When the queue is full
// the line is written by the handler itself, so that no line is ever dropped. Flush writes everything queued (the
// server flushes before its own lines, such as "stopped", and at close).
type requestLog struct {
	logger *slog.Logger
	sink   *logSink
	queue  chan requestEntry
	done   chan struct{}
	mu     sync.RWMutex // held to send on queue (read) and to close it (write)
	closed bool
}

type requestEntry struct {
	at    time.Time
	ri    strataMCP.RequestInfo
	flush chan struct{} // a Flush waiting for the lines queued before it
}

func newRequestLog(logger *slog.Logger, sink *logSink) *requestLog {
	l := &requestLog{logger: logger, sink: sink, queue: make(chan requestEntry, 1024), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for e := range l.queue {
			if e.flush != nil {
				close(e.flush)
				continue
			}
			writeRequest(l.logger, e.at, e.ri)
		}
	}()
	return l
}

// log queues one request's line.
func (l *requestLog) log(ri strataMCP.RequestInfo) {
	if !l.logger.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	e := requestEntry{at: time.Now(), ri: ri}
	l.mu.RLock()
	if !l.closed {
		select {
		case l.queue <- e:
			l.mu.RUnlock()
			return
		default:
		}
	}
	l.mu.RUnlock()
	writeRequest(l.logger, e.at, e.ri) // a full queue, or a request answered after the server closed
}

// Flush hands the lines queued so far to the sink (whose Flush writes them).
func (l *requestLog) Flush() {
	if l == nil {
		return
	}
	l.mu.RLock()
	if !l.closed {
		done := make(chan struct{})
		l.queue <- requestEntry{flush: done}
		<-done
	}
	l.mu.RUnlock()
}

// Close writes what is queued and stops the goroutine; nothing may be logged through l after it.
func (l *requestLog) Close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.queue)
	}
	l.mu.Unlock()
	<-l.done
	l.sink.Flush()
}

package transport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// SyncWriter serialises whole writes: the framer's error answers and the server's messages share stdout.
type SyncWriter struct {
	mu      sync.Mutex
	W       io.Writer
	written func(p []byte) // the framer's, told of every message written (it waits for answers at the input's end)
}

func (s *SyncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.W.Write(p)
	if s.written != nil && err == nil {
		s.written(p)
	}
	return n, err
}

func (*SyncWriter) Close() error { return nil }

// MaxStdioLine bounds one line of stdin (one JSON-RPC message), as the HTTP transport bounds a body.
const MaxStdioLine = MaxBodyBytes

// stdioFramer splits stdin into lines and passes on only those that are one JSON-RPC message. The go-sdk decodes
// stdin as one JSON stream and ends the session at the first malformed byte (docs/security.md T13); here a bad line is
// answered with a JSON-RPC error (parse error, or invalid request) and skipped, and the session goes on. Blank lines
// are skipped. Batches are refused: MCP dropped them in 2025-06-18, and the go-sdk ends the session on one it does
// not accept.
//
// At the end of the input, the framer waits, before it tells the server so, until every request it passed on has
// been answered on out (when out is a SyncWriter, which tells it what is written): the go-sdk ends the session at
// the input's end and drops the requests still running, so `strata mcp < requests.jsonl` answered nothing (found in
// review). It waits at most DrainLimit, and not past Close.
type stdioFramer struct {
	r       *bufio.Reader
	out     io.Writer
	pending []byte // the rest of the line being handed over
	err     error

	mu       sync.Mutex
	waiting  map[string]bool // ids of the requests passed on and not yet answered
	answered chan struct{}   // signalled when a request is answered
	closed   chan struct{}
	once     sync.Once
}

// DrainLimit bounds how long the stdio framer waits, at the end of its input, for the answers to the requests it
// passed on (a query's deadline is 30 s by default; a confirmation asked of a client that has gone never comes).
var DrainLimit = 2 * time.Minute

// NewStdioFramer reads JSON-RPC messages from in, one a line, answering bad lines on out (see stdioFramer).
func NewStdioFramer(in io.Reader, out io.Writer) io.ReadCloser {
	f := &stdioFramer{r: bufio.NewReaderSize(in, 64<<10), out: out, waiting: map[string]bool{},
		answered: make(chan struct{}, 1), closed: make(chan struct{})}
	if sw, ok := out.(*SyncWriter); ok {
		sw.mu.Lock()
		sw.written = f.written
		sw.mu.Unlock()
	}
	return f
}

func (f *stdioFramer) Close() error {
	f.once.Do(func() { close(f.closed) })
	return nil
}

// messageID is the canonical text of a message's id, and whether it is a request (it has a method) or not.
func messageID(line []byte) (id string, request, ok bool) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(line, &m) != nil || len(m.ID) == 0 || string(m.ID) == "null" {
		return "", false, false
	}
	var v any
	if json.Unmarshal(m.ID, &v) != nil {
		return "", false, false
	}
	jid, err := jsonrpc.MakeID(v)
	if err != nil || !jid.IsValid() {
		return "", false, false
	}
	return fmt.Sprintf("%T:%v", jid.Raw(), jid.Raw()), m.Method != "", true
}

// cancelledID is the canonical id of the request a notifications/cancelled names.
func cancelledID(line []byte) (string, bool) {
	var m struct {
		Method string `json:"method"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method != "notifications/cancelled" || len(m.Params.RequestID) == 0 {
		return "", false
	}
	id, _, ok := messageID([]byte(`{"id":` + string(m.Params.RequestID) + `}`))
	return id, ok
}

// written notes the answers among the messages written out.
func (f *stdioFramer) written(p []byte) {
	id, request, ok := messageID(bytes.TrimSpace(p))
	if !ok || request {
		return
	}
	f.mu.Lock()
	if f.waiting[id] {
		delete(f.waiting, id)
		select {
		case f.answered <- struct{}{}:
		default:
		}
	}
	f.mu.Unlock()
}

// drain waits until every request passed on has been answered, DrainLimit has passed, or the framer is closed.
func (f *stdioFramer) drain() {
	if _, ok := f.out.(*SyncWriter); !ok {
		return
	}
	limit := time.NewTimer(DrainLimit)
	defer limit.Stop()
	for {
		f.mu.Lock()
		n := len(f.waiting)
		f.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-f.answered:
		case <-limit.C:
			return
		case <-f.closed:
			return
		}
	}
}

func (f *stdioFramer) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.err != nil {
			if errors.Is(f.err, io.EOF) {
				f.drain()
			}
			return 0, f.err
		}
		line, err := f.readLine()
		if err != nil {
			f.err = err
		}
		if line != nil {
			f.pending = line
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// readLine returns the next acceptable line, with its newline, or nil when the line was skipped.
func (f *stdioFramer) readLine() ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := f.r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > MaxStdioLine {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			f.reject(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message longer than %d bytes; skipped", MaxStdioLine))
			return nil, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			return nil, err
		}
		if !f.check(line) {
			return nil, err
		}
		// Only the message and its newline: the go-sdk ends the session on anything after a value but a newline.
		msg := bytes.TrimSpace(line)
		if id, request, ok := messageID(msg); ok && request {
			f.mu.Lock()
			f.waiting[id] = true
			f.mu.Unlock()
		} else if id, ok := cancelledID(msg); ok {
			f.mu.Lock()
			delete(f.waiting, id) // a cancelled request may get no answer
			f.mu.Unlock()
		}
		return append(msg, '\n'), err
	}
}

// check reports whether a line is one JSON-RPC message, and answers it with an error when it is not.
func (f *stdioFramer) check(line []byte) bool {
	line = bytes.TrimSpace(line)
	if !json.Valid(line) {
		f.reject(nil, jsonrpc.CodeParseError, "parse error: the line is not one JSON value")
		return false
	}
	if line[0] == '[' {
		f.reject(nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported: send one message per line")
		return false
	}
	if d := duplicateMember(line); d != "" {
		f.reject(idOf(line), jsonrpc.CodeInvalidRequest, "invalid request: "+duplicateError(d))
		return false
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if res, ok := msg.(*jsonrpc.Response); err == nil && ok && res.Result == nil && res.Error == nil {
		err = errors.New("a response with neither result nor error")
	}
	if err != nil {
		f.reject(idOf(line), jsonrpc.CodeInvalidRequest, "invalid request: not a JSON-RPC 2.0 message")
		return false
	}
	return true
}

// idOf is the id of a malformed message, when it is a valid id (null otherwise).
func idOf(line []byte) any {
	var m struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(line, &m) != nil {
		return nil
	}
	if _, err := jsonrpc.MakeID(m.ID); err != nil {
		return nil
	}
	return m.ID
}

// reject answers a line that is not passed on with a JSON-RPC error response.
func (f *stdioFramer) reject(id any, code int64, msg string) {
	data, err := json.Marshal(struct {
		JSONRPC string        `json:"jsonrpc"`
		ID      any           `json:"id"`
		Error   jsonrpc.Error `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: msg}})
	if err != nil {
		return
	}
	f.out.Write(append(data, '\n'))
}

package transport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// SyncWriter serialises whole writes: the framer's error answers and the server's messages share stdout.
type SyncWriter struct {
	mu sync.Mutex
	W  io.Writer
}

func (s *SyncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.W.Write(p)
}

func (*SyncWriter) Close() error { return nil }

// MaxStdioLine bounds one line of stdin (one JSON-RPC message), as the HTTP transport bounds a body.
const MaxStdioLine = MaxBodyBytes

// stdioFramer splits stdin into lines and passes on only those that are one JSON-RPC message. The go-sdk decodes
// stdin as one JSON stream and ends the session at the first malformed byte (docs/security.md T13); here a bad line is
// answered with a JSON-RPC error (parse error, or invalid request) and skipped, and the session goes on. Blank lines
// are skipped. Batches are refused: MCP dropped them in 2025-06-18, and the go-sdk ends the session on one it does
// not accept.
type stdioFramer struct {
	r       *bufio.Reader
	out     io.Writer
	pending []byte // the rest of the line being handed over
	err     error
}

// NewStdioFramer reads JSON-RPC messages from in, one a line, answering bad lines on out (see stdioFramer).
func NewStdioFramer(in io.Reader, out io.Writer) io.ReadCloser {
	return &stdioFramer{r: bufio.NewReaderSize(in, 64<<10), out: out}
}

func (f *stdioFramer) Close() error { return nil }

func (f *stdioFramer) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.err != nil {
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
		return append(bytes.TrimSpace(line), '\n'), err
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

package query

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The worker protocol: frames of one type byte, a 4-byte big-endian length and the payload, over the worker's
// stdin (requests) and stdout (answers).
//
//	worker → engine  'H' hello (payload: protocol version), once at start
//	engine → worker  'Q' request (JSON wireRequest), then 'I' input chunks, then an empty 'I' (end of input)
//	worker → engine  'R' one result (JSON text) …, then 'D' done (JSON wireDone) or 'E' error (JSON wireError)
const (
	frameHello  = 'H'
	frameQuery  = 'Q'
	frameInput  = 'I'
	frameResult = 'R'
	frameDone   = 'D'
	frameError  = 'E'

	protocolVersion = "strata-query-worker/1"
	maxFrame        = 1 << 30 // no frame is larger (input comes in 64 KiB chunks; results are capped well below)
)

// wireRequest is one query for a worker.
type wireRequest struct {
	Mode      string   `json:"mode"`    // "run" or "transform"
	Program   string   `json:"program"` // the program as the caller gave it
	Vars      []string `json:"vars"`
	Values    string   `json:"values"` // JSON array of the parameter values, in Vars order
	Stop      int      `json:"stop"`   // pushed-down steps already applied to the input (-1: none; run the whole program)
	Skip      int      `json:"skip"`   // results to skip (the cursor's offset)
	Limit     int      `json:"limit"`  // results to return
	MaxBytes  int      `json:"max_bytes"`
	TimeoutNS int64    `json:"timeout_ns"` // time left
	LimitNS   int64    `json:"limit_ns"`   // the engine's time limit, for messages
	Caller    bool     `json:"caller"`     // the caller's deadline, not the engine's, is the one that binds
	Budget    int64    `json:"budget"`     // memory the query may use beyond the worker's footprint when it starts
	InputSize int64    `json:"input_size"` // bytes of input JSON that follow
}

// wireDone ends a successful answer.
type wireDone struct {
	More   bool  `json:"more"`
	VmData int64 `json:"vm_data"` // the worker's data segment after the query, bytes
}

// wireError ends a failed answer.
type wireError struct {
	Kind   string `json:"kind"` // "query", "limit" or "timeout"
	Msg    string `json:"msg"`
	Offset int    `json:"offset"`
	VmData int64  `json:"vm_data"` // as in wireDone
}

func (e *wireError) toError(program string) error {
	qe := &QueryError{Program: program, Offset: e.Offset, Msg: e.Msg, Err: ErrQuery}
	switch e.Kind {
	case "limit":
		qe.Err = ErrLimit
	case "timeout":
		qe.Err = ErrTimeout
	}
	return qe
}

func fromError(err error) *wireError {
	var qe *QueryError
	if errors.As(err, &qe) {
		kind := "query"
		switch qe.Err {
		case ErrLimit:
			kind = "limit"
		case ErrTimeout:
			kind = "timeout"
		}
		return &wireError{Kind: kind, Msg: qe.Msg, Offset: qe.Offset}
	}
	return &wireError{Kind: "query", Msg: clipMessage(err.Error()), Offset: -1}
}

func writeFrame(w io.Writer, typ byte, payload []byte) error {
	var hdr [5]byte
	hdr[0] = typ
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(payload)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

// readFrame reads one frame, reusing buf for the payload when it is large enough.
func readFrame(r io.Reader, buf []byte) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("frame of %d bytes is over the protocol limit", n)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return hdr[0], buf, nil
}

// chunkWriter frames everything written to it as input chunks of at most 64 KiB.
type chunkWriter struct {
	w   io.Writer
	n   int64
	max int64 // refuse to send more than this (0: no limit)
}

var errInputTooBig = errors.New("input over the worker's limit")

func (c *chunkWriter) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		n := min(len(p), 64<<10)
		if c.max > 0 && c.n+int64(n) > c.max {
			return total - len(p), errInputTooBig
		}
		if err := writeFrame(c.w, frameInput, p[:n]); err != nil {
			return total - len(p), err
		}
		c.n += int64(n)
		p = p[n:]
	}
	return total, nil
}

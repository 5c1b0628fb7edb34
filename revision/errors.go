package revision

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error this package returns wraps one of them, so callers map errors with errors.Is; the
// MCP layer turns each into a stable code in one place.
var (
	// ErrNotFound: a path names a member or element that does not exist.
	ErrNotFound = errors.New("not found")
	// ErrInvalidPath: a JSON Pointer is malformed, steps into a scalar, or uses an index that is not a number.
	ErrInvalidPath = errors.New("invalid path")
	// ErrInvalidJSON: input is not valid JSON (syntax, invalid UTF-8, duplicate keys, nesting too deep).
	ErrInvalidJSON = errors.New("invalid JSON")
	// ErrInvalidPatch: a JSON Patch is malformed (unknown op, missing field, move into own child).
	ErrInvalidPatch = errors.New("invalid patch")
	// ErrTestFailed: a patch "test" operation found a different value.
	ErrTestFailed = errors.New("test failed")
	// ErrLimit: a caller-set limit (diff work, output size) was reached.
	ErrLimit = errors.New("limit exceeded")
	// ErrResolution: a merge resolution names a path that is not in conflict, or a side that is not ours or theirs.
	ErrResolution = errors.New("invalid resolution")
)

// PathError reports a failure at a JSON Pointer inside a document.
type PathError struct {
	Op         string   // what was being done: "get", "add", "remove", …
	Path       string   // the full pointer asked for
	At         string   // the prefix of Path where the failure was found
	Msg        string   // what is wrong, in plain words
	DidYouMean []string // the closest existing member names, when a member was not found
	Err        error    // ErrNotFound, ErrInvalidPath, ErrTestFailed
}

func (e *PathError) Error() string {
	var b strings.Builder
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(" ")
	}
	fmt.Fprintf(&b, "%q: %s", e.Path, e.Msg)
	if len(e.DidYouMean) > 0 {
		fmt.Fprintf(&b, " (did you mean %s?)", quoteList(e.DidYouMean))
	}
	return b.String()
}

func (e *PathError) Unwrap() error { return e.Err }

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, " or ")
}

// JSONError reports invalid JSON input, with the byte offset and, when known, the pointer of the value at fault.
type JSONError struct {
	Offset       int64
	Line, Column int
	Path         string // pointer of the enclosing value, when known
	Msg          string
}

func (e *JSONError) Error() string {
	s := "invalid JSON"
	if e.Line > 0 {
		s += fmt.Sprintf(" at line %d, column %d (byte %d)", e.Line, e.Column, e.Offset)
	}
	if e.Path != "" {
		s += fmt.Sprintf(" in %q", e.Path)
	}
	return s + ": " + e.Msg
}

func (e *JSONError) Unwrap() error { return ErrInvalidJSON }

// PatchError reports which operation of a patch failed and why; nothing of the patch was applied.
type PatchError struct {
	Index int    // 0-based position of the operation in the patch
	Op    string // its "op"
	Err   error
}

func (e *PatchError) Error() string {
	return fmt.Sprintf("patch operation %d (%s): %v; nothing was applied", e.Index, e.Op, e.Err)
}

func (e *PatchError) Unwrap() error { return e.Err }

package revision

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/strata-db/strata/store"
)

// Sentinel errors. Every error this package returns wraps one of them, so callers map errors with errors.Is; the
// MCP layer turns each into a stable code in one place.
var (
	// ErrNotFound: a path names a member or element that does not exist. It is store.ErrNotFound, the one not-found
	// sentinel of every package (snapshots.ErrNotFound too).
	ErrNotFound = store.ErrNotFound
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
	// Have and Want, for an old_value precondition that failed: the value found there (empty if none) and the one
	// expected, as JSON (values over a few hundred bytes are described by kind and size instead).
	Have, Want string
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
	if e.Want != "" {
		if e.Have != "" {
			fmt.Fprintf(&b, " (it is %s; old_value is %s)", e.Have, e.Want)
		} else {
			fmt.Fprintf(&b, " (old_value is %s)", e.Want)
		}
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
		s += fmt.Sprintf(" in %q", clipPointer(e.Path))
	}
	return s + ": " + e.Msg
}

// clipPointer shortens a pointer for a message: a value nested hundreds of levels deep has a pointer of thousands
// of bytes, which says no more than its start, its end and its length.
func clipPointer(p string) string {
	const keep = 40
	if len(p) <= 3*keep {
		return p
	}
	head, tail := p[:keep], p[len(p)-keep:]
	for len(head) > 0 && !utf8.RuneStart(p[len(head)]) {
		head = head[:len(head)-1]
	}
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	return fmt.Sprintf("%s…(%d levels)…%s", head, strings.Count(p, "/"), tail)
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

package snapshots

import (
	"errors"
	"fmt"
	"strings"

	"github.com/strata-db/strata/store"
)

// Sentinel errors. Every error this package returns wraps one of them (or one of package revision's), so the MCP
// and CLI layers map them to stable codes in one place.
var (
	// ErrNotFound: a database, resource, branch, snapshot or revision does not exist. It is store.ErrNotFound, the
	// one not-found sentinel of every package (revision.ErrNotFound too).
	ErrNotFound = store.ErrNotFound
	// ErrInvalidArgument: a name or argument is malformed.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrConflict: the branch head is not the expected one, or a name is already taken.
	ErrConflict = errors.New("conflict")
	// ErrClosed: the database was closed.
	ErrClosed = errors.New("database is closed")
)

// NotFoundError names what was not found and the closest existing names.
type NotFoundError struct {
	What       string // "database", "resource", "branch", "snapshot", "revision", "branch or snapshot"
	Name       string
	DidYouMean []string
	Hint       string
}

func (e *NotFoundError) Error() string {
	s := fmt.Sprintf("%s %q not found", e.What, e.Name)
	if len(e.DidYouMean) > 0 {
		q := make([]string, len(e.DidYouMean))
		for i, n := range e.DidYouMean {
			q[i] = fmt.Sprintf("%q", n)
		}
		s += fmt.Sprintf(" (did you mean %s?)", strings.Join(q, " or "))
	}
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// ConflictError reports a write refused because its branch moved, or a name that is taken.
type ConflictError struct {
	Branch   string
	Head     uint64 // the branch's current head
	Expected uint64
	Msg      string
}

func (e *ConflictError) Error() string {
	if e.Msg != "" {
		return e.Msg
	}
	return fmt.Sprintf("branch %s is at revision %d, not %d; read it again and retry on head %d", e.Branch, e.Head, e.Expected, e.Head)
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}

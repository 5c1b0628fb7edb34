package gate

import (
	"context"
	"errors"
	"fmt"

	"github.com/strata-db/strata/query"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/store"
)

// The stable error codes (docs/design.md §3.4). Every front end shows them: MCP results begin with them, the command
// line maps them to exit codes, the review page to HTTP statuses. Clients and tests rely on them: keep them stable.
const (
	CodeNotFound             = "NOT_FOUND"
	CodeInvalidArgument      = "INVALID_ARGUMENT"
	CodeInvalidPath          = "INVALID_PATH"
	CodeConflict             = "CONFLICT"
	CodePlanChanged          = "PLAN_CHANGED"
	CodePlanExpired          = "PLAN_EXPIRED"
	CodeConfirmationRequired = "CONFIRMATION_REQUIRED"
	CodeDenied               = "DENIED"
	CodeQueryError           = "QUERY_ERROR"
	CodeQueryTimeout         = "QUERY_TIMEOUT"
	CodeLimitExceeded        = "LIMIT_EXCEEDED"
	CodeSchemaViolation      = "SCHEMA_VIOLATION"
	CodeUnavailable          = "UNAVAILABLE"
)

// Codes lists every code, in name order.
var Codes = []string{CodeConfirmationRequired, CodeConflict, CodeDenied, CodeInvalidArgument, CodeInvalidPath,
	CodeLimitExceeded, CodeNotFound, CodePlanChanged, CodePlanExpired, CodeQueryError, CodeQueryTimeout, CodeSchemaViolation,
	CodeUnavailable}

// Sentinels of the gate's own refusals.
var (
	// ErrDenied: the policy denies the call. Its message says that the operator disabled it, never how to enable it.
	ErrDenied = errors.New("disabled by the operator")
	// ErrConfirmationRequired: a plan waits for a person's confirmation, which has not come (or was declined).
	ErrConfirmationRequired = errors.New("confirmation required")
)

// Coded is an error that carries its code itself: the gate's refusals, and a front end's own argument errors.
type Coded interface {
	error
	Code() string
}

// Error is an error with a code, a message that says what was wrong and what to do, and an optional hint. It wraps
// what caused it, if anything.
type Error struct {
	code string
	Msg  string
	Hint string
	// Detail is text that may quote stored data or an agent's words (a rejection's reason): front ends show it only
	// where untrusted text is marked as such.
	Detail string
	Err    error
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }
func (e *Error) Code() string  { return e.code }

// Errorf makes an Error with a code.
func Errorf(code, format string, args ...any) *Error {
	return &Error{code: code, Msg: fmt.Sprintf(format, args...)}
}

// WithHint sets the error's hint.
func (e *Error) WithHint(format string, args ...any) *Error {
	e.Hint = fmt.Sprintf(format, args...)
	return e
}

// denied refuses a call the policy denies. It says that the operator disabled it, never how to enable it.
func denied(what string) error {
	return &Error{code: CodeDenied, Msg: what + " is disabled by the operator; nothing was done", Err: ErrDenied}
}

// FileFault reports an error about a database's file (damaged, of another format, in use, stopped after an I/O
// failure), whose message names a path on the server: a front end shows its caller FileFaultMessage instead, and
// leaves the file's name and the cause to the operator's log.
func FileFault(err error) bool {
	for _, s := range []error{store.ErrBadFile, store.ErrFormat, store.ErrFailStop, store.ErrLocked, store.ErrCorruptNode, store.ErrNodeMissing, store.ErrSymlink} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// FileFaultMessage and FileFaultHint are what a caller is told of a FileFault: only what it can act on.
const (
	FileFaultMessage = "the database file is damaged or cannot be used now; nothing was written"
	FileFaultHint    = "tell the operator: the server's log names the file and says why"
)

// Code classifies any error of the library, the one place where sentinels become the stable codes: front ends are
// lookup tables over it. An error that is none of the library's is UNAVAILABLE (the call failed for a reason the
// caller cannot fix by changing its arguments).
func Code(err error) string {
	var c Coded
	switch {
	case err == nil:
		return ""
	case errors.As(err, &c):
		return c.Code()
	case errors.Is(err, snapshots.ErrSchemaViolation):
		return CodeSchemaViolation
	case errors.Is(err, snapshots.ErrPlanChanged):
		return CodePlanChanged
	case errors.Is(err, snapshots.ErrPlanExpired):
		return CodePlanExpired
	case errors.Is(err, ErrDenied):
		return CodeDenied
	case errors.Is(err, ErrConfirmationRequired):
		return CodeConfirmationRequired
	case errors.Is(err, query.ErrBadCursor):
		return CodeInvalidArgument
	case errors.Is(err, query.ErrQuery):
		return CodeQueryError
	case errors.Is(err, query.ErrTimeout):
		return CodeQueryTimeout
	case errors.Is(err, query.ErrLimit):
		return CodeLimitExceeded
	case errors.Is(err, query.ErrUnavailable):
		return CodeUnavailable
	case errors.Is(err, snapshots.ErrNotFound), errors.Is(err, revision.ErrNotFound), errors.Is(err, store.ErrDropped):
		return CodeNotFound
	case errors.Is(err, snapshots.ErrConflict), errors.Is(err, revision.ErrTestFailed):
		return CodeConflict
	case errors.Is(err, revision.ErrInvalidPath):
		return CodeInvalidPath
	case errors.Is(err, revision.ErrInvalidJSON), errors.Is(err, revision.ErrInvalidPatch),
		errors.Is(err, snapshots.ErrInvalidArgument):
		return CodeInvalidArgument
	case errors.Is(err, revision.ErrLimit):
		return CodeLimitExceeded
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.Is(err, snapshots.ErrClosed), errors.Is(err, store.ErrFailStop), errors.Is(err, store.ErrClosed):
		return CodeUnavailable
	}
	return CodeUnavailable
}

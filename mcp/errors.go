package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/query"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
)

// The stable error codes are the gate's (gate.Code classifies every library error); these are their short names
// here.
const (
	codeNotFound             = gate.CodeNotFound
	codeInvalidArgument      = gate.CodeInvalidArgument
	codeInvalidPath          = gate.CodeInvalidPath
	codeConflict             = gate.CodeConflict
	codePlanChanged          = gate.CodePlanChanged
	codePlanExpired          = gate.CodePlanExpired
	codeConfirmationRequired = gate.CodeConfirmationRequired
	codeDenied               = gate.CodeDenied
	codeQueryError           = gate.CodeQueryError
	codeQueryTimeout         = gate.CodeQueryTimeout
	codeLimitExceeded        = gate.CodeLimitExceeded
	codeSchemaViolation      = gate.CodeSchemaViolation
	codeUnavailable          = gate.CodeUnavailable
)

// errorCodes lists every code, for the output schemas.
var errorCodes = gate.Codes

// toolError is the structured content of an error result.
type toolError struct {
	Code       string         `json:"code"`
	Message    string         `json:"message"`
	Hint       string         `json:"hint,omitempty"`
	Head       uint64         `json:"head,omitempty"`
	DidYouMean []string       `json:"did_you_mean,omitempty"`
	Conflicts  []conflictJSON `json:"conflicts,omitempty"`
	// Detail is the jq error itself: it may quote stored data, so it travels only inside the untrusted-data
	// boundary, never in the message line.
	Detail string `json:"detail,omitempty"`
	// Violations (SCHEMA_VIOLATION) hold paths and messages that may quote stored data: inside the boundary only.
	Violations     []violationJSON `json:"violations,omitempty"`
	ViolationCount int             `json:"violation_count,omitempty"`
}

// violationJSON is one way a write would fail its resource's schema.
type violationJSON struct {
	Path    string `json:"path"`
	Keyword string `json:"keyword"`
	Message string `json:"message"`
}

// conflictJSON is one path a promote could not merge, with its base, into and branch values (resolve.go).
type conflictJSON = gate.ConflictReport

// codedError is an error this package makes itself (bad arguments, policy, output caps), already carrying its code.
type codedError struct {
	toolError
	err error // what it wraps, if anything
}

func (e *codedError) Error() string { return e.Message }
func (e *codedError) Unwrap() error { return e.err }

func newError(code, format string, args ...any) *codedError {
	return &codedError{toolError: toolError{Code: code, Message: fmt.Sprintf(format, args...)}}
}

func (e *codedError) withHint(format string, args ...any) *codedError {
	e.Hint = fmt.Sprintf(format, args...)
	return e
}

// errorFor maps any error a handler returns to its code and message: the one place where library sentinels become
// the codes of docs/design.md §3.4.
//
// Names that come from the store (the closest names of a did-you-mean, conflicting paths) never go into the message,
// which is shown outside the untrusted-data boundary: they go into did_you_mean and conflicts, which are shown inside
// it.
func errorFor(err error) *toolError {
	var ce *codedError
	if errors.As(err, &ce) {
		te := ce.toolError
		return &te
	}
	te := &toolError{Code: gate.Code(err), Message: err.Error()}
	var ge *gate.Error
	if errors.As(err, &ge) {
		te.Hint, te.Detail = ge.Hint, ge.Detail
	}
	switch te.Code {
	case codePlanChanged:
		if te.Hint == "" {
			te.Hint = "the plan was not applied and stays as it was; read the branch again and plan the change anew"
		}
	case codePlanExpired:
		te.Hint = "make the same call again to get a fresh plan"
	case codeQueryError:
		// gojq's messages can quote the input ("cannot iterate over: string (\"...\")"): keep stored text out of
		// the line shown outside the boundary (docs/security.md §1).
		te.Detail = err.Error()
		te.Message = "the jq program was refused or failed; the error, with a caret under the fault where known, is in detail"
	case codeSchemaViolation:
		var se *snapshots.SchemaError
		if errors.As(err, &se) {
			te.Message = fmt.Sprintf("the write would leave resource %s invalid against its schema (%d violation(s), the first listed in violations); nothing was written", se.Resource, se.Count)
			te.Hint = "resource_info for " + se.Resource + " shows its schema: make the change satisfy it"
			te.ViolationCount = se.Count
			for _, v := range se.Violations {
				te.Violations = append(te.Violations, violationJSON{Path: v.Path, Keyword: v.Keyword, Message: v.Message})
			}
		}
	case codeQueryTimeout:
		te.Hint = "the program ran past its deadline and was stopped: narrow it (a path, a slice, select early) or page with limit"
	case codeConflict:
		var pe *revision.PathError
		if errors.As(err, &pe) && pe.Want != "" {
			// An old_value that did not hold: the value found there is stored data, so both values go inside the
			// boundary only.
			short := *pe
			short.Have, short.Want = "", ""
			te.Detail = err.Error()
			te.Message = strings.Replace(err.Error(), pe.Error(), short.Error(), 1) + "; nothing was written (the value there and old_value are in detail)"
			te.Hint = "read the value again (or diff again) and send the patch with the old_value it has now"
		}
	case codeUnavailable:
		switch {
		case gate.FileFault(err):
			// The library's message names the server's files: the caller learns only what it can act on.
			te.Message, te.Hint = gate.FileFaultMessage, gate.FileFaultHint
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			te.Message = "the call was cancelled or timed out before it finished; nothing was written unless a result said so"
		case errors.Is(err, snapshots.ErrClosed):
			te.Hint = "the server is shutting down; retry on a new connection"
		case errors.Is(err, query.ErrUnavailable):
		default:
			te.Message = "the call failed: " + err.Error()
		}
	}

	// Take the store's names out of the message and into did_you_mean.
	var nf *snapshots.NotFoundError
	if errors.As(err, &nf) {
		te.DidYouMean = nf.DidYouMean
		te.Hint = nf.Hint
		short := *nf
		short.DidYouMean, short.Hint = nil, ""
		te.Message = strings.Replace(te.Message, nf.Error(), short.Error(), 1)
		if nf.What == "database" && te.Hint != "" {
			te.Hint = "list_databases shows the databases there are; create_database makes one where writes are enabled"
		}
	}
	var pe *revision.PathError
	if errors.As(err, &pe) && len(pe.DidYouMean) > 0 {
		te.DidYouMean = pe.DidYouMean
		short := *pe
		short.DidYouMean = nil
		te.Message = strings.Replace(te.Message, pe.Error(), short.Error(), 1)
	}
	var cf *snapshots.ConflictError
	if errors.As(err, &cf) && cf.Msg == "" && cf.Branch != "" {
		te.Head = cf.Head
		if te.Hint == "" {
			te.Hint = fmt.Sprintf("see what changed (history), then retry with expected_head %d", cf.Head)
		}
	}
	if len(te.DidYouMean) > 0 && te.Hint == "" {
		te.Hint = "the closest existing names are in did_you_mean"
	}
	return te
}

// headline is the first line of an error's text: the code, then what was wrong and what to do.
func (te *toolError) headline() string {
	s := te.Code + ": " + te.Message
	if te.Hint != "" {
		s += "; " + te.Hint
	}
	return s
}

package main

import (
	"errors"
	"fmt"

	"github.com/strata-db/strata/revision"
)

// Exit codes. Scripts rely on them: keep them stable.
const (
	exitOK       = 0
	exitFailure  = 1 // anything else went wrong
	exitUsage    = 2 // bad command line or bad input (unknown command, flag, argument, malformed pointer or patch)
	exitNotFound = 3 // the thing named does not exist
	exitConflict = 4 // a precondition did not hold (a failed patch test; later: expected head, plan changed)
)

// exitCoder is an error that knows the exit code the process should end with (gojq's cli/error.go idea). run asks
// every error for it through errors.As, so wrapping keeps the code.
type exitCoder interface {
	error
	ExitCode() int
}

// cliError carries an error and its exit code.
type cliError struct {
	code int
	err  error
}

func (e *cliError) Error() string { return e.err.Error() }
func (e *cliError) Unwrap() error { return e.err }
func (e *cliError) ExitCode() int { return e.code }

// usageErrorf reports a bad command line.
func usageErrorf(format string, args ...any) error {
	return &cliError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// withExitCode gives err the exit code its kind calls for, unless it already has one. Every error a command returns
// goes through it (see action), so that run can tell them from cobra's own parse errors, which carry no code.
func withExitCode(err error) error {
	if err == nil {
		return nil
	}
	var ec exitCoder
	if errors.As(err, &ec) {
		return err
	}
	return &cliError{code: codeFor(err), err: err}
}

// codeFor maps the library's sentinel errors to exit codes, in one place.
func codeFor(err error) int {
	switch {
	case errors.Is(err, revision.ErrNotFound):
		return exitNotFound
	case errors.Is(err, revision.ErrTestFailed):
		return exitConflict
	case errors.Is(err, revision.ErrInvalidPath), errors.Is(err, revision.ErrInvalidJSON),
		errors.Is(err, revision.ErrInvalidPatch):
		return exitUsage
	}
	return exitFailure
}

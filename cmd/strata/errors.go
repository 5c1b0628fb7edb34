package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/snapshots"
)

// Exit codes. Scripts rely on them: keep them stable.
const (
	exitOK       = 0
	exitFailure  = 1 // anything else went wrong
	exitUsage    = 2 // bad command line or bad input (unknown command, flag, argument, malformed pointer or patch)
	exitNotFound = 3 // the thing named does not exist
	exitConflict = 4 // a precondition did not hold (a failed patch test, an expected head, a taken name, a merge conflict)
)

// exitCoder is an error that knows the exit code the process should end with (gojq's cli/error.go idea). run asks
// every error for it through errors.As, so wrapping keeps the code.
type exitCoder interface {
	error
	ExitCode() int
}

// cliError carries an error and its exit code.
type cliError struct {
	code  int
	err   error
	usage bool // a mistake in the command line itself: run points to --help
}

func (e *cliError) Error() string { return e.err.Error() }
func (e *cliError) Unwrap() error { return e.err }
func (e *cliError) ExitCode() int { return e.code }

// usageErrorf reports a bad command line.
func usageErrorf(format string, args ...any) error {
	return &cliError{code: exitUsage, err: fmt.Errorf(format, args...), usage: true}
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

// exitCodes maps the gate's error codes (gate.Code, the one classification of library errors) to exit codes; a
// code not listed exits with exitFailure.
var exitCodes = map[string]int{
	gate.CodeNotFound:        exitNotFound,
	gate.CodeConflict:        exitConflict,
	gate.CodePlanExpired:     exitConflict,
	gate.CodePlanChanged:     exitConflict,
	gate.CodeQueryError:      exitUsage,
	gate.CodeInvalidPath:     exitUsage,
	gate.CodeInvalidArgument: exitUsage,
	gate.CodeLimitExceeded:   exitUsage, // a query or read over its limits: narrow it
	gate.CodeSchemaViolation: exitUsage, // the value would not satisfy its resource's schema
}

// codeFor is the exit code of a library error.
func codeFor(err error) int {
	if c, ok := exitCodes[gate.Code(err)]; ok {
		return c
	}
	return exitFailure
}

// invalidf reports a command line that parsed but cannot be carried out as given (exit 2), without pointing to
// --help: the message says what to do.
func invalidf(format string, args ...any) error {
	return &cliError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// reworded is an error with a message for the command line, still wrapping the library's error for errors.Is/As.
type reworded struct {
	msg string
	err error
}

func (e *reworded) Error() string { return e.msg }
func (e *reworded) Unwrap() error { return e.err }

// forCLI rewords the few library messages that speak in MCP terms (expected_head, create_database) or show the
// CLI's own adjustments (a BRANCH@TIME stands for its whole second) so that they say what to type here. args are the
// command's arguments: every command that takes --expected-head names its database first.
func forCLI(err error, args []string) error {
	var ce *snapshots.ConflictError
	if errors.As(err, &ce) && ce.Msg == "" && ce.Branch != "" {
		db := "DB"
		if len(args) > 0 {
			db = args[0]
		}
		msg := fmt.Sprintf("branch %s is at revision %d, not %d; see what changed (strata log %s --branch %s) and retry with --expected-head %d",
			ce.Branch, ce.Head, ce.Expected, db, ce.Branch, ce.Head)
		return &reworded{strings.Replace(err.Error(), ce.Error(), msg, 1), err}
	}
	var nf *snapshots.NotFoundError
	if errors.As(err, &nf) {
		cp := *nf
		switch {
		case nf.What == "database" && nf.Hint != "":
			cp.Hint = "create it with: strata db create " + nf.Name
		case nf.What == "revision":
			// A BRANCH@TIME given to the second, stretched by parseRef to the end of it: say the time as typed.
			w, ok := snapshots.WholeSecondError(nf).(*snapshots.NotFoundError)
			if !ok || w == nf {
				return err
			}
			cp = *w
		default:
			return err
		}
		return &reworded{strings.Replace(err.Error(), nf.Error(), cp.Error(), 1), err}
	}
	return err
}

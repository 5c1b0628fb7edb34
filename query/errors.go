package query

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Sentinel errors. Every error this package returns for a query that could not be answered wraps one of them (or
// ctx.Err() when the caller's own context ended, or an error of package revision or snapshots for a missing
// resource or revision), so callers map errors with errors.Is and the MCP layer turns each into a stable code in one
// place.
var (
	// ErrQuery: the program does not parse or compile, uses a function Strata does not offer (input, debug, …),
	// failed at run time (error(…), a type error), produced the wrong number of values for a transform, or a
	// cursor is malformed, forged or belongs to another query. Maps to QUERY_ERROR.
	ErrQuery = errors.New("query error")
	// ErrTimeout: the program ran past its deadline (Options.Timeout) and was stopped. Maps to QUERY_TIMEOUT.
	ErrTimeout = errors.New("query timed out")
	// ErrLimit: the program text, one result, a page, a transform's output, or the memory or stack of the worker
	// running the program went over a limit. Maps to LIMIT_EXCEEDED.
	ErrLimit = errors.New("limit exceeded")
	// ErrUnavailable: the program needs an isolated worker process and none could be started (the binary does not
	// call WorkerMain, or workers are disabled). Nothing ran.
	ErrUnavailable = errors.New("query workers unavailable")
	// ErrBadCursor: a cursor is malformed, forged or belongs to another query. It wraps ErrQuery; the MCP layer
	// answers it INVALID_ARGUMENT, as it does a bad cursor of any other tool.
	ErrBadCursor = fmt.Errorf("%w: bad cursor", ErrQuery)
)

// QueryError is a failed query: what went wrong, and where in the program when that is known. Error shows the
// program (or, for long programs, the part around the fault) with a caret under the fault. It never contains the
// input document: values quoted from the data are cut to a few dozen bytes.
type QueryError struct {
	Program string // the program as given
	Offset  int    // byte offset of the fault in Program, or -1 when unknown
	Msg     string // what is wrong, in plain words
	Err     error  // ErrQuery, ErrTimeout or ErrLimit
}

func (e *QueryError) Error() string {
	var b strings.Builder
	b.WriteString(e.Msg)
	if e.Program == "" {
		return b.String()
	}
	line, caret := excerpt(e.Program, e.Offset)
	b.WriteString("\n  ")
	b.WriteString(line)
	if caret >= 0 {
		b.WriteString("\n  ")
		b.WriteString(strings.Repeat(" ", caret))
		b.WriteString("^")
	}
	return b.String()
}

func (e *QueryError) Unwrap() error { return e.Err }

// excerptWidth is how much of a program an error shows either side of the fault.
const excerptWidth = 60

// excerpt returns the line of the program holding offset, cut to excerptWidth either side of it (with "…" where
// cut), and the column of the caret in the returned text (in runes; -1 when offset is unknown).
func excerpt(prog string, offset int) (string, int) {
	if offset < 0 || offset > len(prog) {
		first := prog
		if i := strings.IndexByte(first, '\n'); i >= 0 {
			first = first[:i] + " …"
		}
		if len(first) > 2*excerptWidth {
			first = clipUTF8(first, 2*excerptWidth) + " …"
		}
		return first, -1
	}
	start := strings.LastIndexByte(prog[:offset], '\n') + 1
	end := len(prog)
	if i := strings.IndexByte(prog[offset:], '\n'); i >= 0 {
		end = offset + i
	}
	prefix, suffix := "", ""
	if offset-start > excerptWidth {
		start = offset - excerptWidth
		for start < offset && !utf8.RuneStart(prog[start]) {
			start++
		}
		prefix = "… "
	}
	if end-offset > excerptWidth {
		end = offset + excerptWidth
		for end > offset && end < len(prog) && !utf8.RuneStart(prog[end]) {
			end--
		}
		suffix = " …"
	}
	line := strings.ReplaceAll(prog[start:end], "\t", " ")
	caret := utf8.RuneCountInString(prefix) + utf8.RuneCountInString(strings.ReplaceAll(prog[start:offset], "\t", " "))
	return prefix + line + suffix, caret
}

// clipUTF8 cuts s to at most n bytes at a rune boundary.
func clipUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// maxQuoted bounds how much of a value from the data an error message quotes.
const maxQuoted = 200

func queryErr(prog string, offset int, format string, args ...any) *QueryError {
	return &QueryError{Program: prog, Offset: offset, Msg: fmt.Sprintf(format, args...), Err: ErrQuery}
}

func limitErr(prog string, format string, args ...any) *QueryError {
	return &QueryError{Program: prog, Offset: -1, Msg: fmt.Sprintf(format, args...), Err: ErrLimit}
}

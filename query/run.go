package query

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/itchyny/gojq"
)

// page is what one run of a program produced for the caller.
type page struct {
	results [][]byte
	more    bool
}

// runPage runs code on input and returns results skip… skip+limit-1 encoded as JSON, stopping early (more=true)
// when the next result would take the page past maxBytes. A first result larger than maxBytes on its own is an
// ErrLimit error. It runs in the server (bounded programs) and in workers alike.
func runPage(ctx context.Context, prog string, code *gojq.Code, input any, values []any, skip, limit, maxBytes int) (*page, error) {
	return pageOf(ctx, prog, outputs(ctx, code, input, values), 0, skip, limit, maxBytes)
}

// pageOf is runPage on a sequence of outputs (values, or an error that ends them) whose first is output number first
// of the program: a split program (split.go) may start at the page.
func pageOf(ctx context.Context, prog string, seq iter.Seq[any], first, skip, limit, maxBytes int) (*page, error) {
	p := &page{results: [][]byte{}}
	used := 0
	err := eachOf(ctx, prog, seq, first, func(i int, v any) (bool, error) {
		if i < skip {
			return true, nil
		}
		if len(p.results) == limit {
			p.more = true
			return false, nil
		}
		rem := maxBytes - used
		if rem <= 0 {
			p.more = true
			return false, nil
		}
		b, err := appendJSON(nil, v, rem)
		switch {
		case errors.Is(err, errTooBig) && len(p.results) > 0:
			p.more = true
			return false, nil
		case errors.Is(err, errTooBig):
			return false, limitErr(prog, "result %d alone is larger than the %s output limit; select less of it (a path, a slice such as .[0:100], or fewer fields)", i+1, sizeText(maxBytes))
		case errors.Is(err, errTooDeep):
			return false, limitErr(prog, "result %d is nested more than %d levels deep", i+1, maxResultDepth)
		case err != nil:
			return false, queryErr(prog, -1, "result %d: %v", i+1, err)
		}
		used += len(b)
		p.results = append(p.results, b)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// runTransform runs code on input and returns its only result as JSON of at most maxBytes.
func runTransform(ctx context.Context, prog string, code *gojq.Code, input any, values []any, maxBytes int) ([]byte, error) {
	var out []byte
	n := 0
	err := each(ctx, prog, code, input, values, func(i int, v any) (bool, error) {
		n++
		if n > 1 {
			return false, queryErr(prog, -1, "a transform must produce exactly one value, and this one produced more than one; nothing was written")
		}
		b, err := appendJSON(nil, v, maxBytes)
		switch {
		case errors.Is(err, errTooBig):
			return false, limitErr(prog, "the transformed value is larger than the %s limit; nothing was written", sizeText(maxBytes))
		case errors.Is(err, errTooDeep):
			return false, limitErr(prog, "the transformed value is nested more than %d levels deep; nothing was written", maxResultDepth)
		case err != nil:
			return false, queryErr(prog, -1, "%v", err)
		}
		out = b
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, queryErr(prog, -1, "a transform must produce exactly one value, and this one produced none (empty, or select filtered everything out); nothing was written")
	}
	return out, nil
}

// each runs code and calls fn with every result in order until fn returns false or an error. A run-time error of
// the program, a deadline, or a panic inside gojq ends it with an error.
func each(ctx context.Context, prog string, code *gojq.Code, input any, values []any, fn func(int, any) (bool, error)) error {
	return eachOf(ctx, prog, outputs(ctx, code, input, values), 0, fn)
}

// outputs is the sequence of a program's outputs on input.
func outputs(ctx context.Context, code *gojq.Code, input any, values []any) iter.Seq[any] {
	return func(yield func(any) bool) {
		it := code.RunWithContext(ctx, input, values...)
		for {
			v, ok := it.Next()
			if !ok || !yield(v) {
				return
			}
		}
	}
}

// eachOf is each on a sequence of outputs, numbered from first.
func eachOf(ctx context.Context, prog string, seq iter.Seq[any], first int, fn func(int, any) (bool, error)) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = queryErr(prog, -1, "the query failed inside the jq engine: %s", clipMessage(fmt.Sprint(r)))
		}
	}()
	i := first
	seq(func(v any) bool {
		if e, isErr := v.(error); isErr {
			var halt *gojq.HaltError
			if !errors.As(e, &halt) || halt.Value() != nil {
				err = runtimeError(ctx, prog, e)
			}
			return false
		}
		more, ferr := fn(i, v)
		i++
		if ferr != nil || !more {
			err = ferr
			return false
		}
		return true
	})
	return err
}

var reApplied = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*) cannot be applied`)

// runtimeError turns an error a program raised into a QueryError. A value passed to error(…) is quoted cut to
// maxQuoted bytes; gojq's own messages quote at most ~30 bytes of the data.
func runtimeError(ctx context.Context, prog string, e error) error {
	if errors.Is(e, context.DeadlineExceeded) || errors.Is(e, context.Canceled) {
		if ctx.Err() != nil {
			return ctxError(ctx, prog)
		}
	}
	var ve gojq.ValueError
	if errors.As(e, &ve) {
		v := ve.Value()
		if v == nil {
			return queryErr(prog, findName(prog, "error"), "the program raised error(null)")
		}
		return queryErr(prog, findName(prog, "error"), "the program raised an error: %s", quoteValue(v))
	}
	msg := clipMessage(e.Error())
	off := -1
	if m := reApplied.FindStringSubmatch(msg); m != nil {
		off = findName(prog, m[1])
	}
	return queryErr(prog, off, "the program failed: %s", msg)
}

// ctxError reports why a query's context ended: its deadline (the engine's or the caller's) → ErrTimeout; the
// caller cancelling → the context's error.
func ctxError(ctx context.Context, prog string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &QueryError{Program: prog, Offset: -1, Msg: timeoutText(ctx), Err: ErrTimeout}
	}
	return ctx.Err()
}

// timeoutKey carries the engine's own deadline in a query's context, to tell it from the caller's.
type timeoutKey struct{}

type timeoutInfo struct {
	limit time.Duration
	at    time.Time
}

func timeoutText(ctx context.Context) string {
	if ti, ok := ctx.Value(timeoutKey{}).(timeoutInfo); ok && !time.Now().Before(ti.at) {
		return fmt.Sprintf("the query ran past its %s time limit and was stopped", ti.limit)
	}
	return "the caller's deadline passed before the query finished"
}

// sizeText renders a byte count for messages: "1 MiB", "1.5 MiB", "64 KiB", "300-byte".
func sizeText(n int) string {
	f := func(x float64, unit string) string {
		s := strconv.FormatFloat(x, 'f', 1, 64)
		return strings.TrimSuffix(s, ".0") + " " + unit
	}
	switch {
	case n >= 1<<30:
		return f(float64(n)/(1<<30), "GiB")
	case n >= 1<<20:
		return f(float64(n)/(1<<20), "MiB")
	case n >= 1<<10:
		return f(float64(n)/(1<<10), "KiB")
	}
	return fmt.Sprintf("%d-byte", n)
}

package query

import (
	"errors"
	"strings"
	"testing"

	"github.com/strata-db/strata/snapshots"
)

// TestReadRouteDELOverOutputLimit: a pure path read checks the value's stored size against MaxOutputBytes,
// but writes each DEL (U+007F), stored as one byte, as the six bytes \u007f (escapeDEL). A value under the limit as
// stored is then returned as a result several times over it, where the same value through jq is LIMIT_EXCEEDED.
func TestReadRouteDELOverOutputLimit(t *testing.T) {
	e := newEngine(t, Options{MaxOutputBytes: 64 << 10})
	db := newDB(t)
	put(t, db, "doc", `{"a":"`+strings.Repeat("\u007f", 60<<10)+`"}`) // 60 KiB stored, 360 KiB as gojq writes it
	for _, prog := range []string{`.a | .`, `.a`} {
		res, err := e.Query(ctxT(t), db, snapshots.Ref{}, Request{Resource: "doc", Program: prog})
		switch {
		case err == nil:
			n := 0
			for _, r := range res.Results {
				n += len(r)
			}
			t.Errorf("%s (route %s): a page of %d bytes, over the 64 KiB MaxOutputBytes; want LIMIT_EXCEEDED", prog, res.Plan.Route, n)
		case !errors.Is(err, ErrLimit):
			t.Errorf("%s: %v, want ErrLimit", prog, err)
		}
	}
}

package query

import (
	"testing"
)

// TestBisectEvaluatesOnce: evaluations lists "every evaluation, in the order made". With one candidate (a
// resource that never existed, or from = to) the end and the start of the range are the same revision: a
// predicate true there was listed twice when the resource is absent there (its null value is not memoised).
func TestBisectEvaluatesOnce(t *testing.T) {
	ctx := ctxT(t)
	db := newDB(t)
	e := newEngine(t, Options{})
	put(t, db, "a", `1`)
	put(t, db, "a", `2`)
	for _, req := range []BisectRequest{
		{Resource: "nope", Predicate: `. == null`},              // never existed: one candidate, absent
		{Resource: "a", Predicate: `. == null`, From: 1, To: 1}, // from = to, before a existed
	} {
		r, err := e.Bisect(ctx, db, req)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Found || r.First != 1 {
			t.Fatalf("%+v: %+v", req, r)
		}
		seen := map[uint64]bool{}
		for _, ev := range r.Evaluations {
			if seen[ev.Revision] {
				t.Errorf("%+v: revision %d evaluated twice: %+v", req, ev.Revision, r.Evaluations)
			}
			seen[ev.Revision] = true
		}
	}
}

package query

import (
	"errors"
	"fmt"
	"math/bits"
	"testing"

	"github.com/strata-db/strata/snapshots"
)

func TestBisect(t *testing.T) {
	ctx := ctxT(t)
	db := newDB(t)
	e := newEngine(t, Options{})
	// 200 revisions: the counter rises by one every other revision; in between, another resource changes.
	revAt := map[int]uint64{} // counter value → the revision that set it
	for i := 0; i < 100; i++ {
		revAt[i] = put(t, db, "counter", fmt.Sprintf(`{"n":%d,"items":[%d]}`, i, i))
		put(t, db, "noise", fmt.Sprintf(`{"i":%d}`, i))
	}
	head, _ := db.Resolve(ctx, snapshots.Ref{})

	check := func(pred string, params map[string]any, from, to uint64, found bool, first uint64) *BisectResult {
		t.Helper()
		r, err := e.Bisect(ctx, db, BisectRequest{Resource: "counter", Predicate: pred, Params: params, From: from, To: to})
		if err != nil {
			t.Fatalf("%s: %v", pred, err)
		}
		if r.Found != found || r.First != first {
			t.Fatalf("%s [%d,%d]: found %v first %d; want %v %d (%+v)", pred, from, to, r.Found, r.First, found, first, r)
		}
		maxEvals := 2 + bits.Len(uint(r.Candidates))
		if len(r.Evaluations) > maxEvals {
			t.Fatalf("%s: %d evaluations for %d candidates", pred, len(r.Evaluations), r.Candidates)
		}
		for _, ev := range r.Evaluations {
			if ev.Value != (ev.Revision >= first && found) {
				t.Fatalf("evaluation %+v inconsistent with first %d", ev, first)
			}
		}
		return r
	}
	r := check(`.n >= 37`, nil, 0, 0, true, revAt[37])
	if r.Last != revAt[36] {
		t.Errorf("last false %d, want %d", r.Last, revAt[36])
	}
	// Only revisions that changed the resource are candidates (the noise revisions cannot change the answer).
	if r.Candidates > 102 {
		t.Errorf("%d candidates", r.Candidates)
	}
	check(`.n >= $k`, map[string]any{"k": 90}, 0, 0, true, revAt[90])
	check(`.items | any(. == 5)`, nil, 0, 0, false, 0)   // true only at one revision: not at the end
	check(`.n >= 1000`, nil, 0, 0, false, 0)             // never
	check(`.n >= 0`, nil, revAt[10], 0, true, revAt[10]) // already true at from
	check(`.n >= 50`, nil, revAt[20], revAt[60], true, revAt[50])
	check(`.n >= 50`, nil, revAt[20], revAt[40], false, 0) // not within the range
	check(`.n > 70 and (.items | length) == 1`, nil, 0, head.Rev.Number, true, revAt[71])
	check(`.n`, nil, 0, 0, true, revAt[0]) // a bare path: its truthiness (0 is true in jq; absent is null, false)
	check(`.missing`, nil, 0, 0, false, 0)

	// A branch: bisect follows its own history.
	if _, err := db.CreateBranch(ctx, "b", snapshots.Ref{Revision: revAt[10]}, "t"); err != nil {
		t.Fatal(err)
	}
	res, err := db.Put(ctx, "counter", []byte(`{"n":500,"items":[]}`), snapshots.WriteOptions{Branch: "b"})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := e.Bisect(ctx, db, BisectRequest{Branch: "b", Resource: "counter", Predicate: `.n >= 37`})
	if err != nil || !rb.Found || rb.First != res.Revision {
		t.Fatalf("branch bisect: %+v %v", rb, err)
	}

	// Errors name the revision; bad ranges are refused.
	if _, err := e.Bisect(ctx, db, BisectRequest{Resource: "counter", Predicate: `.n | error("x")`}); !errors.Is(err, ErrQuery) {
		t.Errorf("predicate error: %v", err)
	}
	if _, err := e.Bisect(ctx, db, BisectRequest{Resource: "counter", Predicate: `.n > 1`, From: revAt[50], To: revAt[10]}); !errors.Is(err, snapshots.ErrInvalidArgument) {
		t.Errorf("reversed range: %v", err)
	}
	if _, err := e.Bisect(ctx, db, BisectRequest{Resource: "counter", Predicate: `.n > 1`, From: res.Revision}); !errors.Is(err, snapshots.ErrInvalidArgument) {
		t.Errorf("from on another branch: %v", err)
	}
	if _, err := e.Bisect(ctx, db, BisectRequest{Branch: "nope", Resource: "counter", Predicate: `.n > 1`}); !errors.Is(err, snapshots.ErrNotFound) {
		t.Errorf("missing branch: %v", err)
	}
	// Without a resource the predicate sees the whole root.
	r2, err := e.Bisect(ctx, db, BisectRequest{Resource: "", Predicate: `.noise.i >= 3`})
	if err != nil || !r2.Found {
		t.Fatal(r2, err)
	}
	st, _ := db.Resolve(ctx, snapshots.Ref{Revision: r2.First})
	if v, _, _ := db.Get(ctx, snapshots.Ref{Revision: r2.First}, "noise", nil); string(must(db.Forest().JSON(ctx, v))) != `{"i":3}` || st.Rev.Number != revAt[3]+1 {
		t.Errorf("root bisect found %d", r2.First)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

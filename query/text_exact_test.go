package query

import (
	"context"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zone below, in this binary and in the workers it starts

	"github.com/strata-db/strata/internal/jqdiff"
	"github.com/strata-db/strata/snapshots"
)

// TestExactText: every result's text is gojq's, on every route, small and chunked documents alike (found in
// review: U+007F came out as is, where gojq writes \u007f; jqdiff.Compare, which canonicalises, did not see it).
func TestExactText(t *testing.T) {
	big := `{"s":"x\u007fy","a":["\u007f"],"rows":[` + strings.Repeat(`{"s":"p\u007fq","n":1},`, 3000) + `{"s":"\u007f","n":2}]}`
	for _, doc := range []string{`{"s":"x\u007fy","a":["\u007f"],"rows":[{"s":"\u007f","n":2}]}`, big} {
		e := newEngine(t, Options{})
		db := newDB(t)
		put(t, db, "doc", doc)
		in, _ := jqdiff.Decode(doc)
		for _, prog := range []string{`.s`, `.a`, `.a[0]`, `.s | ltrimstr("q")`, `reduce .a[] as $x (""; $x)`,
			`[.rows[] | .s] | length`, `.rows[-1]`, `[.rows[] | select(.n > 1)]`, `.s | tojson`, `{(.s): 1}`} {
			ref := jqdiff.Run(context.Background(), in, prog, nil, 10)
			res, err := e.Query(ctxT(t), db, snapshots.Ref{}, Request{Resource: "doc", Program: prog})
			if err != nil || len(res.Results) != len(ref.Results) {
				t.Fatalf("%s: %v %v, want %v", prog, res, err, ref.Results)
			}
			for i := range ref.Results {
				if got := string(res.Results[i]); got != ref.Results[i] {
					t.Errorf("%s (route %s): Strata %q, gojq %q", prog, res.Plan.Route, got, ref.Results[i])
				}
			}
		}
	}
}

// TestLocalTimeEveryRoute: localtime answers in the server's zone on every route (found in review: a worker,
// started without the server's environment, answered in /etc/localtime's zone).
func TestLocalTimeEveryRoute(t *testing.T) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	old := time.Local
	time.Local = tokyo // as TZ=Asia/Tokyo would make it, for this process
	t.Cleanup(func() { time.Local = old })
	t.Setenv("TZ", "Asia/Tokyo") // and for the workers it starts
	const doc = `{"t":0}`
	in, _ := jqdiff.Decode(doc)
	for _, prog := range []string{`.t | localtime | .[3]`, `.t | strflocaltime("%H:%M %Z")`, `.t | localtime | mktime`} {
		ref := jqdiff.Run(context.Background(), in, prog, nil, 10)
		for _, iso := range []Isolation{IsolateAuto, IsolateAll, IsolateNone} {
			e := newEngine(t, Options{Isolate: iso})
			db := newDB(t)
			put(t, db, "doc", doc)
			res, err := e.Query(ctxT(t), db, snapshots.Ref{}, Request{Resource: "doc", Program: prog})
			if err != nil {
				t.Fatal(err)
			}
			if got := string(res.Results[0]); got != ref.Results[0] {
				t.Errorf("%s, isolation %d (route %s): Strata %s, gojq %s", prog, iso, res.Plan.Route, got, ref.Results[0])
			}
		}
	}
}

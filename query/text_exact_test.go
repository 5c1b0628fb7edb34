package query

import (
	"context"
	"strings"
	"testing"
	_ "time/tzdata" // the zone the workers are given, whatever the machine has installed

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

// TestLocalTimeInWorkers: a worker answers local time in the server's zone (found in review: started without the
// server's environment, it answered in /etc/localtime's zone while the server ran under TZ). The test sets TZ for
// the workers only, and leaves this process's time.Local alone (other goroutines read it).
func TestLocalTimeInWorkers(t *testing.T) {
	t.Setenv("TZ", "Asia/Tokyo")
	const doc = `{"t":0}`
	e := newEngine(t, Options{Isolate: IsolateAll})
	db := newDB(t)
	put(t, db, "doc", doc)
	for prog, want := range map[string]string{
		`.t | localtime | .[3]`:          `9`,
		`.t | strflocaltime("%H:%M %Z")`: `"09:00 JST"`,
	} {
		res, err := e.Query(ctxT(t), db, snapshots.Ref{}, Request{Resource: "doc", Program: prog})
		if err != nil {
			t.Fatal(err)
		}
		if res.Plan.Route != "worker" {
			t.Fatalf("%s ran %s, not in a worker", prog, res.Plan.Route)
		}
		if got := string(res.Results[0]); got != want {
			t.Errorf("%s in a worker under TZ=Asia/Tokyo: %s, want %s", prog, got, want)
		}
	}
}

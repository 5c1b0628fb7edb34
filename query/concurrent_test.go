package query

import (
	"fmt"
	"sync"
	"testing"

	"github.com/strata-db/strata/snapshots"
)

// TestConcurrentSharedInput runs many programs at once, in-process, on one cached materialised value: gojq must
// not modify its input (the race detector would see it), and every answer must be the one it gets alone.
func TestConcurrentSharedInput(t *testing.T) {
	ctx := ctxT(t)
	db := newDB(t)
	put(t, db, "doc", testDoc(newRand(4), 150))
	// IsolateNone runs them all in-process: bounded ones on the shared cached value, the others (which gojq may
	// modify: del rewrites every map it walks) on a private copy.
	e := newEngine(t, Options{Isolate: IsolateNone})
	programs := []string{
		`.users | length`, `.users[0].tags |= . + ["z"] | .users[0].tags`, `.users | sort_by(.score) | .[0].id`,
		`del(.users[1:]) | .users | length`, `.users[] | select(.score > 90) | .id`, `.config.limits.max = 1 | .config`,
		`[.users[] | .tags |= reverse] | length`, `.users | map(.id) | add`, `to_entries | map(.key)`,
		`walk(if type == "number" then 0 else . end) | .users[3].id`, `.users[5] | .name |= ascii_upcase | .name`,
		`[paths(type == "number")] | length`, `.users | group_by(.active) | map(length)`,
		`.users[] | select(.active) | {id, name}`, `.. | numbers`, `.users[3] | keys`, `.config | has("limits")`,
		`first(.users[] | select(.score > 50)) | .id`, `[.users[0], .users[1]]`, `.users | min`,
	}
	want := map[string]string{}
	for _, p := range programs {
		r, err := e.Query(ctx, db, snapshots.Ref{}, Request{Resource: "doc", Program: p, Limit: 1000})
		if err != nil {
			t.Fatal(p, err)
		}
		want[p] = joined(r.Results)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8*len(programs))
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range programs {
				p := programs[(i+g)%len(programs)]
				r, err := e.Query(ctx, db, snapshots.Ref{}, Request{Resource: "doc", Program: p, Limit: 1000})
				if err != nil {
					errs <- err
				} else if got := joined(r.Results); got != want[p] {
					errs <- fmt.Errorf("%s: %.100s, alone %.100s", p, got, want[p])
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// The cached input is unchanged.
	r, err := e.Query(ctx, db, snapshots.Ref{}, Request{Resource: "doc", Program: `.`, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Results[0]) != string(mustJSON(t, db, "doc")) {
		t.Error("the cached input was modified")
	}
}

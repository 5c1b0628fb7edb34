package query

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/strata-db/strata/snapshots"
)

func TestTransform(t *testing.T) {
	ctx := ctxT(t)
	f, root := tree(t, `{"items":[{"id":1,"n":1.50},{"id":2,"n":2}],"v":7}`)
	doc, err := f.Get(ctx, root, []string{"doc"})
	if err != nil {
		t.Fatal(err)
	}
	for _, iso := range []Isolation{IsolateAuto, IsolateAll, IsolateNone} {
		e := newEngine(t, Options{Isolate: iso, MaxTransformBytes: 1000})
		cases := []struct {
			prog, want string
			params     map[string]any
			err        error
		}{
			{prog: `.v += 1`, want: `{"items":[{"id":1,"n":1.50},{"id":2,"n":2}],"v":8}`},
			{prog: `.items |= map(select(.id != $id))`, params: map[string]any{"id": 1}, want: `{"items":[{"id":2,"n":2}],"v":7}`},
			{prog: `del(.items)`, want: `{"v":7}`},
			{prog: `.items[0]`, want: `{"id":1,"n":1.50}`},
			{prog: `.items[0] | .id`, want: `1`},
			{prog: `.`, want: `{"items":[{"id":1,"n":1.50},{"id":2,"n":2}],"v":7}`},
			{prog: `empty`, err: ErrQuery},
			{prog: `.items[]`, err: ErrQuery},
			{prog: `.items[] | select(.id > 5)`, err: ErrQuery},
			{prog: `.v = ("x" * 2000)`, err: ErrLimit},
			{prog: `.v | error("no")`, err: ErrQuery},
			{prog: `input`, err: ErrQuery},
		}
		for _, c := range cases {
			got, err := e.Transform(ctx, f, doc, c.prog, c.params)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Errorf("%v %s: %v, want %v", iso, c.prog, err, c.err)
				}
				continue
			}
			if err != nil || string(got) != c.want {
				t.Errorf("%v %s: %s, %v; want %s", iso, c.prog, got, err, c.want)
			}
		}
	}
}

func TestTransformResource(t *testing.T) {
	ctx := ctxT(t)
	db := newDB(t)
	put(t, db, "counter", `{"n":0,"log":[]}`)
	put(t, db, "other", `{"x":1}`)
	e := newEngine(t, Options{})
	before, _ := db.Resolve(ctx, snapshots.Ref{})

	// Zero or several outputs, and errors, write nothing.
	for _, prog := range []string{`empty`, `., .`, `error("x")`, `.n | tostring | tonumber | error`} {
		if _, err := e.TransformResource(ctx, db, "counter", prog, nil, snapshots.WriteOptions{}); !errors.Is(err, ErrQuery) {
			t.Errorf("%s: %v", prog, err)
		}
	}
	if _, err := e.TransformResource(ctx, db, "nope", `.`, nil, snapshots.WriteOptions{}); !errors.Is(err, snapshots.ErrNotFound) {
		t.Errorf("missing resource: %v", err)
	}
	if now, _ := db.Resolve(ctx, snapshots.Ref{}); now.Rev.Number != before.Rev.Number {
		t.Fatalf("failed transforms wrote revision %d", now.Rev.Number)
	}

	res, err := e.TransformResource(ctx, db, "counter", `.n += $by | .log += [$by]`, map[string]any{"by": 5}, snapshots.WriteOptions{Message: "add"})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(mustJSON(t, db, "counter")); got != `{"log":[5],"n":5}` || res.Revision != before.Rev.Number+1 {
		t.Fatalf("after transform: %s at %d", got, res.Revision)
	}
	// A stale expected head is a conflict, and writes nothing.
	if _, err := e.TransformResource(ctx, db, "counter", `.n += 1`, nil, snapshots.WriteOptions{ExpectedHead: before.Rev.Number}); !errors.Is(err, snapshots.ErrConflict) {
		t.Errorf("stale head: %v", err)
	}
	// Concurrent transforms without an expected head each apply once, on the head they read (retrying on
	// conflict), so no increment is lost while there are few enough writers for the retries.
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.TransformResource(context.Background(), db, "counter", `.n += 1`, nil, snapshots.WriteOptions{})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	ok := 0
	for err := range errs {
		if err == nil {
			ok++
		} else if !errors.Is(err, snapshots.ErrConflict) {
			t.Error(err)
		}
	}
	if got := string(mustJSON(t, db, "counter")); got != fmt.Sprintf(`{"log":[5],"n":%d}`, 5+ok) {
		t.Errorf("after %d concurrent increments: %s", ok, got)
	}
	if got := string(mustJSON(t, db, "other")); got != `{"x":1}` {
		t.Errorf("other resource changed: %s", got)
	}
	// A transform that is too large writes nothing.
	e2 := newEngine(t, Options{MaxTransformBytes: 100})
	if _, err := e2.TransformResource(ctx, db, "counter", `.log = [range(100)]`, nil, snapshots.WriteOptions{}); !errors.Is(err, ErrLimit) {
		t.Errorf("large transform: %v", err)
	}
	if !strings.Contains(string(mustJSON(t, db, "counter")), `"log":[5]`) {
		t.Error("the large transform wrote")
	}
}

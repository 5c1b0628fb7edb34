package query

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/itchyny/gojq"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
)

// testDoc is a document with the awkward parts of JSON: exact decimals, big integers, escapes, unicode, nesting,
// and enough elements to span several nodes.
func testDoc(rng *rand.Rand, n int) string {
	var b strings.Builder
	b.WriteString(`{"users":[`)
	names := []string{`plain`, `quote\"and\\slash`, `tab\tnew\nline`, `ünïcödé ☃`, `emoji 😀`, `ctl\u0001`}
	ratios := []string{`0.10`, `1e3`, `-0`, `2.5E-3`, `12345678901234567890`, `7`, `-3`, `1.0`}
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"user-%d %s","score":%d,"ratio":%s,"active":%v,"tags":["t%d","t%d"],"meta":{"depth":{"x":[%d,{"y":null}]}}}`,
			i, i, names[rng.Intn(len(names))], rng.Intn(100), ratios[rng.Intn(len(ratios))], rng.Intn(2) == 0, rng.Intn(5), rng.Intn(5), rng.Intn(10))
	}
	fmt.Fprintf(&b, `],"config":{"limits":{"max":%d,"min":-1},"name":"cfg","flags":[true,false,null],"big":123456789012345678901234567890,"pi":3.14159265358979323846}}`, rng.Intn(1000))
	return b.String()
}

// gojqAnswer runs a program with the gojq library on JSON text, as the gojq command does (json.Decoder with
// UseNumber), and returns its results as gojq writes them, or its error.
func gojqAnswer(t testing.TB, doc []byte, prog string, params map[string]any) ([]string, error) {
	t.Helper()
	q, err := gojq.Parse(prog)
	if err != nil {
		return nil, err
	}
	var names []string
	for n := range params {
		names = append(names, n)
	}
	slices.Sort(names)
	var vals []any
	for _, n := range names {
		vals = append(vals, params[n])
	}
	code, err := gojq.Compile(q, gojq.WithVariables(dollar(names)))
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	var out []string
	iter := code.Run(v, vals...)
	for {
		x, ok := iter.Next()
		if !ok {
			return out, nil
		}
		if err, ok := x.(error); ok {
			return out, err
		}
		b, err := gojq.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
}

// comparePrograms are run at every revision, against gojq on the exported JSON.
var comparePrograms = []struct {
	prog   string
	params map[string]any
}{
	{prog: `.`}, {prog: `.users[3]`}, {prog: `.users[3].name`}, {prog: `.users[-1]`}, {prog: `.users[-1].id`},
	{prog: `.users[100000]`}, {prog: `.users[2].nope`}, {prog: `.nope.deeper[3]`}, {prog: `.config.limits.max`},
	{prog: `.config["limits"]."min"`}, {prog: `.config.big`}, {prog: `.config.pi`}, {prog: `.config | .big, .pi`},
	{prog: `.users[] | .name`}, {prog: `.users[] | select(.score > 50) | {id, name}`},
	{prog: `[.users[] | .score] | add`}, {prog: `.users | map(.ratio)`}, {prog: `.users | length`},
	{prog: `.users | map(select(.active)) | length`}, {prog: `.users[0:3]`}, {prog: `.users[2:4][] | .id`},
	{prog: `.config | keys`}, {prog: `.config | to_entries`}, {prog: `[.users[].tags[]] | unique`},
	{prog: `.users | group_by(.active) | map(length)`}, {prog: `.users | sort_by(.score) | .[0].id`},
	{prog: `.users[] | .ratio * 2`}, {prog: `.users[] | .ratio`}, {prog: `.users[0].name | ascii_upcase`},
	{prog: `.users[] | select(.name | startswith("user-1")) | .id`}, {prog: `[paths] | length`},
	{prog: `[.. | numbers] | length`}, {prog: `.config.limits | .max + 1`}, {prog: `.config.limits.max - 1`},
	{prog: `.users[$i].name`, params: map[string]any{"i": 5}}, {prog: `.users[$i].name`, params: map[string]any{"i": -2}},
	{prog: `.[$k].name`, params: map[string]any{"k": "config"}},
	{prog: `.users[] | select(.score == $s) | .id`, params: map[string]any{"s": 42}},
	{prog: `.users[0] as $u | .config | {u: $u.id, c: .limits}`}, {prog: `.users[0].name | .x`}, {prog: `.users.x`},
	{prog: `.config[0]`}, {prog: `.users[0] | error("boom")`}, {prog: `try error({a: 1}) catch .`},
	{prog: `def f: .score; [.users[] | f] | max`}, {prog: `reduce .users[] as $u (0; . + $u.score)`},
	{prog: `.users | first, last | .id`}, {prog: `[limit(3; .users[])] | length`}, {prog: `"\(.users[0].id)-x"`},
	{prog: `.config | tojson`}, {prog: `.users[1] | {name, tags: [.tags[0], .score]}`},
	{prog: `.users[] | select(.active and .score < 10) | [.id, .score]`}, {prog: `.users[] | .meta.depth.x[1].y`},
	{prog: `.users | .[3] | .tags[]`}, {prog: `.users[] | .score % 7`}, {prog: `first(.users[] | select(.score > 90)) | .id`},
	{prog: `.config.flags[] // "none"`}, {prog: `.users[] | select(has("meta")) | .id | . + 1000`},
	{prog: `$__loc__`}, {prog: `.users[0] | keys_unsorted`}, {prog: `.users[0].name | ltrimstr("user-")`},
	{prog: `[.users[] | .ratio] | min, max`}, {prog: `.users[4] | to_entries | from_entries | .id`},
}

// TestResultsAtOldRevisions checks every program at every revision of a history, in every isolation mode, against
// gojq run on the same revision's exported JSON.
func TestResultsAtOldRevisions(t *testing.T) {
	ctx := ctxT(t)
	rng := rand.New(rand.NewSource(1))
	db := newDB(t)
	var revs []uint64
	revs = append(revs, put(t, db, "doc", testDoc(rng, 60)))
	for i := 0; i < 3; i++ {
		ops := []revision.Operation{
			{Op: "replace", Path: fmt.Sprintf("/users/%d/score", rng.Intn(50)), Value: []byte(fmt.Sprint(rng.Intn(100))), HasValue: true},
			{Op: "add", Path: "/users/0", Value: []byte(`{"id":-1,"name":"new","score":99,"ratio":0.5,"active":true,"tags":[],"meta":{}}`), HasValue: true},
			{Op: "replace", Path: "/config/limits/max", Value: []byte(fmt.Sprint(rng.Intn(1000))), HasValue: true},
		}
		res, err := db.Patch(ctx, "doc", ops, snapshots.WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, res.Revision)
	}
	bigRev := put(t, db, "doc", testDoc(rng, 1500)) // a document of many nodes
	revs = append(revs, bigRev)

	engines := map[string]*Engine{
		"auto": newEngine(t, Options{}), "all": newEngine(t, Options{Isolate: IsolateAll}),
		"none": newEngine(t, Options{Isolate: IsolateNone}),
	}
	routes := map[string]int{}
	for _, rev := range revs {
		v, _, err := db.Get(ctx, snapshots.Ref{Revision: rev}, "doc", nil)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := db.Forest().JSON(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		for ci, c := range comparePrograms {
			if rev == bigRev && ci%5 != 0 {
				continue // on the large document, every fifth program is enough
			}
			want, wantErr := gojqAnswer(t, doc, c.prog, c.params)
			for name, e := range engines {
				r, err := queryAll(ctx, e, db, snapshots.Ref{Revision: rev}, Request{Resource: "doc", Program: c.prog, Params: c.params, Limit: 1000, Caller: "t"})
				if wantErr != nil {
					if err == nil || !errors.Is(err, ErrQuery) {
						t.Errorf("rev %d %s %q: gojq fails (%v), engine: %v", rev, name, c.prog, wantErr, err)
					}
					continue
				}
				if err != nil {
					if errors.Is(err, ErrLimit) && len(strings.Join(want, "")) > 1<<20 {
						continue // the whole 3000-user document is over the output limit
					}
					t.Errorf("rev %d %s %q: %v", rev, name, c.prog, err)
					continue
				}
				if r.Revision != rev {
					t.Errorf("read revision %d, not %d", r.Revision, rev)
				}
				got := make([]string, len(r.Results))
				for i, x := range r.Results {
					got[i] = string(x)
				}
				if !slices.Equal(got, want) {
					t.Errorf("rev %d %s %q (%s):\n got %.300s\nwant %.300s", rev, name, c.prog, r.Plan.Route, strings.Join(got, " "), strings.Join(want, " "))
				}
				routes[name+"/"+r.Plan.Route]++
			}
		}
	}
	t.Logf("routes: %v", routes)
	if routes["auto/read"] == 0 || routes["auto/in-process"] == 0 || routes["auto/worker"] == 0 || routes["all/in-process"] != 0 || routes["none/worker"] != 0 {
		t.Errorf("unexpected routes: %v", routes)
	}
}

// TestPlans checks which programs read by pointer, which run in-process and which in a worker.
func TestPlans(t *testing.T) {
	f, root := tree(t, `{"items":[{"name":"a","tags":["x"]},{"name":"b"}],"config":{"k":1},"arr":[1,2,3]}`)
	e := newEngine(t, Options{})
	cases := []struct {
		prog, route, ptr, want string
		params                 map[string]any
	}{
		{prog: `.items[1].name`, route: RouteRead, ptr: "/items/1/name", want: `"b"`},
		{prog: `.["items"][0]."name"`, route: RouteRead, ptr: "/items/0/name", want: `"a"`},
		{prog: `.items[-1]`, route: RouteRead, ptr: "/items/1", want: `{"name":"b"}`},
		{prog: `.items[5].name`, route: RouteRead, ptr: "/items/5/name", want: `null`},
		{prog: `.missing.a[2]`, route: RouteRead, ptr: "/missing/a/2", want: `null`},
		{prog: `.items[$i].name`, params: map[string]any{"i": 0}, route: RouteRead, ptr: "/items/0/name", want: `"a"`},
		{prog: `.[$k]`, params: map[string]any{"k": "config"}, route: RouteRead, ptr: "/config", want: `{"k":1}`},
		{prog: `.items[0].tags[]`, route: RouteInProcess, ptr: "/items/0/tags", want: `"x"`},
		{prog: `.items[0] | .name`, route: RouteInProcess, ptr: "/items/0", want: `"a"`},
		{prog: `.items[] | select(.name == "b") | {name}`, route: RouteInProcess, ptr: "/items", want: `{"name":"b"}`},
		{prog: `.config.k?`, route: RouteInProcess, ptr: "/config/k", want: `1`},
		{prog: `.arr | map(. * 2)`, route: RouteWorker, ptr: "/arr", want: `[2,4,6]`},
		{prog: `.arr as $a | .config`, route: RouteInProcess, ptr: "", want: `{"k":1}`},
		{prog: `.arr.x?`, route: RouteInProcess, ptr: "/arr", want: ``},
		{prog: `[.arr[] | . + 1]`, route: RouteWorker, ptr: "", want: `[2,3,4]`},
		{prog: `[.arr[0], .arr[1]]`, route: RouteInProcess, ptr: "", want: `[1,2]`},
		{prog: `{a: .arr[0]} | .a`, route: RouteWorker, ptr: "", want: `1`},
		{prog: `.config | keys`, route: RouteInProcess, ptr: "/config", want: `["k"]`},
		{prog: `.arr[1:]`, route: RouteInProcess, ptr: "/arr", want: `[2,3]`},
	}
	for _, c := range cases {
		r, err := e.Run(ctxT(t), Request{Forest: f, Root: root, Revision: 1, Resource: "doc", Program: c.prog, Params: c.params})
		if err != nil {
			t.Errorf("%s: %v", c.prog, err)
			continue
		}
		if r.Plan.Route != c.route || r.Plan.Pointer != c.ptr || joined(r.Results) != c.want {
			t.Errorf("%s: route %s pointer %q results %s; want %s %q %s (%s)", c.prog, r.Plan.Route, r.Plan.Pointer, joined(r.Results), c.route, c.ptr, c.want, r.Plan.Why)
		}
	}
}

// TestBoundedClassifier checks the in-process subset on programs that must not be in it.
func TestBoundedClassifier(t *testing.T) {
	unbounded := []string{
		`"x" * 2000000000`, `. + .`, `.a + .b`, `[.[]]`, `[.[] | .a]`, `{a: ., b: .} | {a: ., b: .}`, `tojson`,
		`tostring`, `"\(.)"`, `@base64`, `reduce .[] as $x (0; . + 1)`, `foreach .[] as $x (0; 1)`, `def f: f; f`,
		`range(10)`, `repeat(1)`, `recurse(.a)`, `[..]`, `.a = 1`, `.a |= 1`, `del(.a)`, `sort`, `add`, `join(",")`,
		`test("a")`, `split(",")`, `. / ","`, `to_entries`, `paths`, `getpath(["a"])`, `contains(["a"])`, `. - .`,
		`[limit(5; .[])]`, `{a: 1} as $x | $x`, `[.a, .b] | length`, `ltrimstr(tojson)`, `until(false; .)`,
		`error({a: .})`, `label $f | [.[]]`, `.[] as [$a, $b] | [$a, $b, .[]]`,
	}
	for _, p := range unbounded {
		q, err := gojq.Parse(p)
		if err != nil {
			t.Fatal(p, err)
		}
		if ok, _ := classify(q); ok {
			t.Errorf("%s is classified bounded", p)
		}
	}
	bounded := []string{
		`.`, `.a.b[3]`, `.[] | select(.x > 1) | {x, y: .z}`, `..|numbers`, `.a // "d"`, `.x + 1`, `1 - .x`, `.n % 3`,
		`.[] as $x | $x.a`, `if .a then .b elif .c then .d else empty end`, `try .a catch "e"`, `first(.[])`,
		`limit(3; .[])`, `[.a, .b]`, `{a: {b: [.c, .d]}}`, `keys`, `length`, `has("a")`, `.a | startswith("x")`,
		`any(.[]; . > 2)`, `$__loc__`, `$ENV`, `.[1:3]`, `label $out | .[] | ., break $out`, `.[] | ascii_downcase`,
	}
	for _, p := range bounded {
		q, err := gojq.Parse(p)
		if err != nil {
			t.Fatal(p, err)
		}
		if ok, why := classify(q); !ok {
			t.Errorf("%s is not classified bounded: %s", p, why)
		}
	}
}

// TestPagingEqualsUnpaged pages through many results, by count and by bytes, in every isolation mode.
func TestPagingEqualsUnpaged(t *testing.T) {
	ctx := ctxT(t)
	rng := rand.New(rand.NewSource(2))
	db := newDB(t)
	put(t, db, "doc", testDoc(rng, 60))
	programs := []string{`.users[] | {id, name}`, `.users[] | .tags[]`, `[.users[] | .id] | .[]`, `.. | scalars`}
	for _, iso := range []Isolation{IsolateAuto, IsolateAll, IsolateNone} {
		e := newEngine(t, Options{Isolate: iso, MaxOutputBytes: 4 << 10})
		for _, prog := range programs {
			var all []string
			full, err := e.Query(ctx, db, snapshots.Ref{}, Request{Resource: "doc", Program: prog, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			// The byte limit cuts even the "unpaged" answer; follow it to the end.
			for _, x := range full.Results {
				all = append(all, string(x))
			}
			for cur := full.NextCursor; cur != ""; {
				r, err := e.Query(ctx, db, snapshots.Ref{}, Request{Resource: "doc", Program: prog, Limit: 1000, Cursor: cur})
				if err != nil {
					t.Fatal(err)
				}
				for _, x := range r.Results {
					all = append(all, string(x))
				}
				cur = r.NextCursor
			}
			want, err := gojqAnswer(t, mustJSON(t, db, "doc"), prog, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(all, want) {
				t.Fatalf("%v %s: byte-paged answer differs from gojq (%d vs %d results)", iso, prog, len(all), len(want))
			}
			for _, size := range []int{1, 7, 64} {
				if size == 7 && prog == programs[len(programs)-1] {
					continue
				}
				var got []string
				pages := 0
				req := Request{Resource: "doc", Program: prog, Limit: size, Caller: "agent"}
				for {
					r, err := e.Query(ctx, db, snapshots.Ref{}, req)
					if err != nil {
						t.Fatalf("%v %s page %d of %d: %v", iso, prog, pages, size, err)
					}
					pages++
					if len(r.Results) > size {
						t.Fatalf("page of %d results, limit %d", len(r.Results), size)
					}
					for _, x := range r.Results {
						got = append(got, string(x))
					}
					if !r.More {
						if r.NextCursor != "" {
							t.Fatal("cursor without more")
						}
						break
					}
					req.Cursor = r.NextCursor
					if size == 1 && pages > 15 {
						got = append(got, want[len(got):]...) // enough single pages; the rest is covered by 7 and 64
						break
					}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%v %s pages of %d: %d results, want %d", iso, prog, size, len(got), len(want))
				}
			}
		}
	}
}

func mustJSON(t testing.TB, db *snapshots.DB, resource string) []byte {
	t.Helper()
	v, _, err := db.Get(context.Background(), snapshots.Ref{}, resource, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.Forest().JSON(context.Background(), v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCursorNeverStale continues a query on the revision it started on after the branch moved.
func TestCursorNeverStale(t *testing.T) {
	ctx := ctxT(t)
	db := newDB(t)
	put(t, db, "doc", `[1,2,3,4,5]`)
	e := newEngine(t, Options{})
	r1, err := e.Query(ctx, db, snapshots.Ref{}, Request{Resource: "doc", Program: `.[]`, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	put(t, db, "doc", `[10,20,30,40,50,60]`)
	r2, err := e.Query(ctx, db, snapshots.Ref{}, Request{Resource: "doc", Program: `.[]`, Limit: 10, Cursor: r1.NextCursor})
	if err != nil {
		t.Fatal(err)
	}
	if joined(r2.Results) != "3\n4\n5" || r2.Revision != r1.Revision || r2.More {
		t.Fatalf("continued at revision %d with %s", r2.Revision, joined(r2.Results))
	}
	if rev, _ := CursorRevision(r1.NextCursor); rev != r1.Revision {
		t.Fatalf("CursorRevision %d", rev)
	}
}

// TestCursorForgery: altered, truncated, forged and misapplied cursors are refused.
func TestCursorForgery(t *testing.T) {
	ctx := ctxT(t)
	db := newDB(t)
	put(t, db, "doc", `[1,2,3,4,5,6,7,8,9]`)
	put(t, db, "other", `[1,2,3,4,5,6,7,8,9]`)
	e := newEngine(t, Options{})
	base := Request{Resource: "doc", Program: `.[]`, Limit: 2, Caller: "alice", Params: map[string]any{"p": 1}}
	r, err := e.Query(ctx, db, snapshots.Ref{}, base)
	if err != nil || r.NextCursor == "" {
		t.Fatal(r, err)
	}
	good := r.NextCursor
	if _, err := e.Query(ctx, db, snapshots.Ref{}, withCursor(base, good)); err != nil {
		t.Fatalf("the genuine cursor: %v", err)
	}
	refused := func(what string, req Request) {
		t.Helper()
		_, err := e.Query(ctx, db, snapshots.Ref{}, req)
		if !errors.Is(err, ErrQuery) && !errors.Is(err, snapshots.ErrNotFound) {
			t.Errorf("%s: accepted (%v)", what, err)
		}
	}
	raw := []byte(good)
	for i := range raw {
		alt := slices.Clone(raw)
		alt[i] ^= 1
		refused(fmt.Sprintf("byte %d flipped", i), withCursor(base, string(alt)))
	}
	refused("truncated", withCursor(base, good[:len(good)-2]))
	refused("extended", withCursor(base, good+"A"))
	refused("empty-ish", withCursor(base, "AQ"))
	refused("garbage", withCursor(base, "not a cursor at all!"))
	refused("padded", withCursor(base, good+"=="))
	// A cursor built with the right layout but another key (a forger who knows the format).
	forged := makeCursor([]byte("0123456789abcdef0123456789abcdef"), &cursorBinding{program: base.Program, resource: "doc", caller: "alice"}, r.Revision, 2)
	refused("forged with another key", withCursor(base, forged))
	// A genuine cursor on a different query.
	other := base
	other.Program = `.[] | .`
	refused("other program", withCursor(other, good))
	other = base
	other.Params = map[string]any{"p": 2}
	refused("other params", withCursor(other, good))
	other = base
	other.Resource = "other"
	refused("other resource", withCursor(other, good))
	other = base
	other.Caller = "mallory"
	refused("other caller", withCursor(other, good))
	// Another engine (another process) does not know this one's key.
	e2 := newEngine(t, Options{})
	if _, err := e2.Query(ctx, db, snapshots.Ref{}, withCursor(base, good)); !errors.Is(err, ErrQuery) {
		t.Errorf("another engine accepted the cursor: %v", err)
	}
	// With a shared key it is accepted there too.
	key := []byte("a shared cursor key, 32 bytes..!")
	e3, e4 := newEngine(t, Options{CursorKey: key}), newEngine(t, Options{CursorKey: key})
	r3, err := e3.Query(ctx, db, snapshots.Ref{}, base)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e4.Query(ctx, db, snapshots.Ref{}, withCursor(base, r3.NextCursor)); err != nil {
		t.Errorf("shared key: %v", err)
	}
	// The same revision number of another database (another root) refuses the cursor.
	db2 := newDB(t)
	put(t, db2, "doc", `[9,9,9,9,9,9]`)
	put(t, db2, "other", `[1]`)
	if _, err := e.Query(ctx, db2, snapshots.Ref{}, withCursor(base, good)); !errors.Is(err, ErrQuery) {
		t.Errorf("a cursor moved to another database was accepted: %v", err)
	}
}

// queryAll follows cursors to the end and returns every result in one Result.
func queryAll(ctx context.Context, e *Engine, db *snapshots.DB, ref snapshots.Ref, req Request) (*Result, error) {
	all, err := e.Query(ctx, db, ref, req)
	if err != nil {
		return nil, err
	}
	for cur := all.NextCursor; cur != ""; {
		req.Cursor = cur
		r, err := e.Query(ctx, db, ref, req)
		if err != nil {
			return nil, err
		}
		all.Results = append(all.Results, r.Results...)
		cur = r.NextCursor
	}
	all.More, all.NextCursor = false, ""
	return all, nil
}

func withCursor(r Request, c string) Request {
	r.Cursor = c
	return r
}

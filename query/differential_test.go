package query

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/jqdiff"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/store"
)

// The differential tests: every program answers exactly what plain gojq answers on the materialised document
// (internal/jqdiff is the reference). Pushdown, the materialised-value cache and the worker processes are
// optimisations; these tests run with all of them on, and count how often each was used so that a change that
// stopped exercising one cannot pass unnoticed.

// diffRun is one case run through the engine: every page, then the error it ended with.
type diffRun struct {
	results [][]byte
	errText string
	routes  map[string]bool
	pointer bool // some leading path was read by pointer
	split   bool // some page ran split over an array's elements (split.go)
}

func runEngine(ctx context.Context, e *Engine, db *snapshots.DB, resource string, c jqdiff.Case, max int) (diffRun, error) {
	params, err := c.ParamValues()
	if err != nil {
		return diffRun{}, err
	}
	out := diffRun{routes: map[string]bool{}}
	cursor := ""
	for len(out.results) < max {
		res, err := e.Query(ctx, db, snapshots.Ref{}, Request{Resource: resource, Program: c.Program, Params: params, Limit: 1000, Cursor: cursor, Caller: "tester"})
		if err != nil {
			out.errText = err.Error()
			return out, nil
		}
		out.routes[res.Plan.Route] = true
		out.pointer = out.pointer || res.Plan.Pointer != ""
		out.split = out.split || res.Plan.Split != ""
		for _, r := range res.Results {
			out.results = append(out.results, r)
		}
		if !res.More {
			break
		}
		cursor = res.NextCursor
	}
	return out, nil
}

// differ runs cases against one database holding every corpus document, each as its own resource.
type differ struct {
	t     *testing.T
	e     *Engine
	db    *snapshots.DB
	docs  map[string]any // decoded documents by resource name
	root  map[string]any // the object of all resources
	fails []string
	n     int
	stats map[string]int
}

func newDiffer(t *testing.T, o Options) *differ {
	d := &differ{t: t, e: newEngine(t, o), db: newDB(t), docs: map[string]any{}, root: map[string]any{}, stats: map[string]int{}}
	for _, doc := range jqdiff.Documents() {
		put(t, d.db, doc.Name, doc.Text)
		v, err := jqdiff.Decode(doc.Text)
		if err != nil {
			t.Fatalf("%s: %v", doc.Name, err)
		}
		d.docs[doc.Name], d.root[doc.Name] = v, v
	}
	return d
}

// check runs one case on a resource ("" for the object of all resources) and records a mismatch.
func (d *differ) check(resource string, c jqdiff.Case) {
	d.t.Helper()
	const max = 5000
	input := any(d.root)
	if resource != "" {
		input = d.docs[resource]
	}
	params, err := c.ParamValues()
	if err != nil {
		d.t.Fatalf("line %d: params: %v", c.Line, err)
	}
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	ref := jqdiff.Run(rctx, input, c.Program, params, max)
	cancel()
	if ref.Timeout {
		d.stats["reference timed out"]++
		return
	}
	got, err := runEngine(ctxT(d.t), d.e, d.db, resource, c, max)
	if err != nil {
		d.t.Fatal(err)
	}
	d.n++
	for r := range got.routes {
		d.stats["route "+r]++
	}
	if got.pointer {
		d.stats["pushed down"]++
	}
	if got.split {
		d.stats["split"]++
	}
	if ref.Err != nil {
		d.stats["errors"]++
	}
	if err := jqdiff.Compare(ref, got.results, got.errText); err != nil {
		where := "resource " + resource
		if resource == "" {
			where = "the object of all resources"
		}
		if c.Line > 0 {
			where += ", programs.txt:" + strconv.Itoa(c.Line)
		}
		params := ""
		if c.Params != "" {
			params = " with params " + c.Params
		}
		d.fails = append(d.fails, fmt.Sprintf("%s on %s%s: %v", c.Program, where, params, err))
	}
}

func (d *differ) report(minPushed int) {
	d.t.Helper()
	d.t.Logf("%d cases compared: %v", d.n, d.stats)
	if len(d.fails) > 0 {
		shown := d.fails
		if len(shown) > 40 {
			shown = shown[:40]
		}
		d.t.Errorf("%d of %d cases answer differently from gojq:\n%s", len(d.fails), d.n, strings.Join(shown, "\n"))
	}
	if d.stats["pushed down"] < minPushed {
		d.t.Errorf("only %d cases read a leading path by pointer, want at least %d: the test no longer exercises the pushdown", d.stats["pushed down"], minPushed)
	}
}

// TestDifferentialCorpus runs the hand-written corpus on every document, and the programs generated around each
// document's literal paths, both on the document as the resource and on the object of all resources.
func TestDifferentialCorpus(t *testing.T) {
	d := newDiffer(t, Options{})
	corpus := jqdiff.Corpus()
	for _, doc := range jqdiff.Documents() {
		for _, c := range corpus {
			d.check(doc.Name, c)
		}
		around, err := jqdiff.AroundPrefixes(doc.Text, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range around {
			d.check(doc.Name, c)
		}
		around, err = jqdiff.AroundPrefixes(doc.Text, doc.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range around {
			d.check("", c)
		}
	}
	d.report(1000)
	if d.stats["route "+RouteWorker] == 0 || d.stats["route "+RouteInProcess] == 0 || d.stats["route "+RouteRead] == 0 ||
		d.stats["split"] == 0 {
		t.Errorf("every route must be exercised, and programs that split: %v", d.stats)
	}
}

// TestDifferentialRandom compares random programs over random documents (internal/jqdiff.Random), from a seed
// that is printed so that a failure replays (STRATA_DIFF_SEED=…, and STRATA_DIFF_N for more cases).
func TestDifferentialRandom(t *testing.T) {
	seed := time.Now().UnixNano()
	if s := os.Getenv("STRATA_DIFF_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	n := 400
	if testing.Short() {
		n = 100
	}
	if s := os.Getenv("STRATA_DIFF_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	t.Logf("seed %d (STRATA_DIFF_SEED=%d replays it)", seed, seed)
	r := rand.New(rand.NewSource(seed))
	e := newEngine(t, Options{})
	fails, pushed, split := 0, 0, 0
	for i := 0; i < n && fails < 10; i++ {
		doc, c := jqdiff.Random(r)
		msg, ok := differential(t, e, doc, c)
		switch {
		case !ok:
			fails++
			t.Errorf("case %d: %s", i, msg)
		default:
			if strings.Contains(msg, "pushed") {
				pushed++
			}
			if strings.Contains(msg, "split") {
				split++
			}
		}
	}
	t.Logf("%d cases: %d read a path by pointer, %d split", n, pushed, split)
	if pushed < n/10 {
		t.Errorf("only %d of %d random cases read a path by pointer: the generator no longer exercises the pushdown", pushed, n)
	}
	if split < n/100 {
		t.Errorf("only %d of %d random cases split over an array's elements: the generator no longer exercises split.go", split, n)
	}
}

// differential runs one random case on a fresh database; it reports whether Strata agreed with gojq, and when it
// did, "pushed" if a leading path was read by pointer and "split" if it ran split over an array's elements.
func differential(t *testing.T, e *Engine, doc string, c jqdiff.Case) (string, bool) {
	t.Helper()
	input, err := jqdiff.Decode(doc)
	if err != nil {
		t.Fatalf("generated document is not JSON: %v\n%s", err, doc)
	}
	params, err := c.ParamValues()
	if err != nil {
		t.Fatalf("generated params: %v", err)
	}
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	ref := jqdiff.Run(rctx, input, c.Program, params, 2000)
	cancel()
	if ref.Timeout {
		return "", true
	}
	db := newDB(t)
	put(t, db, "doc", doc)
	got, err := runEngine(ctxT(t), e, db, "doc", c, 2000)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := jqdiff.Compare(ref, got.results, got.errText); err != nil {
		p, _ := json.Marshal(c.Program)
		return fmt.Sprintf("program %s params %s on %s:\n%v", p, c.Params, clipUTF8(doc, 400), err), false
	}
	var how []string
	if got.pointer {
		how = append(how, "pushed")
	}
	if got.split {
		how = append(how, "split")
	}
	return strings.Join(how, " "), true
}

// FuzzDifferential compares Strata and gojq on documents and programs the fuzzer makes. A document that is not
// JSON, or a program that does not parse, is replaced by one generated from seed (so mutations of either still
// exercise the other); a program the fuzzer wrote runs only if it is bounded (see bounded.go), since the reference
// runs in this process with no memory limit.
//
//	go test ./query -run '^$' -fuzz FuzzDifferential -fuzztime 5m
func FuzzDifferential(f *testing.F) {
	for _, doc := range jqdiff.Documents() {
		if len(doc.Text) < 1000 {
			for _, c := range jqdiff.Corpus()[:60] {
				f.Add(int64(len(c.Program)), doc.Text, c.Program)
			}
		}
	}
	f.Add(int64(1), "", "")
	f.Add(int64(2), "{}", ".a[.b]")
	e := newEngine(f, Options{Timeout: 2 * time.Second})
	f.Fuzz(func(t *testing.T, seed int64, doc, prog string) {
		r := rand.New(rand.NewSource(seed))
		gdoc, c := jqdiff.Random(r)
		if !storable(doc) {
			doc = gdoc
		}
		if prog != "" && len(prog) < 1<<12 {
			if p, err := analyse(prog, nil); err == nil {
				if !p.bounded && p.split(-1) == nil {
					// (A program that splits, split.go, runs in-process in Strata: its reference is safe too.)
					t.Skip("not bounded: the reference would run it without a memory limit")
				}
				c = jqdiff.Case{Program: prog}
			}
		}
		if msg, ok := differential(t, e, doc, c); !ok {
			t.Error(msg)
		}
	})
}

// storable reports whether Strata takes doc as a document: one JSON value that is also strict JSON by Strata's
// rules (no duplicate keys, valid UTF-8, at most revision.MaxDepth deep) and small enough for a fuzz case.
func storable(doc string) bool {
	if _, err := jqdiff.Decode(doc); err != nil || len(doc) > 1<<16 {
		return false
	}
	_, _, err := revision.New(store.NewMem(), nil).ImportBytes(context.Background(), []byte(doc))
	return err == nil
}

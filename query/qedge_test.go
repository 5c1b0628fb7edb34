package query

import (
	"context"
	"encoding/json"
	"errors"
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
)

// Edge values of the tree layout (elements larger than a node, long and odd keys, strings across nodes, extreme
// numbers, deep nesting, empties, nulls, mixed types) through the optimised paths, compared byte for byte with
// plain gojq on encoding/json-with-UseNumber input (internal/jqdiff), cold and after a single-field commit, with
// default options and with IsolateAll.

var edgeNumbers = []string{"1e400", "-1e400", "-0", "0", "1.0", "1", "1E400", "1e-400", "-0.0", "0.0", "2",
	"100000000000000000000", "-9223372036854775808", "9223372036854775807", "9223372036854775808", "0.1",
	"1.5e300", "-1", "3", "1e2", "5E-1"}

func edgeBigDigits(r *rand.Rand, n int) string {
	var b strings.Builder
	b.WriteByte(byte('1' + r.Intn(9)))
	for b.Len() < n {
		b.WriteByte(byte('0' + r.Intn(10)))
	}
	return b.String()
}

func edgeNumber(r *rand.Rand) json.Number {
	switch r.Intn(12) {
	case 0:
		return json.Number(edgeBigDigits(r, 2000+r.Intn(2000)))
	case 1:
		return json.Number("-" + edgeBigDigits(r, 100) + "." + edgeBigDigits(r, 50) + "e-" + strconv.Itoa(r.Intn(900)))
	}
	return json.Number(edgeNumbers[r.Intn(len(edgeNumbers))])
}

var edgeRunes = []string{"a", "é", "😀", "\"", "\\", "\n", "\u007f", "/", "~", ".", "\u2028", "\t", "\u0001", "中", " "}

func edgeString(r *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		if r.Intn(4) == 0 {
			b.WriteString(edgeRunes[r.Intn(len(edgeRunes))])
		} else {
			b.WriteByte(byte('a' + r.Intn(26)))
		}
	}
	return b.String()
}

var edgeKeys = []string{"a/b", "~0", "~1", "a.b", `"q"`, "é", "😀", "", " ", "x.y", "/", "~", "\u007f", "k\n"}

func edgeScalar(r *rand.Rand) any {
	switch r.Intn(6) {
	case 0:
		return nil
	case 1:
		return r.Intn(2) == 0
	case 2:
		return edgeString(r, r.Intn(12))
	}
	return edgeNumber(r)
}

// edgeObject is an object with x and k (what the programs read) and more.
func edgeObject(r *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	if r.Intn(5) > 0 {
		m["x"] = edgeScalar(r)
	}
	if r.Intn(5) > 0 {
		switch r.Intn(3) {
		case 0:
			m["k"] = edgeString(r, 1+r.Intn(3))
		case 1:
			m["k"] = edgeNumber(r)
		default:
			m["k"] = edgeScalar(r)
		}
	}
	switch r.Intn(8) {
	case 0, 2:
		if r.Intn(4) > 0 {
			break // keep the big ones few
		}
		if r.Intn(2) == 0 {
			m["s"] = edgeString(r, 40<<10)
			break
		}
		fallthrough
	case 100: // 2,000 members
		for i := range 2000 {
			m[fmt.Sprintf("m%04d", i)] = i
		}
	case 1: // long and odd keys
		for range 3 {
			m[edgeString(r, 1025+r.Intn(200))] = edgeScalar(r)
		}
		for _, k := range edgeKeys {
			if r.Intn(2) == 0 {
				m[k] = edgeScalar(r)
			}
		}
	case 3:
		m["s"] = edgeString(r, 4090+r.Intn(12))
	case 4:
		m["v"] = edgeValue(r, depth+1)
	}
	return m
}

func edgeDeep(r *rand.Rand, levels int) any {
	var v any = edgeScalar(r)
	for range levels {
		if r.Intn(2) == 0 {
			v = []any{v}
		} else {
			v = map[string]any{"d": v}
		}
	}
	return v
}

// edgeValue is one element of the array.
func edgeValue(r *rand.Rand, depth int) any {
	if depth > 3 {
		return edgeScalar(r)
	}
	switch r.Intn(14) {
	case 0:
		return edgeString(r, 40<<10)
	case 1:
		return edgeString(r, 4090+r.Intn(12))
	case 2:
		return edgeNumber(r)
	case 3:
		return []any{}
	case 4:
		return map[string]any{}
	case 5:
		return nil
	case 6:
		return []any{json.Number("1"), "a", nil, map[string]any{}, []any{}, true, edgeNumber(r)}
	case 7:
		return edgeDeep(r, 500-depth)
	}
	return edgeObject(r, depth)
}

// edgeDoc is {"arr": [...], "a": {"b": …}, "a/b": …, "~0": …, …}: the array is also stored as a resource of its own.
func edgeDoc(r *rand.Rand) map[string]any {
	n := 3 + r.Intn(30)
	if r.Intn(3) == 0 {
		n = 60 + r.Intn(100)
	}
	arr := make([]any, n)
	objects := r.Intn(2) == 0 // an array of objects only, so that .x does not stop at the first element
	for i := range arr {
		if objects {
			arr[i] = edgeObject(r, 1)
		} else {
			arr[i] = edgeValue(r, 1)
		}
	}
	doc := map[string]any{"arr": arr, "a": map[string]any{"b": edgeValue(r, 2), "a/b": edgeScalar(r)}}
	for _, k := range edgeKeys {
		doc[k] = edgeValue(r, 1)
	}
	doc[strings.Repeat("L", 1100)] = edgeScalar(r)
	return doc
}

var edgeArrayPrograms = []string{
	`.[]`, `.[] | .x`, `.[] | .x?`, `.[] | select(.x > 1)`, `.[] | select(.x? > 1)`, `.[] | select(.x == 1)`,
	`.[] | select(.x? == 0)`, `.[] | select(.k? != null) | .k`, `map(.x?)`, `map(.k)`, `map(.x)`,
	`[.[] | select(.x > 1)] | length`, `[.[] | select(.x? > 1)] | length`, `add`, `map(.x?) | add`, `[.[] | .x?] | add`,
	`map(.k?) | add`, `group_by(.k?)`, `group_by(.k)`, `length`, `keys`, `.[2:5]`, `.[-1]`, `first`, `last`, `limit(3; .[])`,
	`to_entries`, `[paths] | length`, `[..|numbers]`, `[tostream] | length`, `@json`, `tojson`, `.[] | tojson`,
	`.[] | length`, `map(type)`, `.[] | {x}`, `.[] | .["a/b"]?`, `.[] | ."~0"?`, `.[0]`, `.[1]`, `.[] | -(.x?)`,
	`map(.x? | numbers) | add`, `[.[] | .x? | numbers] | add | -(.)`, `.[] | .s? | length`, `map(select(.x? >= 1)) | length`,
	`.[] | select(.x? < 1e400)`, `[.[] | .x? | numbers] | add`, `.[] | first(.x?, 1)`, `limit(2; .[] | .k?)`,
	`.[] | select(.x? == -0)`, `.[] | select(.x? == 1.0)`, `paths | select(length < 3)`, `.[] | keys?`,
	`map(.x?) | sort`, `map(.x?) | unique`, `map(.x?) | max`, `map(.x?) | min`, `[.[] | .k?] | group_by(.)`,
	`[.[] | select(.x? > 1)] | .[0]`, `map(.x?) | .[-1]`, `[.[] | select(.x? != null)] | length > 2`,
	`[.[] | .x? | numbers] | add + 1`, `1 - ([.[] | .x?] | length)`, `map(.x? | numbers) | add - 1`, `map(.x?) | length * 2`,
	`[.[] | .x?] | add // "none"`, `map(.x? | strings) | add`, `map(.k? | strings) | add | length`, `map(.x? | arrays) | add`,
	`map(.v? | objects) | add | keys?`, `.[] | .x? | -(.)`, `map(.x? | abs?)`, `map(.x? | numbers | floor)`, `.[] | .x? | numbers | . == 0`,
	`map(.x? | numbers) | add | tojson`, `[.[] | .x? | numbers | select(. > 0)] | add`, `map(select(type == "object")) | length`,
	`.[] | select(.x? > 1 and .k? != null)`, `.[] | select(.x > 1 or .x < -1)`, `map(.x? // 0) | add`, `[.[] | .x?, .k?] | add`,
}

var edgeDocPrograms = []string{
	`.arr | .[] | .x?`, `.arr | map(.x?)`, `.arr[] | select(.x? > 1)`, `.arr | [.[] | select(.x? > 1)] | length`,
	`.arr | add`, `.arr | length`, `.arr[2:5]`, `.arr[-1]`, `.arr[0]`, `.arr | first`, `.arr | last`, `.arr[1].x`,
	`.a.b`, `.a."a/b"`, `."a/b"`, `.["~0"]`, `.["~1"]`, `."a.b"`, `.["\"q\""]`, `.["é"]`, `.["😀"]`, `.[""]`, `.[" "]`,
	`.["/"]`, `.["~"]`, `.["\u007f"]`, `.["k\n"]`, `.["x.y"]`, `."a/b" | length`, `.["~0"] | tojson`, `.a.b.c?`,
	`.["` + strings.Repeat("L", 1100) + `"]`, `keys`, `to_entries | length`, `.[$k]`, `.a[$k]`, `.arr[$i]`, `.arr | .[$i]`,
	`."a/b" | .[] | .x?`, `.["~0"] | map(.x?)`,
}

type edgeEngine struct {
	name string
	e    *Engine
}

// edgeRun is the engine's answer over every page: results, the error, whether it split, and the pages' plans.
func edgeRun(ctx context.Context, e *Engine, db *snapshots.DB, ref snapshots.Ref, resource, prog string, params map[string]any, limit, max int) (results [][]byte, errText string, plans []Plan, err error) {
	cursor := ""
	for len(results) < max {
		res, qerr := e.Query(ctx, db, ref, Request{Resource: resource, Program: prog, Params: params, Limit: limit, Cursor: cursor, Caller: "tester"})
		if qerr != nil {
			return results, qerr.Error(), plans, nil
		}
		plans = append(plans, res.Plan)
		if len(res.Results) == 0 && res.More {
			return nil, "", nil, fmt.Errorf("an empty page with more")
		}
		for _, b := range res.Results {
			results = append(results, b)
		}
		if !res.More {
			break
		}
		cursor = res.NextCursor
	}
	return results, "", plans, nil
}

// edgeCompare compares byte for byte when the reference succeeded, else as jqdiff.Compare does.
func edgeCompare(ref jqdiff.Outcome, got [][]byte, errText string) error {
	if ref.Err == nil && errText == "" {
		if len(got) != len(ref.Results) {
			return fmt.Errorf("%d results, gojq gave %d: Strata %s gojq %s", len(got), len(ref.Results), clipUTF8(string(joinB(got)), 300), clipUTF8(strings.Join(ref.Results, " "), 300))
		}
		for i := range got {
			if string(got[i]) != ref.Results[i] {
				return fmt.Errorf("result %d differs:\n  Strata: %s\n  gojq:   %s", i, clipUTF8(string(got[i]), 300), clipUTF8(ref.Results[i], 300))
			}
		}
		return nil
	}
	return jqdiff.Compare(ref, got, errText)
}

func joinB(bs [][]byte) []byte {
	var out []byte
	for i, b := range bs {
		if i > 0 {
			out = append(out, ' ')
		}
		out = append(out, b...)
	}
	return out
}

func edgeText(t testing.TB, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// edgeWorkerMemory is the workers' memory in the edge tests: they hold answers to gojq's, not limits, and a worker
// built with -race takes several times the memory (a [tostream] of a 10,000-element document crossed the default
// 256 MiB in a CI run).
const edgeWorkerMemory = 2 << 30

// TestEdgeDifferential is the seeded random differential test over edge values.
func TestEdgeDifferential(t *testing.T) {
	seed := int64(1)
	if s := os.Getenv("QEDGE_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	docs := 1
	if s := os.Getenv("QEDGE_DOCS"); s != "" {
		docs, _ = strconv.Atoi(s)
	}
	r := rand.New(rand.NewSource(seed))
	engines := []edgeEngine{{"default", newEngine(t, Options{WorkerMemory: edgeWorkerMemory})}, {"isolate-all", newEngine(t, Options{Isolate: IsolateAll, WorkerMemory: edgeWorkerMemory})}}
	if os.Getenv("QEDGE_DEFAULT_ONLY") != "" {
		engines = engines[:1]
	}
	ctx := ctxT(t)
	start := time.Now()
	fails, cases, splits, reused := 0, 0, 0, 0
	for d := 0; d < docs && fails < 20; d++ {
		doc := edgeDoc(r)
		db := newDB(t)
		arrText := edgeText(t, doc["arr"])
		docText := edgeText(t, doc)
		put(t, db, "arr", arrText)
		put(t, db, "doc", docText)
		arr := doc["arr"].([]any)
		for rev := 0; rev < 2 && fails < 20; rev++ {
			if rev == 1 {
				// A single-field commit: one element's x (or the element, when it is not an object).
				i := r.Intn(len(arr))
				nv := edgeNumber(r)
				path := "/" + strconv.Itoa(i)
				if m, ok := arr[i].(map[string]any); ok {
					m["x"] = nv
					path += "/x"
				} else {
					arr[i] = nv
				}
				op := "replace"
				if strings.HasSuffix(path, "/x") {
					op = "add"
				}
				ops := []revision.Operation{{Op: op, Path: path, Value: json.RawMessage(nv), HasValue: true}}
				for _, res := range []string{"arr", "doc"} {
					p := path
					if res == "doc" {
						p = "/arr" + path
					}
					ops[0].Path = p
					if _, err := db.Patch(ctx, res, ops, snapshots.WriteOptions{Author: "tester"}); err != nil {
						t.Fatalf("patch %s %s: %v", res, p, err)
					}
				}
				arrText, docText = edgeText(t, doc["arr"]), edgeText(t, doc)
			}
			inputs := map[string]any{}
			for name, text := range map[string]string{"arr": arrText, "doc": docText} {
				v, err := jqdiff.Decode(text)
				if err != nil {
					t.Fatal(err)
				}
				inputs[name] = v
			}
			run := func(resource, prog string) {
				params := map[string]any{}
				if strings.Contains(prog, "$k") || strings.Contains(prog, "$i") {
					params["k"] = edgeKeys[r.Intn(len(edgeKeys))]
					params["i"] = json.Number(strconv.Itoa(r.Intn(len(arr)+2) - 1))
				}
				rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				ref := jqdiff.Run(rctx, inputs[resource], prog, params, 5000)
				cancel()
				if ref.Timeout || len(ref.Results) >= 5000 {
					return
				}
				big := false
				for _, x := range ref.Results {
					big = big || len(x) > 1<<20
				}
				if big {
					return // over the documented 1 MiB result limit
				}
				limit := []int{3, 17, 1000}[r.Intn(3)]
				if n := len(ref.Results); n > 5*limit {
					limit = max(n/4, 1) // at most five pages: a page at offset k re-runs k results
				}
				for _, en := range engines {
					t0 := time.Now()
					got, errText, plans, err := edgeRun(ctx, en.e, db, snapshots.Ref{}, resource, prog, params, limit, 5000)
					if err != nil {
						t.Fatal(err)
					}
					cases++
					if el := time.Since(t0); el > 200*time.Millisecond && os.Getenv("QEDGE_SLOW") != "" {
						t.Logf("slow %v: doc %d %s %s %s limit %d pages %d", el, d, en.name, resource, prog, limit, len(plans))
					}
					for _, p := range plans {
						if p.Split != "" {
							splits++
						}
						reused += p.Reused
					}
					if err := edgeCompare(ref, got, errText); err != nil {
						fails++
						t.Errorf("seed %d doc %d rev %d engine %s resource %s program %s params %v limit %d plans %+v:\n%v", seed, d, rev, en.name, resource, prog, params, limit, plans[:min(len(plans), 1)], err)
					}
				}
			}
			for _, p := range edgeArrayPrograms {
				run("arr", p)
			}
			for _, p := range edgeDocPrograms {
				run("doc", p)
			}
		}
	}
	t.Logf("%d cases, %d split pages, %d chunks reused, %v", cases, splits, reused, time.Since(start))
}

// TestEdgeLongKeys: objects that are trees of many members with keys over 1 KiB sharing long prefixes,
// read by member through every optimised path.
func TestEdgeLongKeys(t *testing.T) {
	seed := int64(1)
	if s := os.Getenv("QEDGE_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	r := rand.New(rand.NewSource(seed))
	engines := []edgeEngine{{"default", newEngine(t, Options{WorkerMemory: edgeWorkerMemory})}, {"isolate-all", newEngine(t, Options{Isolate: IsolateAll, WorkerMemory: edgeWorkerMemory})}}
	ctx := ctxT(t)
	fails := 0
	docs := 1
	if s := os.Getenv("QEDGE_DOCS"); s != "" {
		docs, _ = strconv.Atoi(s)
	}
	for d := 0; d < docs && fails < 20; d++ {
		var keys []string
		prefix := strings.Repeat("L", 1000+r.Intn(300))
		for i := range 300 + r.Intn(300) {
			switch r.Intn(4) {
			case 0:
				keys = append(keys, prefix+strconv.Itoa(i))
			case 1:
				keys = append(keys, prefix+edgeKeys[r.Intn(len(edgeKeys))]+strconv.Itoa(i))
			case 2:
				keys = append(keys, edgeString(r, 1025+r.Intn(100)))
			default:
				keys = append(keys, fmt.Sprintf("m%04d", i))
			}
		}
		keys = append(keys, "x", "k", prefix, prefix+"~1", prefix+"/")
		obj := func() map[string]any {
			m := map[string]any{}
			for _, k := range keys {
				if r.Intn(3) > 0 {
					m[k] = edgeScalar(r)
				}
			}
			return m
		}
		arr := make([]any, 4+r.Intn(8))
		for i := range arr {
			arr[i] = obj()
		}
		doc := map[string]any{"arr": arr, "o": obj()}
		db := newDB(t)
		put(t, db, "arr", edgeText(t, arr))
		put(t, db, "doc", edgeText(t, doc))
		inputs := map[string]any{}
		for name, v := range map[string]any{"arr": arr, "doc": doc} {
			x, err := jqdiff.Decode(edgeText(t, v))
			if err != nil {
				t.Fatal(err)
			}
			inputs[name] = x
		}
		var progs []struct{ res, prog string }
		for range 12 {
			k := keys[r.Intn(len(keys))]
			q := string(appendString(nil, k))
			for _, p := range []string{`.[] | .[%s]`, `map(.[%s])`, `.[] | select(.[%s] != null)`, `[.[] | select(.[%s] > 1)] | length`,
				`map(has(%s))`, `.[] | {(%s): .[%s]}`, `map(.[%s]?) | add`} {
				progs = append(progs, struct{ res, prog string }{"arr", strings.ReplaceAll(p, "%s", q)})
			}
			for _, p := range []string{`.o[%s]`, `.arr[0][%s]`, `.arr[-1][%s] | tojson`, `.arr | map(.[%s])`, `.o | has(%s)`} {
				progs = append(progs, struct{ res, prog string }{"doc", strings.ReplaceAll(p, "%s", q)})
			}
		}
		progs = append(progs, struct{ res, prog string }{"doc", `.o | keys`}, struct{ res, prog string }{"doc", `.o`},
			struct{ res, prog string }{"arr", `map(keys | length)`}, struct{ res, prog string }{"doc", `.o | to_entries | map(.key | length)`})
		for _, c := range progs {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			ref := jqdiff.Run(rctx, inputs[c.res], c.prog, nil, 5000)
			cancel()
			if ref.Timeout || len(ref.Results) >= 5000 {
				continue
			}
			for _, en := range engines {
				got, errText, plans, err := edgeRun(ctx, en.e, db, snapshots.Ref{}, c.res, c.prog, nil, 1000, 5000)
				if err != nil {
					t.Fatal(err)
				}
				if err := edgeCompare(ref, got, errText); err != nil {
					fails++
					t.Errorf("seed %d doc %d engine %s resource %s program %s plans %+v:\n%v", seed, d, en.name, c.res, clipUTF8(c.prog, 200), plans, err)
				}
			}
		}
	}
}

// TestEdgeCursorAcrossCommit: the first page on a revision, a single-field commit, then the rest of the pages
// with the cursor: they continue the first revision's answer (no result skipped or repeated), and the cursor is
// refused with another program or resource.
func TestEdgeCursorAcrossCommit(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	engines := []edgeEngine{{"default", newEngine(t, Options{WorkerMemory: edgeWorkerMemory})}, {"isolate-all", newEngine(t, Options{Isolate: IsolateAll, WorkerMemory: edgeWorkerMemory})}}
	ctx := ctxT(t)
	progs := []string{`.[]`, `.[] | .x?`, `.[] | select(.x? > 1)`, `.[] | select(.x? != null) | .k?`, `.[] | tojson`,
		`.[] | length`, `limit(50; .[])`, `.[] | .[]?`, `paths | select(length < 3)`, `to_entries[] | .key`}
	fails := 0
	docs := 1
	if s := os.Getenv("QEDGE_DOCS"); s != "" {
		docs, _ = strconv.Atoi(s)
	}
	for d := 0; d < docs && fails < 10; d++ {
		doc := edgeDoc(r)
		arr := doc["arr"].([]any)
		for _, en := range engines {
			for _, prog := range progs {
				db := newDB(t)
				put(t, db, "arr", edgeText(t, arr))
				put(t, db, "other", edgeText(t, arr))
				input, _ := jqdiff.Decode(edgeText(t, arr))
				ref := jqdiff.Run(ctx, input, prog, nil, 5000)
				if len(ref.Results) >= 5000 {
					continue
				}
				res, err := en.e.Query(ctx, db, snapshots.Ref{}, Request{Resource: "arr", Program: prog, Limit: 3, Caller: "tester"})
				if err != nil {
					if ref.Err == nil {
						t.Errorf("%s %s: %v", en.name, prog, err)
						fails++
					}
					continue
				}
				got := append([][]byte(nil), toBytes(res.Results)...)
				if res.More {
					for _, other := range []Request{{Resource: "arr", Program: prog + " | .", Cursor: res.NextCursor, Caller: "tester"},
						{Resource: "other", Program: prog, Cursor: res.NextCursor, Caller: "tester"}} {
						if _, err := en.e.Query(ctx, db, snapshots.Ref{}, other); !errors.Is(err, ErrBadCursor) {
							t.Errorf("%s %s: the cursor was taken with program %q resource %q: %v", en.name, prog, other.Program, other.Resource, err)
							fails++
						}
					}
				}
				// A single-field commit between pages.
				i := r.Intn(len(arr))
				path, op := "/"+strconv.Itoa(i), "replace"
				if _, ok := arr[i].(map[string]any); ok {
					path, op = path+"/x", "add"
				}
				if _, err := db.Patch(ctx, "arr", []revision.Operation{{Op: op, Path: path, Value: json.RawMessage(`7`), HasValue: true}}, snapshots.WriteOptions{Author: "tester"}); err != nil {
					t.Fatal(err)
				}
				errText := ""
				for cursor := res.NextCursor; res.More && len(got) < 5000; cursor = res.NextCursor {
					res, err = en.e.Query(ctx, db, snapshots.Ref{}, Request{Resource: "arr", Program: prog, Limit: max(len(ref.Results)/4, 3), Cursor: cursor, Caller: "tester"})
					if err != nil {
						errText = err.Error()
						break
					}
					got = append(got, toBytes(res.Results)...)
				}
				if err := edgeCompare(ref, got, errText); err != nil {
					fails++
					t.Errorf("doc %d %s %s:\n%v", d, en.name, prog, err)
				}
			}
		}
	}
}

func toBytes(rs []json.RawMessage) [][]byte {
	out := make([][]byte, len(rs))
	for i, r := range rs {
		out[i] = r
	}
	return out
}

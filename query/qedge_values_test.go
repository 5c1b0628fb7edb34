package query

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/strata-db/strata/internal/jqdiff"
	"github.com/strata-db/strata/snapshots"
)

func TestEdgeSpecialValues(t *testing.T) {
	docs := []string{`["\ud800", "\udc00x", "\ud83d\ude00", "a\u0000b", "\u2028", "\u007f"]`,
		`{"\ud800":1, "a":{"\udfff":2}}`, `[-0, 0, 0.0, -0.0, 1.0, 1E400, 1e-400, 0.5]`, `[1e999999999999]`, `[-0e0, 0e0, 0E-0]`, `["a\u0000b", "\u2028", "\u007f", {"\u0000strata: a projected element": 1, "x": 2}]`,
		`[{"x":` + strings.Repeat("7", 10050) + `,"y":2},{"x":1,"y":3},{"y":0,"x":[` + strings.Repeat("1", 10001) + `]}]`,
		`[` + strings.Repeat("9", 10001) + `,1,2]`,
	}
	progs := []string{`.`, `.[0]`, `.[]`, `.[] | length`, `.[] | tojson`, `map(.)`, `keys`, `.a`, `add`, `map(-(.))`, `.[] | -(.)`, `[.[] | select(. == 0)] | length`, `tostream`, `.[] | .x`, `map(.x)`, `.[] | select(.y > 1)`, `[.[] | select(.y > 1)] | length`, `.[] | select(.x > 1)`, `map(.y) | add`, `.[] | select(.y > 2) | .y`, `.[] | .["\u0000strata: a projected element"]`}
	for _, en := range []edgeEngine{{"default", newEngine(t, Options{WorkerMemory: edgeWorkerMemory})}, {"all", newEngine(t, Options{Isolate: IsolateAll, WorkerMemory: edgeWorkerMemory})}} {
		for _, doc := range docs {
			db := newDB(t)
			if _, err := db.Put(context.Background(), "d", []byte(doc), snapshots.WriteOptions{Author: "t"}); err != nil {
				t.Logf("put %s: %v", doc, err)
				continue
			}
			in, err := jqdiff.Decode(doc)
			if err != nil {
				t.Logf("decode %s: %v", doc, err)
				continue
			}
			for _, p := range progs {
				ref := jqdiff.Run(context.Background(), in, p, nil, 1000)
				got, errText, plans, _ := edgeRun(context.Background(), en.e, db, snapshots.Ref{}, "d", p, nil, 100, 1000)
				if err := edgeCompare(ref, got, errText); err != nil {
					t.Errorf("%s %s %s %+v: %v", en.name, doc, p, plans, err)
				}
			}
		}
	}
}

func TestEdgeParamSteps(t *testing.T) {
	doc := `{"arr":[10,20,30],"o":{"1":"one","a/b":2,"~0":3,"":4},"n":null,"s":"str"}`
	in, _ := jqdiff.Decode(doc)
	vals := []any{json.Number("1"), json.Number("-1"), json.Number("1.0"), json.Number("-0"), json.Number("1.5"), json.Number("-1.5"), json.Number("1e400"), json.Number("-1e400"),
		json.Number("3"), json.Number("-4"), json.Number("1099511627776"), json.Number("-1099511627777"), "1", "a/b", "~0", "", nil, true, []any{json.Number("1")}, map[string]any{}, json.Number("9223372036854775807"), json.Number("100000000000000000000")}
	progs := []string{`.arr[$p]`, `.o[$p]`, `.n[$p]`, `.s[$p]`, `.arr[$p] | .`, `.[$p]`, `.arr | .[$p]`, `.o[$p] | tojson`}
	for _, en := range []edgeEngine{{"default", newEngine(t, Options{WorkerMemory: edgeWorkerMemory})}, {"all", newEngine(t, Options{Isolate: IsolateAll, WorkerMemory: edgeWorkerMemory})}} {
		db := newDB(t)
		put(t, db, "d", doc)
		for _, v := range vals {
			for _, p := range progs {
				params := map[string]any{"p": v}
				ref := jqdiff.Run(context.Background(), in, p, params, 100)
				got, errText, plans, _ := edgeRun(context.Background(), en.e, db, snapshots.Ref{}, "d", p, params, 100, 100)
				if err := edgeCompare(ref, got, errText); err != nil {
					t.Errorf("%s %s p=%v %+v: %v", en.name, p, v, plans, err)
				}
			}
		}
	}
}

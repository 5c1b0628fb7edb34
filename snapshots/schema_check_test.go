package snapshots

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// The differential test of the incremental checker: on random documents and random edits, checking an edit
// incrementally (from a valid document) and checking the edited document whole (the checker with nothing known,
// and the library on the materialised document, the reference) must give the same verdict, exactly.

// differentialSchemas exercise every keyword the checker splits, and the ones it hands to the library whole.
var differentialSchemas = map[string]string{
	"object": `{"type":"object","required":["id","items"],"minProperties":2,"maxProperties":6,
		"properties":{"id":{"type":"integer"},"name":{"type":"string","maxLength":6},"items":{"type":"array"}},
		"patternProperties":{"^x_":{"type":"number"}},"additionalProperties":{"type":["string","array","object","integer"]},
		"propertyNames":{"maxLength":8},"dependentRequired":{"name":["tags"]},
		"dependentSchemas":{"meta":{"required":["kind"]}}}`,
	"closed": `{"type":"object","properties":{"id":{},"items":{},"name":{},"tags":{},"price":{},"kind":{}},"additionalProperties":false,
		"required":["id"]}`,
	"items": `{"type":"object","properties":{"items":{"type":"array","maxItems":300,"minItems":1,
		"items":{"$ref":"#/$defs/item"}}},"$defs":{"item":{"type":"object","required":["id"],
		"properties":{"id":{"type":"integer","minimum":0},"price":{"type":"number","multipleOf":0.5},
		"kind":{"enum":["a","b","c"]},"tags":{"type":"array","items":{"type":"string"},"uniqueItems":true}}}}}`,
	"prefix": `{"properties":{"items":{"type":"array","prefixItems":[{"type":"object","required":["id"]},
		{"maxProperties":2},{"type":"object"}],"items":{"type":"object","minProperties":2}}}}`,
	"unique": `{"properties":{"items":{"type":"array","uniqueItems":true},"tags":{"uniqueItems":true}}}`,
	"contains": `{"properties":{"items":{"type":"array","contains":{"type":"object","required":["kind"]},
		"minContains":1,"maxContains":2},"tags":{"contains":{"const":"red"}}}}`,
	"combinators": `{"properties":{"items":{"type":"array","items":{"anyOf":[{"required":["price"]},{"required":["kind"]}],
		"not":{"required":["bad"]},"if":{"properties":{"kind":{"const":"a"}},"required":["kind"]},"then":{"required":["id"]}}},
		"meta":{"oneOf":[{"type":"object","required":["kind"]},{"type":"object","required":["name"]}]},
		"name":{"const":"ok"}}}`,
	"container-whole": `{"properties":{"items":{"type":"array","items":{"type":"object"},"unevaluatedItems":false},
		"meta":{"type":"object","properties":{"kind":{}},"unevaluatedProperties":false},
		"tags":{"enum":[["red"],["red","blue"],[]]}}}`,
	"tree": `{"$ref":"#/$defs/node","$defs":{"node":{"type":"object","required":["id"],
		"properties":{"id":{"type":"integer"},"children":{"type":"array","maxItems":5,"items":{"$ref":"#/$defs/node"}}},
		"allOf":[{"properties":{"name":{"type":"string"}}}]}}}`,
	"dynamic": `{"$dynamicAnchor":"n","type":"object","properties":{"children":{"type":"array","items":{"$dynamicRef":"#n"}},
		"id":{"type":"integer"}}}`,
	"false": `{"properties":{"meta":false,"items":{"items":{"properties":{"bad":false}}}}}`,
	"sizes": `{"minProperties":2,"maxProperties":4,"dependentSchemas":{"meta":{"properties":{"kind":{"type":"string"}}}},
		"properties":{"items":{"type":"array","minItems":2,"maxItems":4},"tags":{"maxItems":3}}}`,
	"contains-one": `{"properties":{"items":{"type":"array","contains":{"required":["kind"]},"minContains":1,"maxContains":1}}}`,
}

type docGen struct{ r *rand.Rand }

var genKeys = []string{"id", "name", "items", "tags", "price", "kind", "meta", "children", "x_1", "x_2", "bad", "a_much_longer_key"}

func (g docGen) scalar() any {
	switch g.r.Intn(8) {
	case 0:
		return nil
	case 1:
		return g.r.Intn(2) == 0
	case 2:
		return json.Number(strconv.Itoa(g.r.Intn(5) - 1))
	case 3:
		return json.Number([]string{"1.0", "0.5", "2.5", "1e0", "-0", "3.25"}[g.r.Intn(6)])
	default:
		return []string{"a", "b", "c", "ok", "red", "blue", "toolong-x"}[g.r.Intn(7)]
	}
}

// value generates a value for a member named key: mostly of the kind the schemas expect there, sometimes not.
func (g docGen) value(key string, depth int) any {
	if g.r.Intn(10) == 0 || depth > 4 {
		return g.scalar()
	}
	switch key {
	case "id":
		return json.Number(strconv.Itoa(g.r.Intn(6) - 1))
	case "name", "kind":
		return []string{"a", "b", "c", "ok", "toolong-x"}[g.r.Intn(5)]
	case "price", "x_1", "x_2":
		return json.Number([]string{"1", "1.0", "0.5", "2", "-1", "2.25"}[g.r.Intn(6)])
	case "tags":
		n := g.r.Intn(5)
		out := make([]any, n)
		for i := range out {
			out[i] = []any{"red", "blue", "green", json.Number("1"), json.Number("1.0")}[g.r.Intn(5)]
		}
		return out
	case "items", "children":
		n := g.r.Intn(6)
		if g.r.Intn(4) == 0 && depth < 2 {
			n = 30 + g.r.Intn(70) // big enough to be held in a tree of nodes
		}
		out := make([]any, n)
		for i := range out {
			out[i] = g.object(depth+1, 1+g.r.Intn(3))
		}
		return out
	default:
		return g.object(depth+1, g.r.Intn(3))
	}
}

func (g docGen) object(depth, n int) map[string]any {
	m := map[string]any{}
	if g.r.Intn(3) > 0 {
		m["id"] = g.value("id", depth)
	}
	if g.r.Intn(4) == 0 {
		m["kind"] = g.value("kind", depth)
	}
	for i := 0; i < n; i++ {
		k := genKeys[g.r.Intn(len(genKeys))]
		m[k] = g.value(k, depth)
	}
	return m
}

func (g docGen) doc() any {
	m := g.object(0, 1+g.r.Intn(4))
	if g.r.Intn(2) == 0 {
		m["items"] = g.value("items", 0)
	}
	return m
}

// edit changes one random place of v (a clone), returning the new value.
func (g docGen) edit(v any, depth int) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = e
		}
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		})
		switch op := g.r.Intn(10); {
		case op < 5 && len(keys) > 0:
			k := keys[g.r.Intn(len(keys))]
			if _, ok := m["items"]; ok && g.r.Intn(2) == 0 {
				k = "items" // where most of the schemas look
			}
			m[k] = g.edit(m[k], depth+1)
		case op < 7:
			k := genKeys[g.r.Intn(len(genKeys))]
			m[k] = g.value(k, depth)
		case len(keys) > 0:
			delete(m, keys[g.r.Intn(len(keys))])
		}
		return m
	case []any:
		a := slices.Clone(x)
		switch op := g.r.Intn(10); {
		case op < 5 && len(a) > 0:
			i := g.r.Intn(len(a))
			a[i] = g.edit(a[i], depth+1)
		case op < 7:
			i := g.r.Intn(len(a) + 1)
			var e any = g.object(depth+1, 1+g.r.Intn(2))
			if g.r.Intn(3) == 0 && len(a) > 0 {
				e = a[g.r.Intn(len(a))] // a duplicate
			}
			a = slices.Insert(a, i, e)
		case op < 9 && len(a) > 0:
			i := g.r.Intn(len(a))
			a = slices.Delete(a, i, i+1)
		default:
			if len(a) > 1 {
				i, j := g.r.Intn(len(a)), g.r.Intn(len(a))
				a[i], a[j] = a[j], a[i]
			}
		}
		return a
	}
	return g.scalar()
}

func schemaDocText(t testing.TB, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(buf.Bytes())
}

func TestSchemaCheckerDifferential(t *testing.T) {
	seed := int64(1)
	if s := os.Getenv("STRATA_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	wantValid := 25 // valid documents to edit, per schema (random ones are tried until there are this many)
	if os.Getenv("STRATA_LONG") != "" {
		wantValid = 500
	}
	f := revision.New(store.NewMem(), nil)
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range differentialSchemas {
			if !yield(k) {
				return
			}
		}
	}) {
		for _, split := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/split=%v", name, split), func(t *testing.T) {
				if split {
					// Split every check down to the scalars, so that the split keywords are tried on small values too.
					defer func(w uint64) { wholeBelow = w }(wholeBelow)
					wholeBelow = 0
				}
				differential(t, f, name, seed, wantValid)
			})
		}
	}
}

func differential(t *testing.T, f *revision.Forest, name string, seed int64, wantValid int) {
	ctx := context.Background()
	cs, err := compileSchema("r", []byte(differentialSchemas[name]))
	if err != nil {
		t.Fatal(err)
	}
	g := docGen{rand.New(rand.NewSource(seed))}
	verdict := func(a, b revision.Value) (bool, []Violation) {
		ch := newChecker(ctx, f)
		if err := ch.run(cs, a, b); err != nil {
			t.Fatal(err)
		}
		return ch.out.count == 0, ch.out.kept
	}
	importDoc := func(v any) (revision.Value, any) {
		text := schemaDocText(t, v)
		val, _, err := f.ImportBytes(ctx, text)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := f.Materialize(ctx, val)
		if err != nil {
			t.Fatal(err)
		}
		return val, doc
	}
	var valid, edits, editsValid, editsInvalid int
	for round := 0; round < 100*wantValid && valid < wantValid; round++ {
		docA := g.doc()
		va, ma := importDoc(docA)
		want := safeValidate(cs.root, ma) == nil
		if got, vs := verdict(revision.Value{}, va); got != want {
			t.Fatalf("round %d: whole check says valid=%v, the library %v (violations %+v) on\n%s", round, got, want, vs, schemaDocText(t, docA))
		}
		if !want {
			continue
		}
		valid++
		for e := 0; e < 6; e++ {
			docB := g.edit(docA, 0)
			vb, mb := importDoc(docB)
			want := safeValidate(cs.root, mb) == nil
			got, vs := verdict(va, vb)
			if got != want {
				t.Fatalf("round %d edit %d: incremental check says valid=%v, the library %v (violations %+v)\nfrom %s\n  to %s",
					round, e, got, want, vs, schemaDocText(t, docA), schemaDocText(t, docB))
			}
			if whole, _ := verdict(revision.Value{}, vb); whole != want {
				t.Fatalf("round %d edit %d: whole check says valid=%v, the library %v on %s", round, e, whole, want, schemaDocText(t, docB))
			}
			edits++
			if want {
				editsValid++
				docA, va = docB, vb // go on from the new valid document
			} else {
				editsInvalid++
			}
		}
	}
	t.Logf("%d valid documents, %d edits (%d valid, %d invalid)", valid, edits, editsValid, editsInvalid)
	if valid < wantValid || editsValid == 0 || editsInvalid == 0 {
		t.Fatalf("the generator covers this schema poorly: %d valid documents, %d valid and %d invalid edits", valid, editsValid, editsInvalid)
	}
}

// TestViolationOrder: violations are listed in path order (indexes as numbers), at most MaxViolations, with the
// count of all.
func TestViolationOrder(t *testing.T) {
	var c collector
	for i := 30; i >= 0; i-- {
		c.add(Violation{Path: fmt.Sprintf("/items/%d", i), Keyword: "type", Message: "m"})
	}
	if c.count != 31 || len(c.kept) != MaxViolations || c.kept[0].Path != "/items/0" || c.kept[2].Path != "/items/2" || c.kept[19].Path != "/items/19" {
		t.Fatalf("kept %d of %d: %v … %v", len(c.kept), c.count, c.kept[0], c.kept[len(c.kept)-1])
	}
}

// TestSchemaCheckerCases: edits chosen to reach each split rule where random edits rarely do, checked split down to
// the scalars, against the library's verdict.
func TestSchemaCheckerCases(t *testing.T) {
	defer func(w uint64) { wholeBelow = w }(wholeBelow)
	wholeBelow = 0
	ctx := context.Background()
	f := revision.New(store.NewMem(), nil)
	for _, c := range []struct{ name, schema, a, b string }{
		{"dependentSchemas newly applies", `{"dependentSchemas":{"meta":{"properties":{"kind":{"type":"string"}}}}}`,
			`{"kind":5,"x":1}`, `{"kind":5,"x":1,"meta":{}}`},
		{"dependentSchemas still applies", `{"dependentSchemas":{"meta":{"properties":{"kind":{"type":"string"}}}}}`,
			`{"kind":"a","meta":{}}`, `{"kind":6,"meta":{}}`},
		{"prefix shift into items", `{"prefixItems":[{"type":"integer"}],"items":{"type":"string"}}`, `[1,"a","b"]`, `["b"]`},
		{"prefix shift within prefix", `{"prefixItems":[{"type":"integer"},{"type":"string"}]}`, `[1,"a"]`, `[0,1,"a"]`},
		{"contains gained over max", `{"contains":{"type":"integer"},"maxContains":1}`, `[1,"a"]`, `[1,"a",2]`},
		{"contains lost", `{"contains":{"type":"integer"},"minContains":2}`, `[1,2,"a"]`, `[1,"a"]`},
		{"contains lost, none left", `{"contains":{"type":"integer"}}`, `[1,"x"]`, `["y","x"]`},
		{"uniqueItems by value", `{"uniqueItems":true}`, `[1,2]`, `[1,2,1.0]`},
		{"uniqueItems objects", `{"uniqueItems":true}`, `[{"a":[1]},{"a":[2]}]`, `[{"a":[1]},{"a":[2]},{"a":[1.0]}]`},
		{"propertyNames new key", `{"propertyNames":{"maxLength":2}}`, `{"ab":1}`, `{"ab":1,"abc":1}`},
		{"additionalProperties new key", `{"properties":{"a":{}},"additionalProperties":false}`, `{"a":1}`, `{"a":1,"b":2}`},
		{"additionalProperties schema", `{"patternProperties":{"^x":{"type":"integer"}},"additionalProperties":{"type":"string"}}`,
			`{"x1":1,"y":"s"}`, `{"x1":1,"y":"s","z":3}`},
		{"required after remove", `{"required":["a"]}`, `{"a":1,"b":2}`, `{"b":2}`},
		{"ref cycle", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"properties":{"p":{"$ref":"#/$defs/a"}}}`,
			`{}`, `{"p":{}}`},
		{"false schema on new member", `{"properties":{"p":false}}`, `{"q":1}`, `{"q":1,"p":1}`},
		{"type change of container", `{"properties":{"p":{"type":"object","required":["a"]}}}`, `{"p":{"a":1}}`, `{"p":[1]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs, err := compileSchema("r", []byte(c.schema))
			if err != nil {
				t.Fatal(err)
			}
			imp := func(doc string) (revision.Value, any) {
				v, _, err := f.ImportBytes(ctx, []byte(doc))
				if err != nil {
					t.Fatal(err)
				}
				m, err := f.Materialize(ctx, v)
				if err != nil {
					t.Fatal(err)
				}
				return v, m
			}
			va, ma := imp(c.a)
			vb, mb := imp(c.b)
			if err := safeValidate(cs.root, ma); err != nil {
				t.Fatalf("the case's starting document is invalid: %v", err)
			}
			want := safeValidate(cs.root, mb) == nil
			ch := newChecker(ctx, f)
			if err := ch.run(cs, va, vb); err != nil {
				t.Fatal(err)
			}
			if got := ch.out.count == 0; got != want {
				t.Fatalf("incremental check says valid=%v, the library %v (%+v)", got, want, ch.out.kept)
			}
			if want {
				t.Fatalf("the case's edit is valid; it should break the schema")
			}
		})
	}
}

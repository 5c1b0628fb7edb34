package snapshots

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/strata-db/strata/store"
)

// expSchema is about a kilobyte of schema whose check of any value costs 2^depth subschema evaluations.
func expSchema(depth int) string {
	var defs []string
	for i := 0; i < depth; i++ {
		defs = append(defs, fmt.Sprintf(`"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"d%d":{"type":"integer"}`, depth))
	return `{"$ref":"#/$defs/d0","$defs":{` + strings.Join(defs, ",") + `}}`
}

// TestCostlySchemaRefused: a schema whose check multiplies (found in review: a 1.4 KB schema stalled every write
// to its database for seconds, forty levels for months, on the one writer) is refused when it is set, with an
// error that says why; schemas whose cost stays bounded, recursive ones included, are set.
func TestCostlySchemaRefused(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t, store.NewMemBackend())
	costly := map[string]string{
		"allOf of $refs, 21 deep": expSchema(21),
		"allOf of $refs, 40 deep": expSchema(40),
		// Twice as many evaluations one level down, at every level of a nested array.
		"items that double": `{"$ref":"#/$defs/d","$defs":{"d":{"items":{"allOf":[{"$ref":"#/$defs/d"},{"$ref":"#/$defs/d"}]}}}}`,
		// Slower, through an object's member and an anyOf.
		"members that double": `{"$defs":{"n":{"properties":{"x":{"anyOf":[{"$ref":"#/$defs/n"},{"$ref":"#/$defs/n"},{"type":"null"}]}}}},"$ref":"#/$defs/n"}`,
	}
	for name, text := range costly {
		_, err := db.SetSchema(ctx, "r", []byte(text), "op")
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "subschema evaluations") {
			t.Errorf("%s: SetSchema = %v, want it refused for its cost", name, err)
		}
	}
	var variants []string
	for i := range 200 {
		variants = append(variants, fmt.Sprintf(`{"properties":{"kind":{"const":"k%d"},"v":{"$ref":"#/$defs/tree"}},"required":["kind"]}`, i))
	}
	bounded := map[string]string{
		"a binary tree":   `{"$ref":"#/$defs/tree","$defs":{"tree":{"type":"object","properties":{"left":{"$ref":"#/$defs/tree"},"right":{"$ref":"#/$defs/tree"},"v":{"type":"integer"}}}}}`,
		"200 variants":    `{"$defs":{"tree":{"type":["object","null"],"properties":{"l":{"$ref":"#/$defs/tree"},"r":{"$ref":"#/$defs/tree"}}}},"items":{"oneOf":[` + strings.Join(variants, ",") + `]}}`,
		"allOf 10 deep":   expSchema(10),
		"a loop in place": `{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"}]},"b":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"integer"}]}},"$ref":"#/$defs/a"}`,
		"dynamic refs":    `{"$dynamicAnchor":"node","type":"object","properties":{"kids":{"type":"array","items":{"$dynamicRef":"#node"}}}}`,
	}
	for name, text := range bounded {
		if _, err := db.SetSchema(ctx, "r", []byte(text), "op"); err != nil {
			t.Errorf("%s: SetSchema = %v, want it set", name, err)
		}
	}
	if _, err := db.Put(ctx, "other", []byte(`{"a":1}`), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestSchemaWorkCounts: schemaWork's figure on schemas whose cost can be counted by hand.
func TestSchemaWorkCounts(t *testing.T) {
	cases := []struct {
		schema string
		want   int
	}{
		{`true`, 1},
		{`{"type":"integer"}`, 1},
		{`{"allOf":[{"type":"integer"},{"minimum":1}]}`, 3},
		{expSchema(3), 30}, // the root, d0, and for each allOf member its $ref wrapper and d1 (13 = 1 + 2×(1 + 5))
		{`{"properties":{"a":{"type":"integer"},"b":{"allOf":[true,true]}}}`, 3},           // the costliest value: b's
		{`{"items":{"$ref":"#/$defs/d"},"$defs":{"d":{"items":{"$ref":"#/$defs/d"}}}}`, 2}, // d and its $ref, at any depth
	}
	for _, c := range cases {
		cs, err := compileSchema("r", []byte(c.schema))
		if err != nil {
			t.Fatal(err)
		}
		if got := schemaWork(cs.root, MaxSchemaWork); got != c.want {
			t.Errorf("schemaWork(%s) = %d, want %d", c.schema, got, c.want)
		}
	}
}

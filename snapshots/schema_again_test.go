package snapshots

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/strata-db/strata/store"
)

// TestSchemaFalseKeywordDefs: a false schema reached through $ref sits under $defs (or definitions), whose
// members are names the schema's author chose, not keywords. falseKeyword took the last token of the location for
// the keyword, so the violation named "nope" (or "forbidden") as its keyword: no such keyword exists.
func TestSchemaFalseKeywordDefs(t *testing.T) {
	ctx := context.Background()
	big := strings.Repeat(`"x",`, 2000)
	for _, c := range []struct{ schema, value, path string }{
		{`{"$defs":{"nope":false},"properties":{"a":{"$ref":"#/$defs/nope"}}}`, `{"a":1}`, "/a"},
		{`{"definitions":{"forbidden":false},"properties":{"a":{"$ref":"#/definitions/forbidden"}}}`, `{"a":1}`, "/a"},
		{`{"$defs":{"nope":false},"properties":{"a":{"$ref":"#/$defs/nope"}}}`, `{"big":[` + big + `0],"a":1}`, "/a"},
	} {
		db, _ := openTest(t, store.NewMemBackend())
		must(db.SetSchema(ctx, "r", []byte(c.schema), "op"))
		_, err := db.Put(ctx, "r", []byte(c.value), WriteOptions{})
		var se *SchemaError
		if !errors.As(err, &se) || len(se.Violations) != 1 {
			t.Errorf("%s: want one violation, got %v", c.schema, err)
			continue
		}
		v := se.Violations[0]
		if v.Path != c.path || v.Keyword == "nope" || v.Keyword == "forbidden" {
			t.Errorf("%.60s: violation %+v: its keyword is a name from $defs/definitions, not a keyword", c.schema, v)
		}
	}
}

package snapshots

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/strata-db/strata/store"
)

// TestSchemaNumberMessages: Strata stores numbers exactly and the validator compares them exactly, but the
// violation's message printed both numbers through float64 and an English number printer: a value one over a
// maximum of 2^53 read "got 9.007199254740992×10¹⁵, want 9.007199254740992×10¹⁵", one over 1e400 "got ∞, want ∞",
// 1e-401 under a minimum of 1e-400 "got 0, want 0", and even 1000001 over 1000000 "got 1.000001×10⁰⁶, want
// 1×10⁰⁶". The message must show the numbers compared, as written.
func TestSchemaNumberMessages(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ schema, value, want string }{
		{`{"maximum":9007199254740992}`, `9007199254740993`, "maximum: got 9007199254740993, want 9007199254740992"},
		{`{"maximum":1000000}`, `1000001`, "maximum: got 1000001, want 1000000"},
		{`{"exclusiveMaximum":1e400}`, `1e400`, "exclusiveMaximum: got 1e400, want 1e400"},
		{`{"maximum":1e400}`, `1.0000000000000000000001e400`, "maximum: got 1.0000000000000000000001e400, want 1e400"},
		{`{"minimum":1e-400}`, `1e-401`, "minimum: got 1e-401, want 1e-400"},
		{`{"exclusiveMinimum":0.1}`, `0.1`, "exclusiveMinimum: got 0.1, want 0.1"},
		{`{"maximum":0.3}`, `0.30000000000000001`, "maximum: got 0.30000000000000001, want 0.3"},
		{`{"minimum":-2.5}`, `-3`, "minimum: got -3, want -2.5"},
		{`{"multipleOf":0.01}`, `19.991`, "multipleOf: got 19.991, want 0.01"},
		// Through the split checker too: an element of a large array.
		{`{"items":{"maximum":9007199254740992}}`, `[` + strings.Repeat(`1,`, 3000) + `9007199254740993]`,
			"maximum: got 9007199254740993, want 9007199254740992"},
	} {
		db, _ := openTest(t, store.NewMemBackend())
		must(db.SetSchema(ctx, "r", []byte(c.schema), "op"))
		_, err := db.Put(ctx, "r", []byte(c.value), WriteOptions{})
		var se *SchemaError
		if !errors.As(err, &se) || len(se.Violations) != 1 {
			t.Errorf("%s / %.40s: want one violation, got %v", c.schema, c.value, err)
			continue
		}
		if got := se.Violations[0].Message; got != c.want {
			t.Errorf("%s / %.40s: message %q, want %q", c.schema, c.value, got, c.want)
		}
	}
}

// TestSchemaFalseKeyword: a value under a false subschema was reported with keyword "false" and the message
// "false schema", which names no keyword of the schema: for unevaluatedProperties: false the agent could not tell
// why /b was refused. The violation names the keyword whose subschema is false.
func TestSchemaFalseKeyword(t *testing.T) {
	ctx := context.Background()
	big := strings.Repeat(`"x",`, 2000)
	for _, c := range []struct{ schema, value, path, keyword string }{
		{`{"unevaluatedProperties":false,"properties":{"a":{}}}`, `{"a":1,"b":2}`, "/b", "unevaluatedProperties"},
		{`{"prefixItems":[{}],"items":false}`, `[1,2]`, "/1", "items"},
		{`{"unevaluatedItems":false,"prefixItems":[{}]}`, `[1,2]`, "/1", "unevaluatedItems"},
		{`{"properties":{"p":false}}`, `{"p":1}`, "/p", "properties"},
		// Through the split checker: a large object.
		{`{"properties":{"p":false}}`, `{"big":[` + big + `0],"p":1}`, "/p", "properties"},
	} {
		db, _ := openTest(t, store.NewMemBackend())
		must(db.SetSchema(ctx, "r", []byte(c.schema), "op"))
		_, err := db.Put(ctx, "r", []byte(c.value), WriteOptions{})
		var se *SchemaError
		if !errors.As(err, &se) || len(se.Violations) != 1 {
			t.Errorf("%s: want one violation, got %v", c.schema, err)
			continue
		}
		if v := se.Violations[0]; v.Path != c.path || v.Keyword != c.keyword || strings.Contains(v.Message, "false schema") {
			t.Errorf("%s: violation %+v, want %s (%s) with a message saying which keyword refuses it", c.schema, v, c.path, c.keyword)
		}
	}
}

// TestSchemaUncheckableNumberMessage: a number the validator cannot represent (an exponent past a million)
// was refused with the Go runtime's panic text as the message: "runtime error: invalid memory address or nil
// pointer dereference".
func TestSchemaUncheckableNumberMessage(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t, store.NewMemBackend())
	must(db.SetSchema(ctx, "r", []byte(`{"items":{"maximum":5}}`), "op"))
	_, err := db.Put(ctx, "r", []byte(`[1, 1e2000000]`), WriteOptions{})
	se := schemaErr(t, err, "/1", "type")
	if m := se.Violations[0].Message; strings.Contains(m, "runtime error") || strings.Contains(m, "nil pointer") || !strings.Contains(m, "exponent") {
		t.Fatalf("message %q: want one that says the number's exponent is out of range, not a Go panic", m)
	}
}

package snapshots

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

const catalogSchema = `{
	"type": "object",
	"required": ["items"],
	"properties": {
		"items": {"type": "array", "maxItems": 4, "items": {"$ref": "#/$defs/item"}},
		"owner": {"type": "string"}
	},
	"$defs": {"item": {"type": "object", "required": ["sku", "price"],
		"properties": {"sku": {"type": "string"}, "price": {"type": "number", "minimum": 0}}}}
}`

// schemaErr asserts that err refuses a write with violations, the first at path with keyword.
func schemaErr(t *testing.T, err error, path, keyword string) *SchemaError {
	t.Helper()
	var se *SchemaError
	if !errors.As(err, &se) || !errors.Is(err, ErrSchemaViolation) {
		t.Fatalf("want a schema violation at %s (%s), got %v", path, keyword, err)
	}
	if se.Count == 0 || len(se.Violations) == 0 || se.Violations[0].Path != path || se.Violations[0].Keyword != keyword {
		t.Fatalf("want the first violation at %s (%s), got %+v", path, keyword, se.Violations)
	}
	return se
}

func TestSchemaGuardsEveryWrite(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) { testSchemaGuardsEveryWrite(t, open(t)) })
	}
}

func testSchemaGuardsEveryWrite(t *testing.T, be store.Backend) {
	ctx := context.Background()
	db, _ := openTest(t, be)
	must(db.Put(ctx, "cat", []byte(`{"items":[{"sku":"a","price":1}]}`), WriteOptions{}))
	old := must(db.Resolve(ctx, Ref{})).Rev.Number
	must(db.Put(ctx, "cat", []byte(`{"items":[]}`), WriteOptions{})) // valid too, but see revert below
	must(db.Put(ctx, "cat", []byte(`{"items":[{"sku":"a","price":"free"}]}`), WriteOptions{}))
	bad := must(db.Resolve(ctx, Ref{})).Rev.Number

	// The head does not satisfy the schema: refused, naming the branch and the path.
	_, err := db.SetSchema(ctx, "cat", []byte(catalogSchema), "operator")
	se := schemaErr(t, err, "/items/0/price", "type")
	if len(se.Branches) != 1 || se.Branches[0] != "main" || se.Violations[0].Branch != "main" {
		t.Fatalf("refusal names %v / %+v, want main", se.Branches, se.Violations)
	}
	must(db.Put(ctx, "cat", []byte(`{"items":[{"sku":"a","price":1}]}`), WriteOptions{}))
	rec := must(db.SetSchema(ctx, "cat", []byte(catalogSchema), "operator"))
	if rec.SetBy != "operator" || !strings.HasPrefix(rec.Digest, "sha256:") {
		t.Fatalf("record %+v", rec)
	}

	head := func() uint64 { return must(db.Resolve(ctx, Ref{})).Rev.Number }
	refused := func(what string, err error, path, keyword string) {
		t.Helper()
		before := head()
		schemaErr(t, err, path, keyword)
		if head() != before {
			t.Fatalf("%s: refused, yet the head moved", what)
		}
	}
	h := head()
	_, err = db.Put(ctx, "cat", []byte(`{"items":[{"sku":1,"price":1}]}`), WriteOptions{})
	refused("put", err, "/items/0/sku", "type")
	_, err = db.Patch(ctx, "cat", ops(t, `[{"op":"remove","path":"/items/0/price"}]`), WriteOptions{})
	refused("patch remove", err, "/items/0", "required")
	_, err = db.Patch(ctx, "cat", ops(t, `[{"op":"remove","path":"/items"}]`), WriteOptions{})
	refused("patch remove member", err, "", "required")
	_, err = db.Patch(ctx, "cat", ops(t, `[{"op":"replace","path":"/items/0/price","value":-1}]`), WriteOptions{})
	refused("replace", err, "/items/0/price", "minimum")
	_, err = db.Restore(ctx, "cat", revision.MustPointer("/items/0"), Ref{Revision: bad}, WriteOptions{})
	refused("restore", err, "/items/0/price", "type")
	_, err = db.Revert(ctx, Ref{Revision: bad}, WriteOptions{})
	refused("revert", err, "/items/0/price", "type")
	_, err = db.Import(ctx, "cat", strings.NewReader(`{"items":[{"sku":"x"}]}`), ImportOptions{}, WriteOptions{})
	refused("import", err, "/items/0", "required")
	leases, lists := must2i(db.importsInProgress(ctx))
	if leases != 0 || lists != 0 {
		t.Fatalf("a refused import left %d leases, %d lists", leases, lists)
	}
	_, err = db.Commit(ctx, WriteOptions{}, func(ctx context.Context, f *revision.Forest, head State) (*revision.Change, error) {
		return f.Patch(ctx, head.Root, []revision.Operation{{Op: "add", Path: "/cat/extra", Value: []byte(`1`), HasValue: true},
			{Op: "add", Path: "/cat/owner", Value: []byte(`7`), HasValue: true}})
	})
	refused("commit (transform)", err, "/owner", "type")
	res, err := db.Put(ctx, "cat", []byte(`{"items":[{"sku":1,"price":1}]}`), WriteOptions{DryRun: true})
	if res != nil {
		t.Fatalf("a dry run of an invalid write previewed %+v", res)
	}
	refused("dry run", err, "/items/0/sku", "type")
	if head() != h {
		t.Fatal("refused writes moved the head")
	}

	// Valid writes of each kind are accepted.
	must(db.Patch(ctx, "cat", ops(t, `[{"op":"add","path":"/items/-","value":{"sku":"b","price":2}}]`), WriteOptions{}))
	must(db.Patch(ctx, "cat", ops(t, `[{"op":"replace","path":"/items/1/price","value":3}]`), WriteOptions{}))
	must(db.Restore(ctx, "cat", revision.MustPointer("/items"), Ref{Revision: old}, WriteOptions{}))
	must(db.Revert(ctx, Ref{Revision: old}, WriteOptions{}))
	must(db.Import(ctx, "cat", strings.NewReader(`{"items":[{"sku":"i","price":9}]}`), ImportOptions{}, WriteOptions{}))
	must(db.Put(ctx, "other", []byte(`"no schema here"`), WriteOptions{}))
	// Deleting the whole resource is allowed: a schema constrains a value, not its existence.
	must(db.DeleteResource(ctx, "cat", WriteOptions{}))
	_, err = db.Put(ctx, "cat", []byte(`[]`), WriteOptions{})
	refused("recreate", err, "", "type")
	must(db.Put(ctx, "cat", []byte(`{"items":[]}`), WriteOptions{}))

	// Reverting to a state from before the schema leaves the schema as it was.
	must(db.Revert(ctx, Ref{Revision: 1}, WriteOptions{}))
	if got, ok := must3(db.Schema(ctx, "cat")); !ok || got.Digest != rec.Digest {
		t.Fatalf("after a revert to revision 1 the schema is %+v (%v)", got, ok)
	}

	// Removing the schema lets anything through again; the log has both changes.
	must(db.RemoveSchema(ctx, "cat", "operator"))
	must(db.Put(ctx, "cat", []byte(`"anything"`), WriteOptions{}))
	evs := must(db.SchemaLog(ctx))
	if len(evs) != 2 || evs[0].Action != SchemaSet || evs[1].Action != SchemaRemove || evs[1].By != "operator" || evs[0].Seq != 1 {
		t.Fatalf("schema log %+v", evs)
	}
	if _, err := db.RemoveSchema(ctx, "cat", "operator"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("removing a missing schema: %v", err)
	}
}

func must2i(a, b int, err error) (int, int) {
	if err != nil {
		panic(err)
	}
	return a, b
}

func must3[T any](v T, ok bool, err error) (T, bool) {
	if err != nil {
		panic(err)
	}
	return v, ok
}

// TestSchemaPromoteMergeBreaksMaxItems: two branches, each valid, whose merge has too many items, cannot be
// promoted; either alone can.
func TestSchemaPromoteMergeBreaksMaxItems(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t, store.NewMemBackend())
	must(db.Put(ctx, "cat", []byte(`{"items":[{"sku":"a","price":1},{"sku":"b","price":1}],"owner":"x"}`), WriteOptions{}))
	must(db.SetSchema(ctx, "cat", []byte(catalogSchema), "operator"))
	must(db.CreateBranch(ctx, "left", Ref{}, "agent"))
	must(db.CreateBranch(ctx, "right", Ref{}, "agent"))
	must(db.Patch(ctx, "cat", ops(t, `[{"op":"add","path":"/items/-","value":{"sku":"l1","price":1}},{"op":"add","path":"/items/-","value":{"sku":"l2","price":1}}]`), WriteOptions{Branch: "left"}))
	must(db.Patch(ctx, "cat", ops(t, `[{"op":"add","path":"/items/0","value":{"sku":"r1","price":1}}]`), WriteOptions{Branch: "right"}))
	must(db.Promote(ctx, "left", "main", WriteOptions{}))
	head := must(db.Resolve(ctx, Ref{})).Rev.Number
	_, err := db.Promote(ctx, "right", "main", WriteOptions{})
	se := schemaErr(t, err, "/items", "maxItems")
	if head != must(db.Resolve(ctx, Ref{})).Rev.Number || se.Resource != "cat" {
		t.Fatalf("the refused promote moved main, or names %q", se.Resource)
	}
	// The dry run a plan is made from refuses it too.
	if _, err := db.Promote(ctx, "right", "main", WriteOptions{DryRun: true}); !errors.Is(err, ErrSchemaViolation) {
		t.Fatalf("dry run of the promote: %v", err)
	}
}

func TestSchemaRefusals(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t, store.NewMemBackend())
	for _, c := range []struct{ schema, want string }{
		{`{"$ref":"https://example.com/other.json"}`, "outside itself"},
		{`{"$ref":"file:///etc/passwd"}`, "outside itself"},
		{`{"$schema":"http://json-schema.org/draft-07/schema#"}`, "draft 2020-12 only"},
		{`{"type":"objekt"}`, "not a valid JSON Schema"},
		{`[1]`, "not an array"},
		{`{"a":1,"a":2}`, "not valid JSON"},
	} {
		_, err := db.SetSchema(ctx, "r", []byte(c.schema), "op")
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("schema %s: %v, want invalid argument saying %q", c.schema, err, c.want)
		}
	}
	must(db.SetSchema(ctx, "r", []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{"n":{"type":"number","minimum":0}},"items":{"$ref":"#/$defs/n"}}`), "op"))
	// A number the validator cannot represent is refused cleanly, not a crash of the writer.
	_, err := db.Put(ctx, "r", []byte(`[1, 1e99999999]`), WriteOptions{})
	schemaErr(t, err, "/1", "type")
	must(db.Put(ctx, "r", []byte(`[1, 2.5]`), WriteOptions{}))
}

// TestSchemaCheckIncrementalAcrossProcesses: the value a write replaces is known valid to a process that never
// checked it (another process's CLI, a restart), through the catalog's mark, so its first write is checked
// incrementally; a branch made from a state older than the schema is not, and its writes are checked whole, so an
// old fault anywhere in the resource still refuses them.
func TestSchemaCheckIncrementalAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/db" + Ext
	open := func() *DB {
		be, err := store.OpenBolt(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		db, err := Open(ctx, be, nil)
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	db := open()
	must(db.Put(ctx, "cat", []byte(`{"items":[{"sku":"a","price":"old"}]}`), WriteOptions{}))
	must(db.Put(ctx, "cat", []byte(`{"items":[{"sku":"a","price":1}]}`), WriteOptions{}))
	must(db.SetSchema(ctx, "cat", []byte(catalogSchema), "operator"))
	db.Close()

	db = open()
	defer db.Close()
	must(db.Patch(ctx, "cat", ops(t, `[{"op":"replace","path":"/items/0/price","value":2}]`), WriteOptions{}))
	must(db.Patch(ctx, "cat", ops(t, `[{"op":"replace","path":"/items/0/price","value":3}]`), WriteOptions{}))
	if n := db.wholeChecks.Load(); n != 0 {
		t.Fatalf("%d write(s) were checked whole after a reopen; the catalog's mark should have made them incremental", n)
	}
	must(db.CreateBranch(ctx, "old", Ref{Revision: 2}, "agent")) // the state before the fix: invalid
	_, err := db.Patch(ctx, "cat", ops(t, `[{"op":"add","path":"/owner","value":"me"}]`), WriteOptions{Branch: "old"})
	schemaErr(t, err, "/items/0/price", "type")
	if n := db.wholeChecks.Load(); n != 1 {
		t.Fatalf("the write on a branch from before the schema was checked whole %d times, want 1", n)
	}
}

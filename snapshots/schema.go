package snapshots

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// Schemas (docs/design.md §3.8): the operator may give a resource a JSON Schema (draft 2020-12). Every write that
// would leave the resource invalid against it is refused and writes nothing (ErrSchemaViolation), whatever the front
// end: the check runs where every revision is planned (the writer, and dry runs), so put, patch, transform,
// restore, revert, promote, a plan's replay and the streaming import all go through it.
//
// A schema is configuration of the database, not part of its versioned state: it lives in the catalog (bucket
// schemas), not in the revision tree, so reverting, restoring or promoting a state can never change or remove one.
// Each change of a schema is logged (bucket schema-log: who, when, which) and bumps a version that every group
// commit checks in its transaction, so that no revision is committed after a schema changed without being checked
// against the new one (another process may change it).
const (
	schemasBucket     = "schemas"      // resource → SchemaRecord (JSON)
	schemaLogBucket   = "schema-log"   // sequence (16 hex digits) → SchemaEvent (JSON)
	schemaStateBucket = "schema-state" // schemaVersionKey → the sequence of the last schema change
	schemaVersionKey  = "version"
	// schemaValidBucket remembers, per resource and branch, the last value found valid there (its schema's digest
	// and the value's hash), so that the next write there can be checked incrementally even by another process.
	schemaValidBucket = "schema-valid"
)

// SchemaDialect is the only JSON Schema dialect Strata accepts: a schema's "$schema", when given, must name it.
const SchemaDialect = "https://json-schema.org/draft/2020-12/schema"

// MaxSchemaBytes bounds a schema's JSON text.
const MaxSchemaBytes = 1 << 20

// validatorVersion is part of every schema digest: a validity remembered under one digest stays true only while
// the validator judges alike.
const validatorVersion = "strata-jsonschema-v6/1"

// MaxViolations is how many violations a SchemaError lists (its Count says how many there were).
const MaxViolations = 20

// ErrSchemaViolation: a write would leave a resource invalid against its schema, or a schema is not satisfied by a
// resource it would govern. Nothing was written.
var ErrSchemaViolation = errors.New("schema violation")

// Violation is one way a value fails its schema.
type Violation struct {
	// Branch names the branch whose head fails a schema being set (SetSchema); empty for a write.
	Branch  string `json:"branch,omitempty"`
	Path    string `json:"path"`    // a JSON Pointer inside the resource
	Keyword string `json:"keyword"` // the schema keyword that failed: required, type, maxItems, …
	Message string `json:"message"` // what failed; it may quote the value found
}

// SchemaError refuses a write that would leave a resource invalid against its schema, or a schema that a
// resource's value on some branch head does not satisfy. Violations holds the first MaxViolations (in path order),
// Count how many were found.
type SchemaError struct {
	Resource   string
	Violations []Violation
	Count      int
	// Branches, for a schema being set, are the branches whose heads do not satisfy it.
	Branches []string
	// Touched, for a write, are all the resources it changes (not only Resource): a front end that must not
	// show a hidden resource's name checks them all.
	Touched []string
}

func (e *SchemaError) Error() string {
	var b strings.Builder
	if len(e.Branches) > 0 {
		fmt.Fprintf(&b, "the schema is not satisfied by resource %s on branch %s (%d violation%s); it was not set",
			e.Resource, strings.Join(e.Branches, ", "), e.Count, pluralS(e.Count))
	} else {
		fmt.Fprintf(&b, "the write would leave resource %s invalid against its schema (%d violation%s); nothing was written",
			e.Resource, e.Count, pluralS(e.Count))
	}
	for _, v := range e.Violations {
		b.WriteString("\n  ")
		if v.Branch != "" {
			b.WriteString(v.Branch + ": ")
		}
		path := v.Path
		if path == "" {
			path = `""`
		}
		fmt.Fprintf(&b, "%s (%s): %s", path, v.Keyword, v.Message)
	}
	if n := e.Count - len(e.Violations); n > 0 {
		fmt.Fprintf(&b, "\n  … and %d more", n)
	}
	return b.String()
}

func (e *SchemaError) Unwrap() error { return ErrSchemaViolation }

func pluralS(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// SchemaRecord is a resource's schema as the operator set it.
type SchemaRecord struct {
	Resource string          `json:"resource"`
	Schema   json.RawMessage `json:"schema"` // the JSON text as given
	Digest   string          `json:"digest"` // "sha256:…" of the text (and of the validator's version)
	SetBy    string          `json:"set_by"`
	SetAt    time.Time       `json:"set_at"`
}

// Schema actions of a SchemaEvent.
const (
	SchemaSet    = "set"
	SchemaRemove = "remove"
)

// SchemaEvent is one change of a schema, as the schema log keeps it.
type SchemaEvent struct {
	Seq      uint64    `json:"seq"`
	Action   string    `json:"action"` // SchemaSet or SchemaRemove
	Resource string    `json:"resource"`
	Digest   string    `json:"digest,omitempty"` // the schema set (or removed)
	By       string    `json:"by"`
	Time     time.Time `json:"time"`
}

// compiledSchema is a schema ready to check values.
type compiledSchema struct {
	rec  SchemaRecord
	root *jsonschema.Schema
	// whole: the schema uses $dynamicRef, whose target depends on the path taken from the root: every check
	// validates the resource whole, with the library (incremental checks start from subschemas).
	whole bool
}

// schemaSet is every schema of a database at one version.
type schemaSet struct {
	version string
	byName  map[string]*compiledSchema
}

var noSchemas = &schemaSet{byName: map[string]*compiledSchema{}}

// ver is the set's version ("" for none: no schema was ever set).
func (s *schemaSet) ver() string {
	if s == nil {
		return ""
	}
	return s.version
}

// refusingLoader refuses every URL: a schema must be self-contained (the draft's meta-schemas are built in).
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("the schema refers to %s, outside itself: references to other documents are refused (no network, no files); put what it refers to under $defs", url)
}

// schemaDigest is the digest of a schema's text under this validator.
func schemaDigest(raw []byte) string {
	h := sha256.New()
	h.Write([]byte(validatorVersion + "\n"))
	h.Write(raw)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// compileSchema checks and compiles a schema's JSON text.
func compileSchema(resource string, raw []byte) (*compiledSchema, error) {
	if len(raw) > MaxSchemaBytes {
		return nil, invalid("the schema is %d bytes, over the limit of %d", len(raw), MaxSchemaBytes)
	}
	if err := revision.CheckJSON(raw); err != nil {
		return nil, invalid("the schema is not valid JSON: %v", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, invalid("the schema is not valid JSON: %v", err)
	}
	switch d := doc.(type) {
	case bool:
	case map[string]any:
		if s, ok := d["$schema"]; ok {
			if str, _ := s.(string); strings.TrimSuffix(str, "#") != SchemaDialect {
				return nil, invalid("the schema's $schema is %v: Strata validates JSON Schema draft 2020-12 only (%q, or leave $schema out)", s, SchemaDialect)
			}
		}
	default:
		return nil, invalid("a schema is a JSON object (or true or false), not %s", jsonKind(doc))
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refusingLoader{})
	url := "strata:///schemas/" + resource + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, invalid("the schema is not a valid JSON Schema (draft 2020-12): %v", err)
	}
	root, err := c.Compile(url)
	if err != nil {
		return nil, invalid("the schema is not a valid JSON Schema (draft 2020-12): %v", err)
	}
	cs := &compiledSchema{root: root, rec: SchemaRecord{Resource: resource, Schema: json.RawMessage(raw), Digest: schemaDigest(raw)}}
	cs.whole = usesDynamicRef(root)
	return cs, nil
}

// compileNewSchema is compileSchema for a schema being set: it also refuses one whose check could cost more than
// MaxSchemaWork evaluations on one value. (A stored schema is not refused when it is loaded: it was accepted
// when it was set, and the resource must stay writable after an upgrade.)
func compileNewSchema(resource string, raw []byte) (*compiledSchema, error) {
	cs, err := compileSchema(resource, raw)
	if err != nil {
		return nil, err
	}
	if w := schemaWork(cs.root, MaxSchemaWork); w > MaxSchemaWork {
		return nil, invalid("the schema could cost more than %d subschema evaluations on one value of the document: it applies subschemas to the same value in ways that multiply (such as an allOf of two $refs to a schema that does the same, or items whose schema does it again one level down); simplify it, for example by merging the subschemas it repeats", MaxSchemaWork)
	}
	return cs, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "a number"
}

// usesDynamicRef reports whether any subschema reachable from s has a $dynamicRef (or draft 2019's $recursiveRef).
func usesDynamicRef(s *jsonschema.Schema) bool {
	seen := map[*jsonschema.Schema]bool{}
	var found bool
	var visit func(*jsonschema.Schema)
	visit = func(s *jsonschema.Schema) {
		if s == nil || seen[s] || found {
			return
		}
		seen[s] = true
		if s.DynamicRef != nil || s.RecursiveRef != nil {
			found = true
			return
		}
		for _, x := range subschemas(s) {
			visit(x)
		}
	}
	visit(s)
	return found
}

// subschemas lists every schema a schema holds directly.
func subschemas(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else, s.PropertyNames, s.UnevaluatedProperties,
		s.Contains, s.Items2020, s.UnevaluatedItems, s.ContentSchema}
	if s.DynamicRef != nil {
		out = append(out, s.DynamicRef.Ref)
	}
	out = append(out, s.AllOf...)
	out = append(out, s.AnyOf...)
	out = append(out, s.OneOf...)
	out = append(out, s.PrefixItems...)
	for _, x := range s.Properties {
		out = append(out, x)
	}
	for _, x := range s.PatternProperties {
		out = append(out, x)
	}
	for _, x := range s.DependentSchemas {
		out = append(out, x)
	}
	for _, x := range s.Dependencies {
		if x, ok := x.(*jsonschema.Schema); ok {
			out = append(out, x)
		}
	}
	for _, x := range []any{s.AdditionalProperties, s.AdditionalItems, s.Items} {
		switch x := x.(type) {
		case *jsonschema.Schema:
			out = append(out, x)
		case []*jsonschema.Schema:
			out = append(out, x...)
		}
	}
	return out
}

// loadSchemas returns the schemas as the catalog holds them now, compiling only what changed since the last load.
func (db *DB) loadSchemas(c store.CatalogReader) (*schemaSet, error) {
	v, _, err := c.Get(schemaStateBucket, schemaVersionKey)
	if err != nil {
		return nil, err
	}
	db.schemaMu.Lock()
	cur := db.schemas
	db.schemaMu.Unlock()
	if cur != nil && cur.version == string(v) {
		return cur, nil
	}
	if len(v) == 0 {
		return noSchemas, nil
	}
	set := &schemaSet{version: string(v), byName: map[string]*compiledSchema{}}
	var bad error
	err = c.Scan(schemasBucket, func(k string, val []byte) bool {
		var rec SchemaRecord
		if err := json.Unmarshal(val, &rec); err != nil {
			bad = fmt.Errorf("schema of %s: %w", k, store.ErrCorruptNode)
			return false
		}
		if cur != nil {
			if old := cur.byName[k]; old != nil && old.rec.Digest == rec.Digest {
				cp := *old
				cp.rec = rec
				set.byName[k] = &cp
				return true
			}
		}
		cs, err := compileSchema(k, rec.Schema)
		if err != nil {
			bad = fmt.Errorf("the stored schema of %s no longer compiles: %w", k, err)
			return false
		}
		cs.rec = rec
		set.byName[k] = cs
		return true
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return nil, err
	}
	db.schemaMu.Lock()
	db.schemas = set
	db.schemaMu.Unlock()
	return set, nil
}

func (db *DB) currentSchemas(ctx context.Context) (*schemaSet, error) {
	var set *schemaSet
	err := db.be.View(ctx, func(c store.CatalogReader) error {
		var err error
		set, err = db.loadSchemas(c)
		return err
	})
	return set, err
}

// Schema returns a resource's schema; ok is false when it has none.
func (db *DB) Schema(ctx context.Context, resource string) (rec SchemaRecord, ok bool, err error) {
	if err := ValidResourceName(resource); err != nil {
		return rec, false, err
	}
	err = db.be.View(ctx, func(c store.CatalogReader) error {
		v, found, err := c.Get(schemasBucket, resource)
		if err != nil || !found {
			return err
		}
		ok = true
		return json.Unmarshal(v, &rec)
	})
	return rec, ok, err
}

// Schemas lists every schema, in resource order.
func (db *DB) Schemas(ctx context.Context) ([]SchemaRecord, error) {
	out := []SchemaRecord{}
	err := db.be.View(ctx, func(c store.CatalogReader) error {
		var bad error
		err := c.Scan(schemasBucket, func(_ string, v []byte) bool {
			var rec SchemaRecord
			if bad = json.Unmarshal(v, &rec); bad != nil {
				return false
			}
			out = append(out, rec)
			return true
		})
		if err == nil {
			err = bad
		}
		return err
	})
	return out, err
}

// SchemaLog lists the changes of schemas, oldest first.
func (db *DB) SchemaLog(ctx context.Context) ([]SchemaEvent, error) {
	out := []SchemaEvent{}
	err := db.be.View(ctx, func(c store.CatalogReader) error {
		var bad error
		err := c.Scan(schemaLogBucket, func(_ string, v []byte) bool {
			var ev SchemaEvent
			if bad = json.Unmarshal(v, &ev); bad != nil {
				return false
			}
			out = append(out, ev)
			return true
		})
		if err == nil {
			err = bad
		}
		return err
	})
	return out, err
}

// logSchemaChange appends an event to the schema log and bumps the schema version, inside tx.
func logSchemaChange(tx store.CatalogTx, ev SchemaEvent) (SchemaEvent, error) {
	v, _, err := tx.Get(schemaStateBucket, schemaVersionKey)
	if err != nil {
		return ev, err
	}
	var last uint64
	if len(v) > 0 {
		if last, err = strconv.ParseUint(string(v), 10, 64); err != nil {
			return ev, fmt.Errorf("schema version %q: %w", v, store.ErrCorruptNode)
		}
	}
	ev.Seq = last + 1
	b, err := json.Marshal(ev)
	if err != nil {
		return ev, err
	}
	if err := tx.Put(schemaLogBucket, fmt.Sprintf("%016x", ev.Seq), b); err != nil {
		return ev, err
	}
	return ev, tx.Put(schemaStateBucket, schemaVersionKey, []byte(strconv.FormatUint(ev.Seq, 10)))
}

// errHeadsMoved: a branch head changed while a schema was being checked against the heads; check again.
var errHeadsMoved = errors.New("branch heads moved while the schema was checked")

// SetSchema gives a resource a schema (replacing any it had), recorded as set by by. It is refused (a SchemaError)
// when the resource's value at the head of any branch does not satisfy it: every head is checked, and the schema
// is stored only if no head moved meanwhile (else they are checked again).
func (db *DB) SetSchema(ctx context.Context, resource string, raw []byte, by string) (SchemaRecord, error) {
	if err := ValidResourceName(resource); err != nil {
		return SchemaRecord{}, err
	}
	cs, err := compileNewSchema(resource, raw)
	if err != nil {
		return SchemaRecord{}, err
	}
	valid := map[store.Hash]bool{} // resource values checked and found valid
	for attempt := 0; attempt < 10; attempt++ {
		branches, err := db.Branches(ctx)
		if err != nil {
			return SchemaRecord{}, err
		}
		heads := map[string]uint64{}
		values := map[string]revision.Value{}
		var fails []Violation
		count := 0
		var bad []string
		for _, b := range branches {
			heads[b.Name] = b.Head
			st, err := db.Resolve(ctx, Ref{Revision: b.Head})
			if err != nil {
				return SchemaRecord{}, err
			}
			v, err := db.forest.Get(ctx, st.Root, revision.Pointer{resource})
			if errors.Is(err, revision.ErrNotFound) {
				continue
			}
			if err != nil {
				return SchemaRecord{}, err
			}
			values[b.Name] = v
			if valid[v.Hash()] {
				continue
			}
			ch := newChecker(ctx, db.forest)
			if err := ch.run(cs, revision.Value{}, v); err != nil {
				return SchemaRecord{}, err
			}
			if ch.out.count == 0 {
				valid[v.Hash()] = true
				continue
			}
			bad = append(bad, b.Name)
			count += ch.out.count
			for _, x := range ch.out.kept {
				x.Branch = b.Name
				fails = append(fails, x)
			}
		}
		if len(bad) > 0 {
			if len(fails) > MaxViolations {
				fails = fails[:MaxViolations]
			}
			return SchemaRecord{}, &SchemaError{Resource: resource, Violations: fails, Count: count, Branches: bad}
		}
		rec, err := db.catalogOp(ctx, func(tx store.CatalogTx, now time.Time) (any, error) {
			bs, err := tx.Branches()
			if err != nil {
				return nil, err
			}
			if len(bs) != len(heads) {
				return nil, errHeadsMoved
			}
			for _, b := range bs {
				if h, ok := heads[b.Name]; !ok || h != b.Head {
					return nil, errHeadsMoved
				}
			}
			rec := cs.rec
			rec.SetBy, rec.SetAt = by, now
			data, err := json.Marshal(rec)
			if err != nil {
				return nil, err
			}
			if err := tx.Put(schemasBucket, resource, data); err != nil {
				return nil, err
			}
			for name, v := range values {
				if err := tx.Put(schemaValidBucket, validKey(resource, name), validMark(rec.Digest, v)); err != nil {
					return nil, err
				}
			}
			_, err = logSchemaChange(tx, SchemaEvent{Action: SchemaSet, Resource: resource, Digest: rec.Digest, By: by, Time: now})
			return rec, err
		})
		if errors.Is(err, errHeadsMoved) {
			continue
		}
		if err != nil {
			return SchemaRecord{}, err
		}
		for _, v := range values {
			db.rememberValid(cs.rec.Digest, v)
		}
		return rec.(SchemaRecord), nil
	}
	return SchemaRecord{}, fmt.Errorf("%w: the branches kept moving while the schema was checked against their heads; try again", ErrConflict)
}

// RemoveSchema removes a resource's schema, recorded as removed by by. It is not found when the resource has none.
func (db *DB) RemoveSchema(ctx context.Context, resource, by string) (SchemaRecord, error) {
	if err := ValidResourceName(resource); err != nil {
		return SchemaRecord{}, err
	}
	v, err := db.catalogOp(ctx, func(tx store.CatalogTx, now time.Time) (any, error) {
		data, ok, err := tx.Get(schemasBucket, resource)
		if err != nil {
			return nil, err
		}
		if !ok {
			var names []string
			if err := tx.Scan(schemasBucket, func(k string, _ []byte) bool { names = append(names, k); return true }); err != nil {
				return nil, err
			}
			return nil, &NotFoundError{What: "schema of resource", Name: resource, DidYouMean: closest(resource, names),
				Hint: "it has no schema to remove"}
		}
		var rec SchemaRecord
		if err := json.Unmarshal(data, &rec); err != nil {
			return nil, fmt.Errorf("schema of %s: %w", resource, store.ErrCorruptNode)
		}
		if err := tx.Delete(schemasBucket, resource); err != nil {
			return nil, err
		}
		var marks []string
		if err := tx.Scan(schemaValidBucket, func(k string, _ []byte) bool {
			if strings.HasPrefix(k, resource+" ") {
				marks = append(marks, k)
			}
			return true
		}); err != nil {
			return nil, err
		}
		for _, k := range marks {
			if err := tx.Delete(schemaValidBucket, k); err != nil {
				return nil, err
			}
		}
		_, err = logSchemaChange(tx, SchemaEvent{Action: SchemaRemove, Resource: resource, Digest: rec.Digest, By: by, Time: now})
		return rec, err
	})
	if err != nil {
		return SchemaRecord{}, err
	}
	return v.(SchemaRecord), nil
}

// ---- what is known valid

// validKey is the schema-valid key of a resource on a branch (a space is in neither name).
func validKey(resource, branch string) string { return resource + " " + branch }

// validMark is what schema-valid remembers: the schema's digest and the hash of a value valid under it.
func validMark(digest string, v revision.Value) []byte {
	h := v.Hash()
	return []byte(digest + " " + hex.EncodeToString(h[:]))
}

// validCache remembers values found valid under a schema (by digest and value hash): a pure fact, whatever branch
// or revision holds the value, so it needs no invalidation. It is bounded; the oldest entries go first.
type validCache struct {
	mu    sync.Mutex
	seen  map[string]bool
	order []string
	next  int
}

const validCacheSize = 4096

func (c *validCache) key(digest string, v revision.Value) string {
	h := v.Hash()
	return digest + string(h[:])
}

func (c *validCache) has(digest string, v revision.Value) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[c.key(digest, v)]
}

func (c *validCache) add(digest string, v revision.Value) {
	k := c.key(digest, v)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	if c.seen[k] {
		return
	}
	if len(c.order) < validCacheSize {
		c.order = append(c.order, k)
	} else {
		delete(c.seen, c.order[c.next])
		c.order[c.next] = k
		c.next = (c.next + 1) % validCacheSize
	}
	c.seen[k] = true
}

func (db *DB) rememberValid(digest string, v revision.Value) {
	if !db.schemaNoMemory.Load() {
		db.valid.add(digest, v)
	}
}

// knownValid reports whether v is known to satisfy cs: found valid before in this process, or remembered in the
// catalog as the value last found valid for the resource on branch.
func (db *DB) knownValid(ctx context.Context, cs *compiledSchema, branch string, v revision.Value) (bool, error) {
	if db.schemaNoMemory.Load() {
		return false, nil
	}
	if db.valid.has(cs.rec.Digest, v) {
		return true, nil
	}
	want := validMark(cs.rec.Digest, v)
	var ok bool
	err := db.be.View(ctx, func(c store.CatalogReader) error {
		got, found, err := c.Get(schemaValidBucket, validKey(cs.rec.Resource, branch))
		ok = found && bytes.Equal(got, want)
		return err
	})
	if ok {
		db.valid.add(cs.rec.Digest, v)
	}
	return ok, err
}

// schemaMark is a validity to remember in the transaction of the revision that wrote the value.
type schemaMark struct{ key, val string }

// checkWrite checks the resources a change touched against their schemas: for each, the value it leaves (b) is
// checked incrementally against the one it replaces (a) when a is known to be valid, else whole. It returns the
// validities to record with the revision, or a SchemaError.
func (db *DB) checkWrite(ctx context.Context, f *revision.Forest, set *schemaSet, branch string, oldRoot, newRoot revision.Value, touched []string) ([]schemaMark, error) {
	if set == nil || len(set.byName) == 0 {
		return nil, nil
	}
	var marks []schemaMark
	for _, name := range touched {
		cs := set.byName[name]
		if cs == nil {
			continue
		}
		b, err := f.Get(ctx, newRoot, revision.Pointer{name})
		if errors.Is(err, revision.ErrNotFound) {
			continue // a schema constrains a resource's value, not its existence
		}
		if err != nil {
			return nil, err
		}
		if err := db.checkValue(ctx, f, cs, branch, oldRoot, b); err != nil {
			if se, ok := err.(*SchemaError); ok {
				se.Touched = slices.Clone(touched)
			}
			return nil, err
		}
		marks = append(marks, schemaMark{validKey(name, branch), string(validMark(cs.rec.Digest, b))})
	}
	return marks, nil
}

// checkValue checks one resource's new value b against its schema; the old value is read from oldRoot.
func (db *DB) checkValue(ctx context.Context, f *revision.Forest, cs *compiledSchema, branch string, oldRoot, b revision.Value) error {
	// (Only the cache can know b: the catalog's mark is of the value b replaces.)
	if !db.schemaNoMemory.Load() && db.valid.has(cs.rec.Digest, b) {
		return nil
	}
	a := revision.Value{}
	if oldRoot.IsValid() {
		old, err := f.Get(ctx, oldRoot, revision.Pointer{cs.rec.Resource})
		switch {
		case errors.Is(err, revision.ErrNotFound):
		case err != nil:
			return err
		default:
			if ok, err := db.knownValid(ctx, cs, branch, old); err != nil {
				return err
			} else if ok {
				a = old
			}
		}
	}
	if !a.IsValid() {
		db.wholeChecks.Add(1)
	}
	ch := newChecker(ctx, f)
	if err := ch.run(cs, a, b); err != nil {
		return err
	}
	if ch.out.count > 0 {
		return &SchemaError{Resource: cs.rec.Resource, Violations: slices.Clone(ch.out.kept), Count: ch.out.count}
	}
	db.rememberValid(cs.rec.Digest, b)
	return nil
}

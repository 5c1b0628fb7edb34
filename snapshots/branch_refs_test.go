package snapshots

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// TestDiffResourceAbsentOnOneSide: a diff of one resource (or a path in it) that exists on one side only
// must say what the whole-database diff says about it: an add (or a remove) of the value, not a "replace" of a
// null that was never there. The operations must apply to the from side (as the patch tool takes them: paths inside
// the resource) and give the to side.
func TestDiffResourceAbsentOnOneSide(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t, store.NewMemBackend())
	r1 := must(db.Put(ctx, "doc", []byte(`{"a":1}`), WriteOptions{}))
	r2 := must(db.Put(ctx, "doc", []byte(`{"a":1,"b":{"x":1}}`), WriteOptions{}))
	r3 := must(db.Put(ctx, "other", []byte(`{"q":1}`), WriteOptions{}))
	r4 := must(db.DeleteResource(ctx, "other", WriteOptions{}))
	r5 := must(db.Put(ctx, "doc", []byte(`{"a":1,"b":null}`), WriteOptions{}))

	type tc struct {
		name     string
		from, to uint64
		resource string
		path     string
		want     revision.Counts
		op       string
	}
	for _, c := range []tc{
		{"member added", r1.Revision, r2.Revision, "doc", "/b", revision.Counts{Added: 1}, "add"},
		{"member removed", r2.Revision, r1.Revision, "doc", "/b", revision.Counts{Removed: 1}, "remove"},
		{"resource created", r2.Revision, r3.Revision, "other", "", revision.Counts{Added: 1}, "add"},
		{"resource deleted", r3.Revision, r4.Revision, "other", "", revision.Counts{Removed: 1}, "remove"},
		// A real null is a value: replacing it is a replace.
		{"null replaced", r5.Revision, r2.Revision, "doc", "/b", revision.Counts{Replaced: 1}, "replace"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, _, _, err := db.Diff(ctx, Ref{Revision: c.from}, Ref{Revision: c.to}, c.resource, revision.MustPointer(c.path), nil)
			if err != nil {
				t.Fatal(err)
			}
			if d.Counts != c.want || len(d.Operations) != 1 || d.Operations[0].Op != c.op {
				t.Fatalf("diff of %s%s from %d to %d: counts %+v, operations %+v; want %+v and one %s",
					c.resource, c.path, c.from, c.to, d.Counts, d.Operations, c.want, c.op)
			}
			// The whole-database diff agrees on what happened there.
			whole, _, _, err := db.Diff(ctx, Ref{Revision: c.from}, Ref{Revision: c.to}, "", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			prefix := revision.Pointer{c.resource}.String() + c.path
			var got []string
			for _, o := range whole.Operations {
				if o.Path == prefix || strings.HasPrefix(o.Path, prefix+"/") {
					got = append(got, o.Op)
				}
			}
			if !reflect.DeepEqual(got, []string{c.op}) {
				t.Fatalf("whole-database diff has %v at %s, the resource's diff %s", got, prefix, d.Operations[0].Op)
			}
			// Applied (as a patch inside the resource) where the value is absent, the operation must hold.
			if c.path == "" && c.op == "remove" {
				return // a remove at "" is the delete tool's; nothing to apply through patch
			}
			from := must(db.Resolve(ctx, Ref{Revision: c.from}))
			to := must(db.Resolve(ctx, Ref{Revision: c.to}))
			var ops []revision.Operation
			for _, o := range d.Patch() {
				o.Path = prefix + o.Path // the operations' paths are inside the resource and path diffed
				ops = append(ops, o)
			}
			ch, err := db.Forest().Patch(ctx, from.Root, ops)
			if err != nil {
				t.Fatalf("the diff's operations do not apply to revision %d: %v", c.from, err)
			}
			if ch.Root != to.Root {
				a, _ := db.Forest().JSON(ctx, ch.Root)
				b, _ := db.Forest().JSON(ctx, to.Root)
				t.Fatalf("applying the diff gives %s, not %s", a, b)
			}
		})
	}
}

// TestRefNameRefusalSaysWhy: a branch or snapshot name refused only because it holds ".." must be told so;
// the message listed only rules the name keeps ("letters, digits, '.', …"), so "v1..2" looked valid by its own
// refusal. A non-ASCII letter is refused too, and the message must not call it a letter it accepts.
func TestRefNameRefusalSaysWhy(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t, store.NewMemBackend())
	_, err := db.CreateBranch(ctx, "v1..2", Ref{}, "")
	if err == nil || !strings.Contains(err.Error(), `".."`) {
		t.Errorf("branch v1..2: %v; want a refusal that names the \"..\" rule", err)
	}
	_, err = db.CreateSnapshot(ctx, "v1..2", Ref{}, "", "")
	if err == nil || !strings.Contains(err.Error(), `".."`) {
		t.Errorf("snapshot v1..2: %v; want a refusal that names the \"..\" rule", err)
	}
	_, err = db.CreateBranch(ctx, "café", Ref{}, "")
	if err == nil || !strings.Contains(err.Error(), "ASCII") {
		t.Errorf("branch café: %v; want a refusal that says only ASCII letters are taken", err)
	}
}

// TestSnapshotNamedAsBranch: a read that names a snapshot as a branch (from_branch, branch) or a branch as a
// snapshot (snapshot, from_snapshot) must say what the name is, as the BRANCH@TIME case already does; it answered
// only `branch "before-sale" not found`, while list_snapshots shows that very name, and suggested nothing.
func TestSnapshotNamedAsBranch(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t, store.NewMemBackend())
	must(db.Put(ctx, "doc", []byte(`{"a":1}`), WriteOptions{}))
	must(db.CreateSnapshot(ctx, "before-sale", Ref{}, "", ""))
	must(db.CreateBranch(ctx, "feature", Ref{}, ""))
	_, err := db.Resolve(ctx, Ref{Branch: "before-sale"})
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "is a snapshot") {
		t.Errorf("branch before-sale: %v; want not found, saying it is a snapshot", err)
	}
	_, err = db.CreateBranch(ctx, "x", Ref{Branch: "before-sale"}, "")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "is a snapshot") {
		t.Errorf("create_branch from_branch before-sale: %v; want not found, saying it is a snapshot", err)
	}
	_, err = db.Resolve(ctx, Ref{Snapshot: "feature"})
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "is a branch") {
		t.Errorf("snapshot feature: %v; want not found, saying it is a branch", err)
	}
}

package snapshots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/pgtest"
	"github.com/strata-db/strata/store"
)

// copyHistory makes a database with everything a copy must carry: revisions on two branches, snapshots, a deleted
// branch whose work garbage collection removed (gaps in the numbers), idempotency keys and a pending plan.
func copyHistory(t *testing.T, d *Dir) *DB {
	t.Helper()
	ctx := context.Background()
	clock := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	d.opts.DB.Now = func() time.Time { clock = clock.Add(time.Second); return clock }
	db := must(d.Create(ctx, "shop", "ada"))
	must(db.Put(ctx, "catalog", []byte(`{"items":[{"id":1,"price":10},{"id":2,"price":20}],"owner":"ops"}`), WriteOptions{Author: "ada", Message: "import"}))
	must(db.CreateSnapshot(ctx, "v1", Ref{}, "first prices", "ada"))
	must(db.CreateBranch(ctx, "scratch", Ref{}, "bob"))
	for i := range 3 {
		must(db.Patch(ctx, "catalog", ops(t, fmt.Sprintf(`[{"op":"add","path":"/items/-","value":{"id":%d}}]`, 100+i)), WriteOptions{Branch: "scratch"}))
	}
	must(db.DeleteBranch(ctx, "scratch"))
	must(db.CreateBranch(ctx, "try", Ref{}, "bob"))
	must(db.Patch(ctx, "catalog", ops(t, `[{"op":"replace","path":"/items/0/price","value":12}]`), WriteOptions{Branch: "try", IdempotencyKey: "reprice-1"}))
	must(db.Patch(ctx, "catalog", ops(t, `[{"op":"remove","path":"/owner"}]`), WriteOptions{IdempotencyKey: "drop-owner", Author: "carol"}))
	must(db.Put(ctx, "notes", []byte(`"a small value, inline in the root"`), WriteOptions{}))
	must(db.CreateSnapshot(ctx, "v2", Ref{}, "", "ada"))
	// The scratch branch's three revisions are garbage now (no branch or snapshot reaches them).
	clock = clock.Add(2 * time.Hour)
	if rep := must(db.GC(ctx, &GCOptions{Grace: time.Hour})); rep.RemovedRevisions != 3 {
		t.Fatalf("gc removed %d revisions, want the 3 of the deleted branch", rep.RemovedRevisions)
	}
	head := must(db.Resolve(ctx, Ref{})).Rev.Number
	if err := db.SavePlan(ctx, Plan{ID: "plan-copy", Principal: "agent", Op: "put", Branch: Main, Base: head, Summary: "a pending plan",
		Created: clock, Expires: clock.Add(24 * time.Hour), State: PlanPending}); err != nil {
		t.Fatal(err)
	}
	return db
}

// catalogOf is a database's whole catalog, as JSON, and the set of nodes it stores.
func catalogOf(t *testing.T, db *DB) (string, []string) {
	t.Helper()
	ctx := context.Background()
	var d *store.CatalogDump
	if err := db.be.View(ctx, func(c store.CatalogReader) error {
		var err error
		d, err = store.DumpCatalog(c)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var hashes []string
	var after *store.Hash
	for {
		hs, err := db.be.(store.NodeLister).NodeHashes(ctx, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(hs) == 0 {
			break
		}
		for _, h := range hs {
			hashes = append(hashes, h.String())
		}
		after = &hs[len(hs)-1]
	}
	sort.Strings(hashes)
	return string(b), hashes
}

// TestCopyRoundTrip copies a database from a directory to PostgreSQL and back to another directory: each copy has
// the original's catalog exactly (revision records and their numbers, gaps included, branches with their ids,
// snapshots, head logs, idempotency keys, the plan) and its nodes under the same hashes; it reads, travels in time
// and checks clean; a retried idempotency key replays the original's revision; and it goes on with the next number.
func TestCopyRoundTrip(t *testing.T) {
	ctx := context.Background()
	orig := must(OpenDir(t.TempDir(), nil))
	defer orig.Close()
	db := copyHistory(t, orig)
	wantCat, wantNodes := catalogOf(t, db)

	pg := pgDir(t, pgtest.URL(t))
	back := must(OpenDir(t.TempDir(), nil))
	defer back.Close()
	for _, hop := range []struct {
		name     string
		from, to *Dir
	}{{"dir to postgres", orig, pg}, {"postgres to dir", pg, back}} {
		rep, err := CopyDatabase(ctx, hop.from, hop.to, "shop", nil)
		if err != nil {
			t.Fatalf("%s: %v", hop.name, err)
		}
		if rep.Revisions != 5 || rep.Last != 8 || rep.Branches != 2 || rep.Snapshots != 2 || rep.Nodes != len(wantNodes) {
			t.Fatalf("%s: report %+v (the original stores %d nodes)", hop.name, rep, len(wantNodes))
		}
		cp := must(hop.to.Open(ctx, "shop"))
		gotCat, gotNodes := catalogOf(t, cp)
		if gotCat != wantCat {
			t.Fatalf("%s: the catalog differs\ngot  %s\nwant %s", hop.name, gotCat, wantCat)
		}
		if fmt.Sprint(gotNodes) != fmt.Sprint(wantNodes) {
			t.Fatalf("%s: %d nodes, the original has %d", hop.name, len(gotNodes), len(wantNodes))
		}
		if r := must(cp.Check(ctx, nil)); len(r.Problems) != 0 || r.Revisions != 8 {
			t.Fatalf("%s: check %+v", hop.name, r)
		}
		if get(t, cp, Ref{Snapshot: "v1"}, "catalog", "/owner") != `"ops"` || get(t, cp, Ref{Branch: "try"}, "catalog", "/items/0/price") != "12" {
			t.Fatalf("%s: reads differ", hop.name)
		}
		at := must(db.Resolve(ctx, Ref{Revision: 2})).Rev.Time // the import, before main's owner was dropped
		if get(t, cp, Ref{Branch: Main, At: &at}, "catalog", "/owner") != `"ops"` {
			t.Fatalf("%s: time travel differs", hop.name)
		}
		if names := must(hop.to.Names()); fmt.Sprint(names) != "[shop]" {
			t.Fatalf("%s: names %v after the copy", hop.name, names)
		}
	}
	// The last copy goes on as the original would: a retried key replays, the next revision is 9, the plan is there.
	cp := must(back.Open(ctx, "shop"))
	if r := must(cp.Patch(ctx, "catalog", ops(t, `[{"op":"remove","path":"/owner"}]`), WriteOptions{IdempotencyKey: "drop-owner"})); !r.Replayed || r.Revision != 7 {
		t.Fatalf("a retried key on the copy: %+v", r)
	}
	if r := must(cp.Put(ctx, "notes", []byte(`"new"`), WriteOptions{})); r.Revision != 9 {
		t.Fatalf("the next revision on the copy is %d, want 9", r.Revision)
	}
	if p, err := cp.GetPlan(ctx, "plan-copy"); err != nil || p.State != PlanPending {
		t.Fatalf("the pending plan on the copy: %+v %v", p, err)
	}
	if b := must(cp.CreateBranch(ctx, "after", Ref{}, "ada")); b.ID <= 3 {
		t.Fatalf("a branch made on the copy got id %d, which the original's branches used", b.ID)
	}

	// A name taken in the destination is refused, and nothing is left behind.
	if _, err := CopyDatabase(ctx, orig, pg, "shop", nil); !errors.Is(err, ErrConflict) {
		t.Fatalf("copying onto a taken name: %v", err)
	}
	if _, err := CopyDatabase(ctx, orig, pg, "nope", nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("copying a missing database: %v", err)
	}
	// A copy interrupted half-way (its nodes partly written under the temporary name) leaves nothing: no database,
	// no file.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	empty := t.TempDir()
	ed := must(OpenDir(empty, nil))
	defer ed.Close()
	progressed := 0
	_, err := CopyDatabase(cctx, orig, ed, "shop", func(done, total int) {
		if progressed = done; done == 1 {
			if ents, _ := os.ReadDir(empty); len(ents) == 0 {
				t.Error("the copy made no temporary file before it was interrupted: the test tests nothing")
			}
			cancel()
		}
	})
	if err == nil || progressed != 1 {
		t.Fatalf("a copy cancelled after revision 1: %v, having copied %d revisions", err, progressed)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Fatalf("a cancelled copy left %v in the directory", ents)
	}
	if _, err := os.Stat(filepath.Join(empty, "shop"+Ext)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a cancelled copy made the database: %v", err)
	}
}

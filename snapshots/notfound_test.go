package snapshots_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/store"
)

// TestOneNotFound: store, revision and snapshots share one not-found sentinel, so that whichever package's name a
// caller tests with, every kind of "not found" matches it: a missing database, resource, branch, snapshot or
// revision (snapshots), a missing path inside a resource (revision) and a missing catalog entry (store). Messages do
// not change: the errors still say what was not found.
func TestOneNotFound(t *testing.T) {
	ctx := context.Background()
	d, err := snapshots.OpenDir(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	db, err := d.Create(ctx, "shop", "ada")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Put(ctx, "config", []byte(`{"tax":0.2}`), snapshots.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, openErr := d.Open(ctx, "shpo")
	_, _, resourceErr := db.Get(ctx, snapshots.Ref{}, "confg", nil)
	_, _, branchErr := db.Get(ctx, snapshots.Ref{Branch: "nope"}, "config", nil)
	_, _, revisionErr := db.Get(ctx, snapshots.Ref{Revision: 99}, "config", nil)
	_, _, pathErr := db.Get(ctx, snapshots.Ref{}, "config", revision.MustPointer("/vat"))
	var catalogErr error
	_ = store.NewMemBackend().View(ctx, func(c store.CatalogReader) error {
		_, catalogErr = c.Branch("nope")
		return nil
	})
	for _, c := range []struct {
		name string
		err  error
		text string
	}{
		{"database", openErr, `database "shpo" not found (did you mean "shop"?); create it first`},
		{"resource", resourceErr, `resource "confg" not found (did you mean "config"?); not in revision 2`},
		{"branch", branchErr, `branch "nope" not found`},
		{"revision", revisionErr, `revision "99" not found; revisions run from 1 to 2`},
		{"path", pathErr, `get "/vat": no member "vat" in the object at "" (did you mean "tax"?)`},
		{"catalog entry", catalogErr, "not found"},
	} {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, s := range []struct {
			pkg string
			err error
		}{{"store", store.ErrNotFound}, {"revision", revision.ErrNotFound}, {"snapshots", snapshots.ErrNotFound}} {
			if !errors.Is(c.err, s.err) {
				t.Errorf("a missing %s (%v) does not match %s.ErrNotFound", c.name, c.err, s.pkg)
			}
		}
		if got := c.err.Error(); !strings.Contains(got, c.text) {
			t.Errorf("a missing %s says %q, want it to say %q", c.name, got, c.text)
		}
	}
	if store.ErrNotFound.Error() != "not found" {
		t.Errorf("the sentinel says %q", store.ErrNotFound)
	}
}

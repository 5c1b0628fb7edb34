package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/pgtest"
	"github.com/strata-db/strata/store"
)

// fillCatalog writes a catalog with everything a copy must carry: revisions with a gap (one collected), branches
// with ids above their count (one deleted), labels, a head log, idempotency keys and two buckets (one emptied).
func fillCatalog(t *testing.T, be store.Backend) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 3, 14, 9, 0, 0, 123456789, time.UTC)
	err := be.Update(ctx, func(tx store.CatalogTx) error {
		var ids []uint64
		for range 4 {
			id, err := tx.NextID()
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		for n := uint64(1); n <= 6; n++ {
			r := store.RevisionRecord{Number: n, Root: []byte(fmt.Sprintf("root-%d", n)), Branch: "main",
				Time: t0.Add(time.Duration(n) * time.Second), Author: "ada", Tool: "test", Message: fmt.Sprint("m", n),
				Resources: []string{"doc"}, NewNodes: int(n), NewBytes: int64(100 * n)}
			if n > 1 {
				r.Parents = []uint64{n - 1}
			}
			if err := tx.AddRevision(r); err != nil {
				return err
			}
			if err := tx.LogHead(ids[0], r.Time, n); err != nil {
				return err
			}
		}
		if err := tx.LogHead(ids[3], t0.Add(-time.Hour), 2); err != nil { // a branch made before 1970 would sort first; this one is just older
			return err
		}
		for _, b := range []store.BranchRecord{
			{Name: "main", ID: ids[0], Head: 6, Base: 1, Creator: "ada", Created: t0},
			{Name: "try", ID: ids[3], Head: 2, Base: 2, Creator: "bob", Created: t0.Add(time.Minute)},
			{Name: "gone", ID: ids[2], Head: 4, Base: 4, Created: t0},
		} {
			if err := tx.PutBranch(b); err != nil {
				return err
			}
		}
		if err := tx.DeleteBranch("gone"); err != nil {
			return err
		}
		if err := tx.PutLabel(store.LabelRecord{Name: "v1", Revision: 2, Note: "first", Creator: "ada", Created: t0}); err != nil {
			return err
		}
		for k, rev := range map[string]uint64{"key-a": 2, "key-b": 5, "\x00binary\xff": 6} {
			if err := tx.SetIdempotent(k, rev); err != nil {
				return err
			}
		}
		for _, kv := range [][3]string{{"plans", "plan-1", `{"x":1}`}, {"plans", "plan-2", "\x00\xff"}, {"gc", "epoch", "3"}, {"empty", "k", "v"}} {
			if err := tx.Put(kv[0], kv[1], []byte(kv[2])); err != nil {
				return err
			}
		}
		return tx.Delete("empty", "k")
	})
	if err != nil {
		t.Fatal(err)
	}
	// Garbage collection removes revision 3 (and 1 stays: only the newest is always kept, the rest by reachability).
	if err := be.Update(ctx, func(tx store.CatalogTx) error { return tx.DeleteRevision(3) }); err != nil {
		t.Fatal(err)
	}
}

func dump(t *testing.T, be store.Backend) *store.CatalogDump {
	t.Helper()
	var d *store.CatalogDump
	if err := be.View(context.Background(), func(c store.CatalogReader) error {
		var err error
		d, err = store.DumpCatalog(c)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestCopyCatalog: a catalog dumped from each backend and loaded into each other one is the same catalog, and the
// copy goes on as the original would: the next revision number and the next branch id follow the original's.
func TestCopyCatalog(t *testing.T) {
	ctx := context.Background()
	pg := openPG(t, pgtest.URL(t), nil)
	kinds := map[string]func(t *testing.T, name string) store.Backend{
		"mem": func(*testing.T, string) store.Backend { return store.NewMemBackend() },
		"bolt": func(t *testing.T, name string) store.Backend {
			return openBolt(t, filepath.Join(t.TempDir(), name+".strata"), nil)
		},
		"postgres": func(t *testing.T, name string) store.Backend {
			return createPG(t, pg, name)
		},
	}
	for _, from := range []string{"mem", "bolt", "postgres"} {
		for _, to := range []string{"mem", "bolt", "postgres"} {
			t.Run(from+"-to-"+to, func(t *testing.T) {
				src := kinds[from](t, "src-"+to)
				fillCatalog(t, src)
				want := dump(t, src)
				if len(want.Revisions) != 5 || want.Revisions[2].Number != 4 || len(want.Branches) != 2 || len(want.HeadLog) != 7 ||
					len(want.Idem) != 3 || len(want.Buckets) != 2 || want.LastID != 4 {
					t.Fatalf("the dump of the original is incomplete: %+v", want)
				}
				dst := kinds[to](t, "dst-"+from)
				if err := dst.Update(ctx, func(tx store.CatalogTx) error { return store.LoadCatalog(tx, want) }); err != nil {
					t.Fatal(err)
				}
				got := dump(t, dst)
				if a, b := jsonText(t, got), jsonText(t, want); a != b {
					t.Fatalf("the copy differs:\ngot  %s\nwant %s", a, b)
				}
				// Time travel and lookups answer as on the original.
				if err := dst.View(ctx, func(c store.CatalogReader) error {
					if rev, ok, err := c.HeadAt(1, time.Date(2026, 3, 14, 9, 0, 4, 500, time.UTC)); err != nil || !ok || rev != 3 {
						return fmt.Errorf("HeadAt main at 09:00:04: %d %v %v", rev, ok, err)
					}
					if rev, ok, err := c.Idempotent("\x00binary\xff"); err != nil || !ok || rev != 6 {
						return fmt.Errorf("idempotency key: %d %v %v", rev, ok, err)
					}
					if _, err := c.Revision(3); !errors.Is(err, store.ErrNotFound) {
						return fmt.Errorf("the collected revision 3: %v", err)
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				// The copy goes on: revision 7, and a branch id above every copied one.
				if err := dst.Update(ctx, func(tx store.CatalogTx) error {
					if last, err := tx.LastRevision(); err != nil || last != 6 {
						return fmt.Errorf("last revision %d %v", last, err)
					}
					if err := tx.AddRevision(store.RevisionRecord{Number: 7, Root: []byte("r7"), Branch: "main", Time: time.Now()}); err != nil {
						return err
					}
					if id, err := tx.NextID(); err != nil || id != 5 {
						return fmt.Errorf("next id %d %v, want 5", id, err)
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				// A catalog is loaded only into an empty one.
				if err := dst.Update(ctx, func(tx store.CatalogTx) error { return store.LoadCatalog(tx, want) }); err == nil {
					t.Fatal("loading a catalog over a full one succeeded")
				}
			})
		}
	}
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

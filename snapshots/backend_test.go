package snapshots

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/strata-db/strata/store"
)

// Every story test runs on every backend: the in-memory reference, bbolt (alone and shared) and PostgreSQL.
func backends(t *testing.T) map[string]func(t *testing.T) store.Backend {
	return map[string]func(t *testing.T) store.Backend{
		"postgres": func(t *testing.T) store.Backend { return postgresBackend(t) },
		"mem":      func(t *testing.T) store.Backend { return store.NewMemBackend() },
		"shared": func(t *testing.T) store.Backend {
			s, err := store.OpenShared(filepath.Join(t.TempDir(), "test.strata"), nil)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"bolt": func(t *testing.T) store.Backend {
			b, err := store.OpenBolt(filepath.Join(t.TempDir(), "test.strata"), nil)
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
	}
}

func TestBoltReopenKeepsHistory(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db.strata")
	b, err := store.OpenBolt(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	db, _ := openTest(t, b)
	must(db.Put(ctx, "doc", []byte(`{"v":1}`), WriteOptions{}))
	must(db.CreateSnapshot(ctx, "one", Ref{}, "", ""))
	must(db.Patch(ctx, "doc", ops(t, `[{"op":"replace","path":"/v","value":2}]`), WriteOptions{IdempotencyKey: "k"}))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = store.OpenBolt(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	db, _ = openTest(t, b)
	if get(t, db, Ref{}, "doc", "/v") != "2" || get(t, db, Ref{Snapshot: "one"}, "doc", "/v") != "1" {
		t.Fatal("history lost across reopen")
	}
	r := must(db.Patch(ctx, "doc", ops(t, `[{"op":"replace","path":"/v","value":3}]`), WriteOptions{IdempotencyKey: "k"}))
	if !r.Replayed || r.Revision != 3 {
		t.Fatalf("idempotency key lost across reopen: %+v", r)
	}
}

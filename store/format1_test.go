package store_test

import (
	"context"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
)

func formatOf(t *testing.T, path string) (format string, chunks bool) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_ = db.View(func(tx *bolt.Tx) error {
		format = string(tx.Bucket([]byte("meta")).Get([]byte("strata-format")))
		chunks = tx.Bucket([]byte("chunks")) != nil
		return nil
	})
	return format, chunks
}

// A database an earlier build made (format 1) opens in a data directory, takes new writes in format 1, and
// `strata db copy` (snapshots.CopyDatabase) makes a format-2 copy of it with the same revisions.
func TestFormat1DatabaseInADirectory(t *testing.T) {
	ctx := context.Background()
	from, to := t.TempDir(), t.TempDir()
	path := filepath.Join(from, "old"+snapshots.Ext)
	b := openBolt(t, path, format1())
	db, err := snapshots.Open(ctx, b, &snapshots.Options{Creator: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Put(ctx, "doc", []byte(`{"items":[1,2,3],"name":"old"}`), snapshots.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	b.Close()

	src, err := snapshots.OpenDir(from, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	old, err := src.Open(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	ops, err := revision.ParsePatch([]byte(`[{"op":"add","path":"/items/-","value":4}]`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Patch(ctx, "doc", ops, snapshots.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	dst, err := snapshots.OpenDir(to, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if _, err := snapshots.CopyDatabase(ctx, src, dst, "old", nil); err != nil {
		t.Fatal(err)
	}
	copied, err := dst.Open(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	for _, rev := range []uint64{2, 3} {
		want := map[uint64]string{2: `{"items":[1,2,3],"name":"old"}`, 3: `{"items":[1,2,3,4],"name":"old"}`}[rev]
		for _, d := range []*snapshots.DB{old, copied} {
			v, _, err := d.Get(ctx, snapshots.Ref{Revision: rev}, "doc", nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := d.Forest().JSON(ctx, v)
			if err != nil || string(got) != want {
				t.Fatalf("revision %d: %s, %v; want %s", rev, got, err, want)
			}
		}
	}
	src.Close()
	dst.Close()
	if f, chunks := formatOf(t, path); f != "1" || chunks {
		t.Errorf("the original is format %q (chunks bucket: %v) after a write; want 1, without", f, chunks)
	}
	if f, chunks := formatOf(t, filepath.Join(to, "old"+snapshots.Ext)); f != "2" || !chunks {
		t.Errorf("the copy is format %q (chunks bucket: %v); want 2", f, chunks)
	}
}

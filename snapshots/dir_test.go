package snapshots

import (
	"context"
	"errors"
	"testing"
)

func TestDir(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d, err := OpenDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	db := must(d.Create(ctx, "catalog", "op"))
	must(db.Put(ctx, "items", []byte(`[1,2,3]`), WriteOptions{}))
	if _, err := d.Create(ctx, "catalog", "op"); !errors.Is(err, ErrConflict) {
		t.Fatalf("second create: %v", err)
	}
	if _, err := d.Create(ctx, "Bad Name", "op"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("bad name: %v", err)
	}
	var nf *NotFoundError
	if _, err := d.Open(ctx, "catalogue"); !errors.As(err, &nf) || len(nf.DidYouMean) == 0 || nf.DidYouMean[0] != "catalog" {
		t.Fatalf("open missing: %v", err)
	}
	if names := must(d.Names()); len(names) != 1 || names[0] != "catalog" {
		t.Fatalf("names %v", names)
	}
	info := must(d.Info(ctx, "catalog"))
	if info.Revisions != 2 || info.Heads["main"] != 2 || info.FileBytes == 0 {
		t.Fatalf("info %+v", info)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopened from disk, the history is there.
	d2 := must(OpenDir(dir, nil))
	db2 := must(d2.Open(ctx, "catalog"))
	if get(t, db2, Ref{}, "items", "/2") != "3" {
		t.Fatal("data lost")
	}
	if err := d2.Drop(ctx, "catalog"); err != nil {
		t.Fatal(err)
	}
	if _, err := d2.Open(ctx, "catalog"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after drop: %v", err)
	}
	d2.Close()
}

//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package snapshots

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/strata-db/strata/store"
)

// TestSharedChild is the "other process" of the TestShared… tests: it runs the action named in
// STRATA_SHARED_ACTION on the data directory STRATA_SHARED_DIR, and fails if it cannot.
func TestSharedChild(t *testing.T) {
	dir, action := os.Getenv("STRATA_SHARED_DIR"), os.Getenv("STRATA_SHARED_ACTION")
	if dir == "" {
		t.Skip("child process of the TestShared… tests")
	}
	ctx := context.Background()
	d := must(OpenDir(dir, nil))
	defer d.Close()
	switch action {
	case "recreate-with-schema":
		// Drop x and make it again, with another schema for doc (the new database's first schema change).
		must(0, d.Drop(ctx, "x"))
		db := must(d.Create(ctx, "x", "child"))
		must(db.SetSchema(ctx, "doc", []byte(`{"type":"object","required":["b"]}`), "child"))
	case "recreate-same-numbers":
		// Drop x and make it again with as many revisions as the old one had: 1 (create) and 2 (a put).
		must(0, d.Drop(ctx, "x"))
		db := must(d.Create(ctx, "x", "child"))
		must(db.Put(ctx, "doc", []byte(`{"new":true}`), WriteOptions{}))
	case "drop":
		must(0, d.Drop(ctx, "x"))
	default:
		t.Fatalf("unknown action %q", action)
	}
}

// otherProcess runs action in a child process on dir, and waits for it.
func otherProcess(t *testing.T, dir, action string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSharedChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "STRATA_SHARED_DIR="+dir, "STRATA_SHARED_ACTION="+action)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("other process (%s): %v\n%s", action, err, out)
	}
}

// reopened is db, or, when a call says it was dropped (store.ErrDropped: "open it again if it was made
// again"), the database opened again under its name, as a server does.
func reopened(t *testing.T, d *Dir, db *DB, name string) *DB {
	t.Helper()
	if _, err := db.Resolve(context.Background(), Ref{}); errors.Is(err, store.ErrDropped) {
		return must(d.Open(context.Background(), name))
	} else if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestSharedSchemaAfterRecreate: another process drops a database this one has open and makes it again,
// setting a schema. This process's next write must be checked against the schema the database has now, not the one
// the dropped database had (both are the database's schema version 1).
func TestSharedSchemaAfterRecreate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := must(OpenDir(dir, nil))
	defer d.Close()
	db := must(d.Create(ctx, "x", "test"))
	must(db.SetSchema(ctx, "doc", []byte(`{"type":"object","required":["a"]}`), "test"))
	must(db.Put(ctx, "doc", []byte(`{"a":1}`), WriteOptions{}))

	otherProcess(t, dir, "recreate-with-schema")

	db = reopened(t, d, db, "x")
	if rec, ok, err := db.Schema(ctx, "doc"); err != nil || !ok || !strings.Contains(string(rec.Schema), `"b"`) {
		t.Fatalf("schema of doc: %s %v %v, want the new database's", rec.Schema, ok, err)
	}
	// Valid under the schema the database has: accepted.
	if _, err := db.Put(ctx, "doc", []byte(`{"b":1}`), WriteOptions{}); err != nil {
		t.Errorf("a value valid under the database's schema was refused: %v", err)
	}
	// Invalid under it (valid only under the dropped database's): refused.
	if _, err := db.Put(ctx, "doc", []byte(`{"a":1}`), WriteOptions{}); err == nil {
		t.Errorf(`{"a":1} was stored although the database's schema requires "b"`)
	}
}

// TestSharedSeedAfterRecreate: another process drops a database this one has open and makes it again, and
// its revisions happen to have the numbers the dropped one's had. This process's next write must apply to the
// database as it is now: not to the dropped database's document, and not onto nodes the new file does not hold.
func TestSharedSeedAfterRecreate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := must(OpenDir(dir, nil))
	defer d.Close()
	db := must(d.Create(ctx, "x", "test"))
	big := `{"old":true,"items":[` + strings.Repeat(`"an element of the dropped database's document",`, 2000) + `0]}`
	must(db.Put(ctx, "doc", []byte(big), WriteOptions{}))

	otherProcess(t, dir, "recreate-same-numbers")

	db = reopened(t, d, db, "x")
	r, err := db.Patch(ctx, "doc", patchOp("/n", 1), WriteOptions{})
	if err != nil {
		t.Fatalf("patch: %v", err)
	}
	got := get(t, db, Ref{Revision: r.Revision}, "doc", "")
	if !strings.Contains(got, `"new":true`) || strings.Contains(got, `"old"`) {
		if len(got) > 200 {
			got = got[:200] + "…"
		}
		t.Errorf("after the patch, doc is %s: want the new database's document with n added", got)
	}
	rep, err := db.Check(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) > 0 {
		t.Errorf("check after the patch: %v", rep.Problems)
	}
}

// TestSharedWriteAfterDropIsRefused: another process drops a database while this process keeps writing to it
// without pause (a busy server: it never lets the file go, as no one waits for it). Once the drop has returned, a
// write here must not be acknowledged: it would land in the deleted file, and be lost.
func TestSharedWriteAfterDropIsRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := must(OpenDir(dir, nil))
	defer d.Close()
	db := must(d.Create(ctx, "x", "test"))
	must(db.Put(ctx, "doc", []byte(`{"n":0}`), WriteOptions{}))
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { // keeps the file busy
		for i := 1; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if _, err := db.Patch(ctx, "doc", patchOp("/n", i), WriteOptions{}); err != nil {
				done <- err
				return
			}
		}
	}()
	otherProcess(t, dir, "drop")
	r, err := db.Patch(ctx, "doc", patchOp("/after", 1), WriteOptions{})
	close(stop)
	<-done
	if err == nil {
		t.Errorf("a write after another process dropped the database was acknowledged (revision %d): it went into the deleted file", r.Revision)
	}
	if _, err := os.Stat(dir + "/x.strata"); err == nil {
		t.Errorf("the database file is still there after the drop")
	}
}

//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package snapshots

import (
	"context"
	"os"
	"os/exec"
	"testing"
)

// TestSchemaChild is the other process of TestSchemaRemovedElsewhere: it removes the schema of doc in
// database x of the data directory STRATA_SCHEMA_CHILD_DIR.
func TestSchemaChild(t *testing.T) {
	dir := os.Getenv("STRATA_SCHEMA_CHILD_DIR")
	if dir == "" {
		t.Skip("child process of TestSchemaRemovedElsewhere")
	}
	ctx := context.Background()
	d := must(OpenDir(dir, nil))
	defer d.Close()
	db := must(d.Open(ctx, "x"))
	must(db.RemoveSchema(ctx, "doc", "child"))
}

// TestSchemaRemovedElsewhere: another process (strata schema rm while a server runs) removes a resource's
// schema. The server's writer plans its next group from the previous group's seed, schemas included; a write on a
// branch that group did not touch is read fresh, yet checked against the seed's schemas, and a refusal is answered
// at once: a write valid under the database's schemas (there are none now) is refused with SCHEMA_VIOLATION.
func TestSchemaRemovedElsewhere(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := must(OpenDir(dir, nil))
	defer d.Close()
	db := must(d.Create(ctx, "x", "test"))
	must(db.Put(ctx, "doc", []byte(`{"a":1}`), WriteOptions{}))
	must(db.SetSchema(ctx, "doc", []byte(`{"type":"object","required":["a"]}`), "test"))
	must(db.CreateBranch(ctx, "dev", Ref{}, "test"))
	// A committed group on main: the next group starts from its seed.
	must(db.Put(ctx, "other", []byte(`1`), WriteOptions{}))

	cmd := exec.Command(os.Args[0], "-test.run=^TestSchemaChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "STRATA_SCHEMA_CHILD_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("other process: %v\n%s", err, out)
	}
	if _, ok, err := db.Schema(ctx, "doc"); err != nil || ok {
		t.Fatalf("after the other process removed it, doc's schema is still there (%v, %v)", ok, err)
	}
	if _, err := db.Put(ctx, "doc", []byte(`{"b":1}`), WriteOptions{Branch: "dev"}); err != nil {
		t.Fatalf("a write on dev after doc's schema was removed (by another process) was refused: %v", err)
	}
}

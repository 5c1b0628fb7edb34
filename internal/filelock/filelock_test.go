package filelock

import (
	"os"
	"path/filepath"
	"testing"
)

// open opens the same file twice: locks belong to an open file, so two opens in one process contend as two
// processes would.
func open(t *testing.T) (a, b *os.File) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	var err error
	if a, err = os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err = os.OpenFile(p, os.O_RDWR, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func try(t *testing.T, f *os.File, exclusive bool) bool {
	t.Helper()
	ok, err := TryLock(f, exclusive)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestExclusiveKeepsOthersOut(t *testing.T) {
	if !Supported {
		t.Skip("no file locks on this system")
	}
	a, b := open(t)
	if err := Lock(a, true); err != nil {
		t.Fatal(err)
	}
	if try(t, b, true) || try(t, b, false) {
		t.Fatal("a second open file got a lock while the first held an exclusive one")
	}
	// The lock covers no data: the file is read and written while it is held, through either open file.
	if _, err := b.WriteAt([]byte("line\n"), 0); err != nil {
		t.Fatalf("writing while locked: %v", err)
	}
	buf := make([]byte, 5)
	if _, err := a.ReadAt(buf, 0); err != nil || string(buf) != "line\n" {
		t.Fatalf("reading while locked: %q, %v", buf, err)
	}
	if err := Unlock(a); err != nil {
		t.Fatal(err)
	}
	if !try(t, b, true) {
		t.Fatal("the lock was not free after Unlock")
	}
	if try(t, a, false) {
		t.Fatal("a shared lock was granted against an exclusive one")
	}
}

func TestSharedLocksCoexist(t *testing.T) {
	if !Supported {
		t.Skip("no file locks on this system")
	}
	a, b := open(t)
	if err := Lock(a, false); err != nil {
		t.Fatal(err)
	}
	if !try(t, b, false) {
		t.Fatal("a second shared lock was refused")
	}
	if err := Unlock(b); err != nil {
		t.Fatal(err)
	}
	if try(t, b, true) {
		t.Fatal("an exclusive lock was granted against a shared one")
	}
	// Unlocking what is not locked is fine.
	if err := Unlock(b); err != nil {
		t.Fatal(err)
	}
}

func TestCloseReleases(t *testing.T) {
	if !Supported {
		t.Skip("no file locks on this system")
	}
	a, b := open(t)
	if err := Lock(a, true); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if !try(t, b, true) {
		t.Fatal("closing the file did not release its lock")
	}
}

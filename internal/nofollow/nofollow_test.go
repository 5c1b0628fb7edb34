package nofollow

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestRefusesSymlinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(target, link); err != nil {
		if runtime.GOOS == "windows" {
			t.Skip("making a symbolic link needs a privilege here:", err)
		}
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "made-by-the-link"), dangling); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		flag int
	}{{link, os.O_RDONLY}, {link, os.O_RDWR | os.O_APPEND}, {dangling, os.O_RDWR | os.O_CREATE}} {
		f, err := OpenFile(c.name, c.flag, 0o600)
		if !errors.Is(err, ErrSymlink) {
			t.Errorf("OpenFile(%s, %#x) = %v, %v; want ErrSymlink", c.name, c.flag, f, err)
			if f != nil {
				f.Close()
			}
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "made-by-the-link")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a dangling link's target was created: %v", err)
	}
	if _, err := OpenFile(dir, os.O_RDONLY, 0); err == nil {
		t.Error("a directory was opened as a file")
	}
	f, err := OpenFile(filepath.Join(dir, "new"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if f, err = Open(target); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

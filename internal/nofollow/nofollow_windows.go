//go:build windows

package nofollow

import (
	"errors"
	"os"
)

// Windows has no O_NOFOLLOW in os.OpenFile: the name is checked with Lstat, opened, and the file opened must be the
// file checked (os.SameFile), so that a link swapped in between is refused all the same.
func openFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	before, err := os.Lstat(name)
	switch {
	case err == nil && before.Mode()&(os.ModeSymlink|os.ModeIrregular) != 0:
		return nil, symlinkError(name)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	after, lerr := os.Lstat(name)
	opened, serr := f.Stat()
	if lerr != nil || serr != nil || after.Mode()&(os.ModeSymlink|os.ModeIrregular) != 0 || !os.SameFile(after, opened) ||
		before != nil && !os.SameFile(before, opened) {
		f.Close()
		return nil, symlinkError(name)
	}
	return f, nil
}

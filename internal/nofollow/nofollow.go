// Package nofollow opens the files of a data directory without following a symbolic link in their last component.
// A link in the data directory could point a database or the audit log at any file the server may write
// (issue 15, item 8): such a file is refused, and the check is the open itself (O_NOFOLLOW), so that a link swapped in
// between a check and the open cannot redirect it. Directories above the file are the operator's and are followed.
package nofollow

import (
	"errors"
	"fmt"
	"os"
)

// ErrSymlink is the error for a file that is a symbolic link.
var ErrSymlink = errors.New("is a symbolic link, which Strata does not follow in a data directory (a link could point it at any file); move the file itself there")

// OpenFile is os.OpenFile that refuses a symbolic link at name (the error matches ErrSymlink and names the file) and
// anything else that is not a regular file.
func OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := openFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file (%s)", name, fi.Mode().Type())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Open opens name for reading, as OpenFile.
func Open(name string) (*os.File, error) { return OpenFile(name, os.O_RDONLY, 0) }

func symlinkError(name string) error { return fmt.Errorf("%s %w", name, ErrSymlink) }

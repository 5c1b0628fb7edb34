//go:build unix

package nofollow

import (
	"errors"
	"os"
	"syscall"
)

func openFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(name, flag|syscall.O_NOFOLLOW, perm)
	if err != nil && (errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK)) { // EMLINK: FreeBSD's answer
		if fi, lerr := os.Lstat(name); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			return nil, symlinkError(name)
		}
	}
	return f, err
}

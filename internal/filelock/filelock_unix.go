//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Supported says whether locks keep processes apart on this system.
const Supported = true

func how(exclusive bool) int {
	if exclusive {
		return unix.LOCK_EX
	}
	return unix.LOCK_SH
}

func lock(f *os.File, exclusive bool) error {
	for {
		err := unix.Flock(int(f.Fd()), how(exclusive))
		if err != unix.EINTR {
			return err
		}
	}
}

func tryLock(f *os.File, exclusive bool) (bool, error) {
	for {
		err := unix.Flock(int(f.Fd()), how(exclusive)|unix.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EWOULDBLOCK):
			return false, nil
		case err != unix.EINTR:
			return false, err
		}
	}
}

func unlock(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }

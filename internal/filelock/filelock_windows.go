//go:build windows

package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// Supported says whether locks keep processes apart on this system.
const Supported = true

// The locked range: one byte at offset 2^64-1, as bbolt locks its files, where no read or write ever goes.
const allOnes = ^uint32(0)

func overlapped() *windows.Overlapped {
	return &windows.Overlapped{Offset: allOnes, OffsetHigh: allOnes}
}

func flags(exclusive bool) uint32 {
	if exclusive {
		return windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	return 0
}

func lock(f *os.File, exclusive bool) error {
	return windows.LockFileEx(windows.Handle(f.Fd()), flags(exclusive), 0, 1, 0, overlapped())
}

func tryLock(f *os.File, exclusive bool) (bool, error) {
	err := windows.LockFileEx(windows.Handle(f.Fd()), flags(exclusive)|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, overlapped())
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION):
		return false, nil
	default:
		return false, err
	}
}

func unlock(f *os.File) error {
	err := windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, overlapped())
	if errors.Is(err, windows.ERROR_NOT_LOCKED) {
		return nil
	}
	return err
}

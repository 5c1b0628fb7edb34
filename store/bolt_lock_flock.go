//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package store

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// lockShared takes a shared flock on f, the lock bbolt's readers take, waiting up to timeout while a writer holds
// an exclusive one. OpenBolt holds it while it checks the file, so that it never reads meta pages that another
// process is in the middle of writing. Closing f releases it.
func lockShared(f *os.File, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return err
		}
		if time.Now().After(deadline) {
			return errLockTimeout
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// unlockFile drops any flock on f's open file description. Closing f is not enough when bbolt failed half-way and
// left its memory map behind: the map holds a reference to the open file, and the lock lasts until the last one goes.
func unlockFile(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

// mapFile maps the first size bytes of f read-only, for OpenBolt's check of the page tree.
func mapFile(f *os.File, size int) (data []byte, unmap func(), err error) {
	data, err = syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return data, func() { _ = syscall.Munmap(data) }, nil
}

//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package store

import (
	"errors"
	"os"
	"time"
)

// lockShared does nothing where flock(2) is missing: OpenBolt's check of the file then races with a writer in
// another process, and bbolt's own lock (taken right after) is what reports the file as in use.
func lockShared(f *os.File, timeout time.Duration) error { return nil }

// unlockFile does nothing where flock(2) is missing.
func unlockFile(f *os.File) {}

// mapFile is not available here: the page tree check reads with ReadAt.
func mapFile(f *os.File, size int) ([]byte, func(), error) { return nil, nil, errors.ErrUnsupported }

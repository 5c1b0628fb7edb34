//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package store

import (
	"errors"
	"os"
)

// mapFile is not available here: the page tree check reads with ReadAt.
func mapFile(f *os.File, size int) ([]byte, func(), error) { return nil, nil, errors.ErrUnsupported }

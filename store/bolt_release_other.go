//go:build !linux

package store

// dropMapped does nothing where madvise(MADV_DONTNEED) is not known to keep a shared mapping's contents.
func dropMapped(uintptr, int64) error { return nil }

package store

import "syscall"

// dropMapped tells the kernel this process no longer needs its mapping of size bytes at addr: the pages leave its
// resident set and stay in the page cache. The map is read-only and shared (bbolt writes with pwrite), so nothing
// is lost: a later read faults the same bytes back in.
func dropMapped(addr uintptr, size int64) error {
	if size <= 0 {
		return nil
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, addr, uintptr(size), syscall.MADV_DONTNEED); errno != 0 {
		return errno
	}
	return nil
}

// Package filelock holds whole-file advisory locks between processes, the one primitive the audit log (appends
// from several processes) and store.Shared (a process waiting for a bbolt file says so) need, on every system
// Strata builds for.
//
// On Linux, macOS and the BSDs a lock is flock(2): it belongs to the open file (f), several shared locks or one
// exclusive lock at a time, and it goes when f is closed. On Windows it is LockFileEx on the one byte at the
// largest offset, the range bbolt locks too: far past any data, so that readers and writers of the file are never
// refused (a byte-range lock on Windows is mandatory for the bytes it covers). Elsewhere (Plan 9, WebAssembly,
// Solaris, AIX, …) Supported is false and the functions do nothing: processes are then not kept apart.
package filelock

import "os"

// Lock blocks until it holds a lock on f: exclusive, or shared with other shared holders.
func Lock(f *os.File, exclusive bool) error { return lock(f, exclusive) }

// TryLock takes a lock on f if it can right now, and reports whether it did. An error means the lock could not be
// asked for at all, not that someone else holds it.
func TryLock(f *os.File, exclusive bool) (bool, error) { return tryLock(f, exclusive) }

// Unlock drops the lock this process holds on f (it is not an error to hold none).
func Unlock(f *os.File) error { return unlock(f) }

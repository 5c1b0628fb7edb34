//go:build unix

package bench

import "syscall"

// syncDisks writes every dirty page of the machine to its disk and waits for it (sync(2)).
func syncDisks() { syscall.Sync() }

//go:build !windows

package snapshots

import "golang.org/x/sys/unix"

// writable reports whether this process may create files in the directory dir: access(2), no file made.
func writable(dir string) error {
	return unix.Access(dir, unix.W_OK)
}

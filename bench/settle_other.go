//go:build !unix

package bench

// syncDisks does nothing where there is no sync(2): the systems then start as the last one left the disk.
func syncDisks() {}

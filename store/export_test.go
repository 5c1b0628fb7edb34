package store

import "os"

// SetBoltOpenFile makes OpenBolt open the bbolt file with open instead of os.OpenFile, so that a test can reach the
// *os.File that bbolt writes through (and, say, close it to make the next commit fail).
func SetBoltOpenFile(o *BoltOptions, open func(string, int, os.FileMode) (*os.File, error)) {
	o.openFile = open
}

// ParseBoltMeta exposes the meta page parser: txid, page size, and why the page is invalid ("" if it is valid).
func ParseBoltMeta(p []byte) (txid uint64, pageSize int, problem string) {
	m := parseBoltMeta(0, p)
	return m.txid, int(m.pageSize), m.problem
}

// SetBoltFormat makes OpenBolt create a new file in an older format ("1": nodes keyed by hash; "2": the chunk log
// with S2 only; "3": the chunk log in zstd, chunks as plain values), so that tests can cover the files earlier
// builds made.
func SetBoltFormat(o *BoltOptions, format string) { o.format = format }

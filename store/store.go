// Package store holds Strata's storage interfaces and their implementations.
//
// A node store keeps immutable, content-addressed nodes: the address of a node is the SHA-256 of its canonical,
// uncompressed bytes, so a node is written once and never changes. Implementations compress what they keep; callers
// always see the canonical bytes.
package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// Hash is the address of a node: the SHA-256 of its canonical bytes.
type Hash [32]byte

// HashOf returns the address of canonical node bytes.
func HashOf(b []byte) Hash { return sha256.Sum256(b) }

// String returns the hash in lower-case hex.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// Short returns the first 12 hex digits, for messages.
func (h Hash) Short() string { return hex.EncodeToString(h[:6]) }

// Node is one canonical node and its address.
type Node struct {
	Hash Hash
	Data []byte // canonical, uncompressed bytes; HashOf(Data) == Hash. Read only: it may share memory with a string.
	// stored, if set, is encodeStored(Data, codec), made ahead of time by PrepareNodes so that a backend need not
	// compress inside its write transaction (while it holds the writer lock, and the file against other processes).
	// PrepareNodes sets it only after checking that Data hashes to Hash, so a node that has it needs no check again.
	stored []byte
	// Incompressible says that Data is not worth compressing, so it is stored as it is without trying the codec.
	// revision sets it on its nodes of child hashes (an array's or a long string's inner nodes), 32 random bytes a
	// child: zstd spent 15–70 µs on each one a commit writes, to store it raw anyway. Only the work changes: a node
	// stored raw is read back like any other.
	Incompressible bool
}

// PutStats says what a Put added to storage: nodes that were already present are not counted.
type PutStats struct {
	Nodes       int   // nodes newly written
	RawBytes    int64 // their canonical (uncompressed) size
	StoredBytes int64 // what they occupy as stored (compressed, with the codec byte)
}

// Add accumulates another PutStats.
func (s *PutStats) Add(o PutStats) {
	s.Nodes += o.Nodes
	s.RawBytes += o.RawBytes
	s.StoredBytes += o.StoredBytes
}

// NodeReader reads nodes by address.
type NodeReader interface {
	// GetNodes returns the canonical bytes of each node, in the order asked. The returned slices are owned by the
	// caller and stay valid forever. A missing node is an error wrapping ErrNodeMissing.
	GetNodes(ctx context.Context, hashes []Hash) ([][]byte, error)
}

// NodeWriter writes nodes.
type NodeWriter interface {
	// PutNodes stores each node that is not already present (put-if-absent) and reports what was added. It must not
	// write into a node's Data (it may share memory with the caller's strings), nor keep it past the call.
	PutNodes(ctx context.Context, nodes []Node) (PutStats, error)
}

// NodeStore is an immutable, content-addressed node store.
type NodeStore interface {
	NodeReader
	NodeWriter
}

// MemoryReleaser is a store that can give back memory it holds for what it has read: bbolt's map of the file keeps
// every page it touched resident (and counted in the process's RSS) until released. A long import calls it as it
// goes, so that its memory stays bounded whatever the size of the file.
type MemoryReleaser interface {
	ReleaseMemory() error
}

// ErrNodeMissing is returned when a node that a tree refers to is not in the store: the store is damaged, or a
// caller used a root from another store.
var ErrNodeMissing = errors.New("node missing from store")

// ErrCorruptNode is returned when stored bytes do not decompress, or do not hash to their address.
var ErrCorruptNode = errors.New("stored node is corrupt")

// MissingError names the node that was not found.
type MissingError struct{ Hash Hash }

func (e *MissingError) Error() string {
	return fmt.Sprintf("node %s missing from store", e.Hash.Short())
}
func (e *MissingError) Unwrap() error { return ErrNodeMissing }

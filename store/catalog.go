package store

import (
	"context"
	"errors"
	"time"
)

// A database's storage is two things (docs/storage.md §9): an immutable node store and a small, strongly consistent
// catalog of revision records, branch heads, labels, the per-branch head log, idempotency keys and plans. A backend
// commits both in one atomic, durable transaction, so a revision is never visible without its nodes.

// Backend is one database's storage.
type Backend interface {
	NodeStore
	// View runs fn against a consistent, read-only view of the catalog. fn must not keep what it reads past its
	// return except by copying (the records returned are already copies).
	View(ctx context.Context, fn func(CatalogReader) error) error
	// Update runs fn in one transaction and makes everything it wrote durable before returning nil. If fn returns an
	// error, nothing it wrote is kept.
	Update(ctx context.Context, fn func(CatalogTx) error) error
	// Close releases the backend.
	Close() error
	// NodeCodec is the compression the backend writes new nodes with, for PrepareNodes.
	NodeCodec() Codec
}

// CatalogReader reads the catalog.
type CatalogReader interface {
	// Revision returns revision n, or ErrNotFound.
	Revision(n uint64) (RevisionRecord, error)
	// LastRevision returns the highest revision number (0 for none).
	LastRevision() (uint64, error)
	// Revisions calls fn for revisions from n downwards while fn returns true.
	Revisions(from uint64, fn func(RevisionRecord) bool) error
	// Branch returns a branch, or ErrNotFound.
	Branch(name string) (BranchRecord, error)
	// Branches lists every branch in name order.
	Branches() ([]BranchRecord, error)
	// Label returns a snapshot label, or ErrNotFound.
	Label(name string) (LabelRecord, error)
	// Labels lists every label in name order.
	Labels() ([]LabelRecord, error)
	// HeadAt returns the revision a branch (by id) pointed to at time t, from its head log; ok is false when the
	// branch did not exist yet at t.
	HeadAt(branchID uint64, t time.Time) (rev uint64, ok bool, err error)
	// Idempotent returns the revision committed under an idempotency key.
	Idempotent(key string) (rev uint64, ok bool, err error)
	// Get reads a value from a small named bucket of the catalog (plans, approvals, GC state); ok is false if absent.
	Get(bucket, key string) (val []byte, ok bool, err error)
	// Scan calls fn for each key of a named bucket in key order while fn returns true.
	Scan(bucket string, fn func(key string, val []byte) bool) error
	// GetNodes reads nodes as of this transaction (the NodeReader contract: copies, hash-checked).
	GetNodes(hashes []Hash) ([][]byte, error)
}

// CatalogTx reads and writes the catalog and nodes inside one transaction.
type CatalogTx interface {
	CatalogReader
	// PutNodes stores nodes not already present, as part of the transaction.
	PutNodes(nodes []Node) (PutStats, error)
	// AddRevision appends a revision; its number must be LastRevision()+1.
	AddRevision(r RevisionRecord) error
	// PutBranch creates or updates a branch.
	PutBranch(b BranchRecord) error
	// DeleteBranch removes a branch name (its revisions stay).
	DeleteBranch(name string) error
	// PutLabel creates or updates a snapshot label.
	PutLabel(l LabelRecord) error
	// DeleteLabel removes a label.
	DeleteLabel(name string) error
	// LogHead records that a branch's head became rev at time t.
	LogHead(branchID uint64, t time.Time, rev uint64) error
	// SetIdempotent records the revision a keyed write committed.
	SetIdempotent(key string, rev uint64) error
	// Put and Delete write to a small named bucket.
	Put(bucket, key string, val []byte) error
	Delete(bucket, key string) error
	// NextID returns a new id, unique within the database (for branches).
	NextID() (uint64, error)
	// DeleteNodes removes nodes (garbage collection) and reports how many were present and their stored bytes.
	DeleteNodes(hashes []Hash) (int, int64, error)
	// DeleteRevision removes a revision record (garbage collection). The newest revision is never removed, so that
	// numbers are never reused.
	DeleteRevision(n uint64) error
}

// NodeLister lists the nodes a backend stores, for garbage collection.
type NodeLister interface {
	// NodeHashes returns up to limit stored addresses greater than after, in order (after nil: from the start).
	NodeHashes(ctx context.Context, after *Hash, limit int) ([]Hash, error)
}

// RevisionRecord is one immutable state of a whole database.
type RevisionRecord struct {
	Number    uint64    `json:"n"`
	Root      []byte    `json:"root"`              // the root value's encoding
	Parents   []uint64  `json:"parents,omitempty"` // first parent, then the merged one
	Branch    string    `json:"branch"`
	Time      time.Time `json:"time"`
	Author    string    `json:"author,omitempty"`
	Tool      string    `json:"tool,omitempty"`
	Message   string    `json:"message,omitempty"`
	Resources []string  `json:"resources,omitempty"` // top-level resources whose value changed
	NewNodes  int       `json:"new_nodes"`
	NewBytes  int64     `json:"new_bytes"`
}

// BranchRecord is a movable head.
type BranchRecord struct {
	Name    string    `json:"name"`
	ID      uint64    `json:"id"`
	Head    uint64    `json:"head"`
	Base    uint64    `json:"base"` // the revision it was created from
	Creator string    `json:"creator,omitempty"`
	Created time.Time `json:"created"`
}

// LabelRecord is an immutable name for a revision (a snapshot).
type LabelRecord struct {
	Name     string    `json:"name"`
	Revision uint64    `json:"revision"`
	Note     string    `json:"note,omitempty"`
	Creator  string    `json:"creator,omitempty"`
	Created  time.Time `json:"created"`
}

// ErrNotFound is returned for a catalog entry that does not exist. It is Strata's one not-found sentinel:
// revision.ErrNotFound and snapshots.ErrNotFound are this same value, so that errors.Is with any of the three
// matches a missing path, resource, database, branch, snapshot, revision or catalog entry alike.
var ErrNotFound = errors.New("not found")

// OutOfOrderError is returned when a revision is added with a number that is not the next one.
type OutOfOrderError struct{ Got, Last uint64 }

func (e *OutOfOrderError) Error() string {
	return "revision " + itoa(e.Got) + " added after revision " + itoa(e.Last) + ": revisions must be consecutive"
}

func errOutOfOrder(got, last uint64) error { return &OutOfOrderError{got, last} }

func itoa(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

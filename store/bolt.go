package store

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/strata-db/strata/internal/nofollow"
)

// The on-disk backend: one bbolt file per database (docs/storage.md §4).

// Bucket names and the meta keys of format 1.
var (
	bucketMeta  = []byte("meta")
	bucketNodes = []byte("nodes")

	metaFormat  = []byte("strata-format") // the file format version, as decimal text
	metaCreated = []byte("created")       // creation time, RFC 3339 with nanoseconds, UTC
)

// BoltFormat is the file format version this build writes, recorded under strata-format in the meta bucket. It
// reads formats 1 (nodes keyed by hash in one B+tree; see bolt_nodes.go), 2 (the chunk log, nodes compressed with
// S2 only) and 3 (the chunk log, new nodes in zstd; codec.go) too, and keeps writing such files in their format, so
// that the builds that made them can still read them. Format 4 keeps each chunk in a bucket of its own, so that a
// commit writes its chunk's pages and never again those of the chunks before it (bolt_nodes.go).
const BoltFormat = "4"

const (
	boltFormat1 = "1"
	boltFormat2 = "2"
	boltFormat3 = "3"
)

const (
	defaultInitialMmapSize = 64 << 20
	defaultOpenTimeout     = 5 * time.Second
)

// ErrFailStop is returned by every call on a Bolt after a commit failed (or bbolt faulted reading the file: it was
// truncated under us, or a disk read failed), until the database is closed and reopened. After a failed write or
// fsync the kernel may have dropped the dirty pages, and a later fsync can report success with the data lost
// (PostgreSQL's "fsyncgate"), so the only safe course is to stop serving and let a reopen re-read the file from what
// is durably on disk (docs/storage.md §5, docs/security.md §2.3). Reads are refused too: they could return pages that never
// reached the disk.
var ErrFailStop = errors.New("store stopped after an I/O failure; close and reopen it")

// ErrClosed is returned by calls on a Bolt that has been closed.
var ErrClosed = errors.New("store is closed")

// ErrLocked is returned by OpenBolt when another process (or another OpenBolt in this process) holds the file.
var ErrLocked = errors.New("database file is in use")

// ErrBadFile is returned by OpenBolt for a file that is not a usable Strata database: not a bbolt file, truncated,
// with a damaged meta page, or a bbolt file of some other program.
var ErrBadFile = errors.New("not a usable strata database file")

// ErrSymlink matches the error for a database file that is a symbolic link: it is refused, never followed
// (internal/nofollow).
var ErrSymlink = nofollow.ErrSymlink

// ErrFormat is returned by OpenBolt for a Strata database of a format version this build does not read.
var ErrFormat = errors.New("unsupported strata database format")

// BoltOptions tunes OpenBolt. The zero value (or nil) gives the defaults.
type BoltOptions struct {
	// InitialMmapSize is the size of the first memory map, in bytes (default 64 MiB). bbolt remaps when the file
	// outgrows the map, and a remap waits for every read transaction to end, so a map larger than the file avoids
	// stalls while the database is small. It reserves address space, not memory.
	InitialMmapSize int

	// Timeout is how long OpenBolt waits for another process to release the file (default 5 s).
	Timeout time.Duration

	// AllowMetaRollback opens a file whose newest meta page is damaged at the previous transaction, as bbolt itself
	// would. That is right after a crash in the middle of writing a meta page (the interrupted commit was never
	// acknowledged), but it silently drops the last commit if the page was damaged later, so by default OpenBolt
	// refuses the file and says so.
	AllowMetaRollback bool

	// SyncFreelist writes bbolt's freelist at every commit (one more page written) instead of rebuilding it by
	// scanning the whole file on open. Shared (several processes taking turns) sets it: it reopens often.
	SyncFreelist bool

	// OnCommit, when set, is told about every write transaction the Bolt commits, or fails to commit: its
	// duration and bbolt's breakdown of it (Tx.Stats). It is called synchronously, after the commit: it must be
	// quick. An operator's metrics hang here (package store keeps none).
	OnCommit func(CommitStats)

	// skipTreeWalk skips the page-tree walk of the file check (the meta pages are still checked). Shared sets it
	// when it reopens a file this process has already walked: the walk reads the whole file.
	skipTreeWalk bool

	// index, when set, is the node index of an earlier open of this file (Shared reopens it often): only the chunks
	// added since are loaded.
	index *nodeIndex

	// format, when set, is the format a new file is created in (tests of older formats' code paths; see
	// export_test.go).
	format string

	// openFile replaces os.OpenFile for the bbolt file; tests use it to reach the *os.File (see export_test.go).
	openFile func(string, int, os.FileMode) (*os.File, error)
}

// Bolt is a NodeStore in one bbolt file. Its methods are safe for concurrent use. After a failed commit it refuses
// every call with ErrFailStop until reopened.
type Bolt struct {
	db     *bolt.DB
	file   *os.File // bbolt's file, to release the lock if bbolt is wedged (see wedged)
	path   string
	closed atomic.Bool
	failed atomic.Pointer[error] // the commit error that stopped the store, if any
	// wedged is set when bbolt faulted while holding its internal locks (in Begin, reading the meta pages of a file
	// truncated under us, or in Commit). Its Close would then wait forever, so Close closes the file instead. Calls
	// already waiting inside bbolt for those locks stay blocked.
	wedged atomic.Bool
	revs   revCache // decoded revision records (see revCache)
	// onCommit is BoltOptions.OnCommit.
	onCommit func(CommitStats)
	// index maps the nodes of a file of format 2, 3 or 4 (the chunk log) to their chunks; nil for format 1. wmu is
	// held by every write transaction until the index has taken its changes, so that the next one sees them.
	index *nodeIndex
	wmu   sync.Mutex
	// codec is what new nodes are compressed with: zstd in formats 3 and 4, S2 in formats 1 and 2.
	codec Codec
	// nested says each chunk is a bucket of its own (format 4).
	nested bool
}

var _ NodeStore = (*Bolt)(nil)

// OpenBolt opens the database at path, creating it if the file does not exist or is empty. A file that exists is
// checked before bbolt maps it (docs/storage.md §10; see checkBoltFile): bbolt opens a truncated file and then dies with
// SIGBUS on the first read past its end, and panics in a goroutine of its own on a damaged page. Errors name the file
// and the fix, and match ErrLocked (another process holds it), ErrBadFile (not a bbolt file, truncated, damaged,
// another program's) or ErrFormat (a Strata format this build does not read).
func OpenBolt(path string, opts *BoltOptions) (b *Bolt, err error) {
	var o BoltOptions
	if opts != nil {
		o = *opts
	}
	if o.InitialMmapSize <= 0 {
		o.InitialMmapSize = defaultInitialMmapSize
	}
	if o.Timeout <= 0 {
		o.Timeout = defaultOpenTimeout
	}

	if err := checkBoltFile(path, o.Timeout, o.AllowMetaRollback, o.skipTreeWalk); err != nil {
		return nil, err
	}

	bo := &bolt.Options{
		Timeout: o.Timeout,
		// The freelist is not written at each commit, which saves a page write per commit; it is rebuilt by scanning
		// the file on open (etcd's setting).
		NoFreelistSync: !o.SyncFreelist,
		FreelistType:   bolt.FreelistMapType,
		// A large first map avoids remaps, which block readers, while the file grows.
		InitialMmapSize: o.InitialMmapSize,
		// Durable commits: never NoSync outside an explicit unsafe bulk import.
		NoSync: false,
	}
	openFile := o.openFile
	if openFile == nil {
		openFile = nofollow.OpenFile // a link swapped in after checkBoltFile is refused by the open itself
	}
	var opened *os.File
	bo.OpenFile = func(name string, flag int, mode os.FileMode) (*os.File, error) {
		f, err := openFile(name, flag, mode)
		opened = f
		return f, err
	}

	db, err := openBoltDB(path, bo)
	if err != nil {
		if opened != nil && db == nil {
			// bbolt closes the file on an error return, but not when it panics (it panics on corrupt pages while
			// rebuilding the freelist). The map, if any, is leaked, and it keeps the file open: drop the lock
			// explicitly, so that the file can be opened again once repaired.
			unlockFile(opened)
			_ = opened.Close()
		}
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, lockedError(path, o.Timeout)
		}
		return nil, err
	}
	// bbolt grows the file past the mmap size in steps of AllocSize (16 MiB by default), so a 104 MB document
	// stored in 28 MB of pages sat in a 43 MB file. Steps of 256 KiB cost one more ftruncate+fsync per 256 KiB of
	// growth (one per transaction at most: one single-field commit in ~25 at N = 1,000,000), and leave the file at
	// most 256 KiB larger than its pages (2 MiB steps left 1.1 MB, 0.010 bytes per byte of JSON, at that N).
	db.AllocSize = allocStep
	b = &Bolt{db: db, file: opened, path: path, onCommit: o.OnCommit}
	if err := b.init(&o); err != nil {
		_ = b.Close()
		return nil, err
	}
	return b, nil
}

// openBoltDB calls bolt.Open and turns its panics and memory faults into errors.
func openBoltDB(path string, bo *bolt.Options) (db *bolt.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("%w: %s: bbolt failed reading the file (%v); the file is damaged: restore it from a backup",
				ErrBadFile, path, r)
		}
	}()
	db, err = bolt.Open(path, 0o600, bo)
	switch {
	case err == nil, errors.Is(err, berrors.ErrTimeout):
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrChecksum):
		err = fmt.Errorf("%w: opening %s: %w", ErrBadFile, path, err)
	default:
		err = fmt.Errorf("opening %s: %w", path, err)
	}
	return db, err
}

func lockedError(path string, timeout time.Duration) error {
	return fmt.Errorf("%w: %s is held by another process (or already open in this one); waited %s for it to be "+
		"released: stop the other strata process, or use another file", ErrLocked, path, timeout)
}

// init checks the meta bucket of an existing file, or creates the buckets of a new one, and loads the node index of a
// file of format 2, 3 or 4.
func (b *Bolt) init(o *BoltOptions) error {
	state := "new"
	format := ""
	err := b.view(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			empty := true
			_ = tx.ForEach(func([]byte, *bolt.Bucket) error { empty = false; return errStop })
			if !empty {
				return fmt.Errorf("%w: %s is a bbolt database of another program (no %q bucket): check the path",
					ErrBadFile, b.path, bucketMeta)
			}
			return nil
		}
		state = "existing"
		var err error
		format, err = checkMeta(b.path, tx)
		return err
	})
	if err != nil {
		return err
	}
	if state == "new" {
		if format, err = b.create(cmp.Or(o.format, BoltFormat)); err != nil {
			return err
		}
	}
	b.codec = CodecZstd
	if format == boltFormat1 || format == boltFormat2 {
		b.codec = CodecS2
	}
	if format == boltFormat1 {
		return nil
	}
	// The formats with chunks as plain values are those earlier builds wrote: every later one nests them.
	b.nested = format != boltFormat2 && format != boltFormat3
	b.index = o.index
	if b.index == nil {
		b.index = &nodeIndex{}
	}
	return b.view(func(tx *bolt.Tx) error { return b.index.load(tx, b.path) })
}

// create makes the buckets of a new database (or of a bbolt file left empty by a crash during creation) and records
// its format, in one transaction.
func (b *Bolt) create(format string) (string, error) {
	err := b.update(context.Background(), func(tx *bolt.Tx, _ *nodeTx) error {
		if meta := tx.Bucket(bucketMeta); meta != nil { // someone got there first; impossible under the file lock
			var err error
			format, err = checkMeta(b.path, tx)
			return err
		}
		meta, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		if err := meta.Put(metaFormat, []byte(format)); err != nil {
			return err
		}
		if err := meta.Put(metaCreated, []byte(time.Now().UTC().Format(time.RFC3339Nano))); err != nil {
			return err
		}
		buckets := [][]byte{bucketChunks, bucketChunkIdx}
		if format == boltFormat1 {
			// The nodes bucket keeps the default FillPercent (0.5) for ordinary commits: its keys are SHA-256
			// hashes, so inserts land uniformly across the key space. Bulk puts fill their pages (see bulkFill).
			buckets = [][]byte{bucketNodes}
		}
		for _, name := range buckets {
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("creating the database in %s: %w", b.path, err)
	}
	// Make the new file's directory entry durable too.
	syncDir(filepath.Dir(b.path))
	return format, nil
}

var errStop = errors.New("stop")

// checkMeta checks the meta bucket and the node buckets of an existing file and returns its format.
func checkMeta(path string, tx *bolt.Tx) (string, error) {
	v := tx.Bucket(bucketMeta).Get(metaFormat)
	var need [][]byte
	switch {
	case v == nil:
		return "", fmt.Errorf("%w: %s has a meta bucket but no %s: it is not a strata database (check the path)",
			ErrBadFile, path, metaFormat)
	case bytes.Equal(v, []byte(BoltFormat)), bytes.Equal(v, []byte(boltFormat3)), bytes.Equal(v, []byte(boltFormat2)):
		need = [][]byte{bucketChunks, bucketChunkIdx}
	case bytes.Equal(v, []byte(boltFormat1)):
		need = [][]byte{bucketNodes}
	default:
		return "", fmt.Errorf("%w: %s is strata format %q, and this build reads formats %s, %s, %s and %s: use a "+
			"strata build that supports format %q", ErrFormat, path, printable(v), boltFormat1, boltFormat2, boltFormat3,
			BoltFormat, printable(v))
	}
	for _, name := range need {
		if tx.Bucket(name) == nil {
			return "", fmt.Errorf("%w: %s has no %s bucket: the file is damaged; restore it from a backup", ErrBadFile,
				path, name)
		}
	}
	return string(v), nil
}

// printable quotes at most 32 bytes of a stored value for an error message.
func printable(v []byte) string {
	if len(v) > 32 {
		return string(v[:32]) + "…"
	}
	return string(v)
}

func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

// Path returns the path the database was opened with.
func (b *Bolt) Path() string { return b.path }

// Close closes the database, waiting for calls in progress to finish. Calls after Close return ErrClosed.
func (b *Bolt) Close() error {
	if !b.closed.CompareAndSwap(false, true) {
		return nil
	}
	if b.wedged.Load() {
		// The map is leaked (bbolt does not expose its size), and keeps the file open: drop the lock explicitly so
		// that the database can be reopened.
		unlockFile(b.file)
		_ = b.file.Close()
		return fmt.Errorf("closing %s: %w: %w", b.path, ErrFailStop, *b.failed.Load())
	}
	if err := b.db.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", b.path, err)
	}
	return nil
}

// usable returns the error every call gets once the store is closed or has failed.
func (b *Bolt) usable() error {
	if b.closed.Load() {
		return fmt.Errorf("%w: %s", ErrClosed, b.path)
	}
	if p := b.failed.Load(); p != nil {
		return fmt.Errorf("%w: %s: %w", ErrFailStop, b.path, *p)
	}
	return nil
}

// stop makes the store fail-stop with cause (the first cause wins) and returns the error for the failing call.
func (b *Bolt) stop(cause error) error {
	b.failed.CompareAndSwap(nil, &cause)
	return fmt.Errorf("%w: %s: %w", ErrFailStop, b.path, cause)
}

func (b *Bolt) beginErr(err error) error {
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("%w: %s", ErrClosed, b.path)
	}
	return fmt.Errorf("%s: %w", b.path, err)
}

// view runs fn in a read transaction. A panic in bbolt (it panics on corrupt pages) or a memory fault on the map
// (SIGBUS: the file was truncated under us, or the disk failed a read) stops the store instead of the process.
func (b *Bolt) view(fn func(*bolt.Tx) error) (err error) {
	if err := b.usable(); err != nil {
		return err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var tx *bolt.Tx
	defer func() {
		r := recover()
		if tx != nil {
			safeRollback(tx)
		}
		if r != nil {
			err = b.fault(tx == nil, "reading", r)
		}
	}()
	tx, err = b.db.Begin(false)
	if err != nil {
		return b.beginErr(err)
	}
	return fn(tx)
}

// errNoCommit, returned by an update function, ends the transaction without committing and without error.
var errNoCommit = errors.New("nothing to commit")

// update runs fn in a write transaction and commits it durably. An error from fn or a canceled ctx rolls back
// with no effect; a failed commit stops the store (ErrFailStop).
//
// fn is given the transaction's view of the nodes of a file of format 2, 3 or 4 (nil for format 1); the index takes its
// changes once the commit has succeeded.
func (b *Bolt) update(ctx context.Context, fn func(*bolt.Tx, *nodeTx) error) (err error) {
	if err := b.usable(); err != nil {
		return err
	}
	if b.index != nil {
		b.wmu.Lock()
		defer b.wmu.Unlock()
		// A commit that failed while this call waited for the lock has stopped the store and dropped the index.
		if err := b.usable(); err != nil {
			return err
		}
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var tx *bolt.Tx
	var nt *nodeTx
	committed := false
	defer func() {
		r := recover()
		if tx != nil && !committed {
			safeRollback(tx)
		}
		if r != nil {
			// A panic inside Commit leaves bbolt's writer lock held, as one inside Begin leaves its meta lock.
			err = b.fault(tx == nil || committed, "writing", r)
		}
		if r != nil && committed && nt != nil {
			nt.failed() // its nodes were published, and the commit did not finish (after the stop: see GetNodes)
		}
	}()
	tx, err = b.db.Begin(true)
	if err != nil {
		return b.beginErr(err)
	}
	nt = b.nodeTx(tx)
	if err := fn(tx, nt); err != nil {
		if errors.Is(err, errNoCommit) {
			return nil
		}
		return err
	}
	// The last point where the call can still be abandoned with no effect.
	if err := ctx.Err(); err != nil {
		return err
	}
	// Commit failures are treated as I/O errors, whatever their cause: bbolt rolls the transaction back in memory,
	// but which pages reached the disk is unknown (see ErrFailStop). Failures before any write (growing the file
	// on a full disk) would be safe to retry, but are not told apart from a failed fsync.
	committed = true
	if nt != nil {
		nt.publish()
	}
	t0 := time.Now()
	err = tx.Commit()
	if b.onCommit != nil {
		st := tx.Stats()
		b.tellCommit(CommitStats{Duration: time.Since(t0), Rebalance: st.GetRebalanceTime(), Spill: st.GetSpillTime(),
			Write: st.GetWriteTime(), PageBytes: st.GetPageAlloc(), Failed: err != nil})
	}
	if err != nil {
		err = b.stop(fmt.Errorf("commit failed: %w", err))
		if nt != nil {
			nt.failed() // after the stop, so that a reader that misses a node because of it sees the stop
		}
		return err
	}
	if nt != nil {
		nt.committed()
	}
	return nil
}

// nodeTx returns tx's view of the nodes of a file of format 2, 3 or 4, or nil for format 1.
func (b *Bolt) nodeTx(tx *bolt.Tx) *nodeTx {
	if b.index == nil {
		return nil
	}
	return &nodeTx{x: b.index, tx: tx, id: uint64(tx.ID()), nested: b.nested}
}

// nodeGetter returns a function that finds a node's stored form in tx (aliasing its memory), or nil: through nt,
// the write transaction's view with its own writes, if given.
func (b *Bolt) nodeGetter(tx *bolt.Tx, nt *nodeTx) func(Hash) []byte {
	if nt == nil {
		nt = b.nodeTx(tx)
	}
	if nt != nil {
		return nt.get
	}
	bk := tx.Bucket(bucketNodes)
	return func(h Hash) []byte { return bk.Get(h[:]) }
}

// fault stops the store after a panic or memory fault inside bbolt. lockHeld says bbolt may still hold internal
// locks that it will never release (the fault was inside Begin or Commit), so that Close must not wait for them.
func (b *Bolt) fault(lockHeld bool, doing string, r any) error {
	err := b.stop(fmt.Errorf("bbolt failed %s the file (truncated or damaged, or a disk read error): %v", doing, r))
	if lockHeld {
		b.wedged.Store(true)
	}
	return err
}

func safeRollback(tx *bolt.Tx) {
	defer func() { _ = recover() }()
	_ = tx.Rollback()
}

// GetNodes implements NodeReader. It reads all the nodes in one read transaction, copying their stored bytes out
// before the transaction ends, and decodes and verifies them (decodeStored checks each hash) after it, so that the
// transaction stays short.
func (b *Bolt) GetNodes(ctx context.Context, hashes []Hash) ([][]byte, error) {
	if err := b.usable(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(hashes) == 0 {
		return [][]byte{}, nil
	}
	ends := make([]int, len(hashes))
	var arena []byte
	err := b.view(func(tx *bolt.Tx) error {
		get := b.nodeGetter(tx, nil)
		for i, h := range hashes {
			if i%64 == 63 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			v := get(h)
			if v == nil {
				return b.missing(h)
			}
			arena = append(arena, v...)
			ends[i] = len(arena)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(hashes))
	start := 0
	for i, h := range hashes {
		// decodeStored copies (codecRaw) or decompresses into new memory: results never alias the arena or each other.
		data, err := decodeStored(h, arena[start:ends[i]])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.path, err)
		}
		out[i] = data
		start = ends[i]
	}
	return out, nil
}

// missing is the error for node h not found: ErrFailStop if a failed commit dropped the index meanwhile.
func (b *Bolt) missing(h Hash) error {
	if p := b.failed.Load(); p != nil {
		return fmt.Errorf("%w: %s: %w", ErrFailStop, b.path, *p)
	}
	return fmt.Errorf("%s: %w", b.path, &MissingError{Hash: h})
}

// PutNodes implements NodeWriter: one durable write transaction stores every node not already present. A node whose
// data does not hash to its address is refused (and nothing is written): under put-if-absent, a wrong value stored
// at an address could never be replaced by the right one.
func (b *Bolt) PutNodes(ctx context.Context, nodes []Node) (PutStats, error) {
	if err := b.usable(); err != nil {
		return PutStats{}, err
	}
	if err := ctx.Err(); err != nil {
		return PutStats{}, err
	}
	if len(nodes) == 0 {
		return PutStats{}, nil
	}
	// Hash and compress outside the transaction, so that concurrent callers do that work in parallel and the
	// writer lock is held only for the B+tree work and the commit. Nodes already present are compressed for
	// nothing; that is rare, since callers write the nodes a change created.
	stored, err := encodeNodes(ctx, nodes, b.codec)
	if err != nil {
		return PutStats{}, err
	}
	var st PutStats
	err = b.update(ctx, func(tx *bolt.Tx, nt *nodeTx) error {
		var err error
		if st, err = putNodes(tx, nt, nodes, stored); err != nil {
			return err
		}
		if st.Nodes == 0 {
			return errNoCommit // all present, and durable: no commit, no fsync
		}
		return nil
	})
	if err != nil {
		return PutStats{}, err
	}
	return st, nil
}

// tellCommit hands a commit's figures to the OnCommit observer. A panic there is the observer's, not the commit's:
// it is recovered here, so that a commit already durable is not reported failed, nor the store wedged, by the
// recover of update (found in review: a caller would then retry a write that was made).
func (b *Bolt) tellCommit(c CommitStats) {
	defer func() { _ = recover() }()
	b.onCommit(c)
}

// encodeNodes checks that each node's data hashes to its address and returns its stored form. A node that does not
// is refused (and nothing is written): under put-if-absent, a wrong value stored at an address could never be
// replaced by the right one. A node PrepareNodes made ready was checked there.
func encodeNodes(ctx context.Context, nodes []Node, c Codec) ([][]byte, error) {
	stored := make([][]byte, len(nodes))
	for i, n := range nodes {
		if n.stored == nil && HashOf(n.Data) != n.Hash {
			return nil, fmt.Errorf("%w: refusing to store node %s: its data does not hash to its address",
				ErrCorruptNode, n.Hash.Short())
		}
		stored[i] = storedForm(n, c)
		if i%64 == 63 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
	}
	return stored, nil
}

// putNodes stores each node not already present: in chunks (formats 2 to 4, nt set) or by hash (format 1).
func putNodes(tx *bolt.Tx, nt *nodeTx, nodes []Node, stored [][]byte) (PutStats, error) {
	if nt != nil {
		return nt.put(nodes, stored)
	}
	return putEncoded(tx.Bucket(bucketNodes), nodes, stored)
}

// putEncoded stores each node not already present in the nodes bucket and counts what it added. The bucket's
// sequence counts its nodes, so that Stats need not walk the bucket; it lives in the bucket's header, which the
// commit rewrites anyway.
//
// A bulk put goes in key order: bbolt keeps a leaf's keys in one sorted slice until the commit splits it, so keys
// in random order make every insert move half of a slice that grows to the whole batch (13% of a 1M-element
// import's CPU); in order, each lands at the end.
func putEncoded(bk *bolt.Bucket, nodes []Node, stored [][]byte) (PutStats, error) {
	order := func(yield func(int) bool) {
		for i := range nodes {
			if !yield(i) {
				return
			}
		}
	}
	if len(nodes) >= bulkNodes {
		bk.FillPercent = bulkFill
		idx := make([]int, len(nodes))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int { return bytes.Compare(nodes[a].Hash[:], nodes[b].Hash[:]) })
		order = slices.Values(idx)
	}
	var st PutStats
	for i := range order {
		n := nodes[i]
		if bk.Get(n.Hash[:]) != nil { // present, or earlier in this batch
			continue
		}
		if err := bk.Put(n.Hash[:], stored[i]); err != nil {
			return PutStats{}, err
		}
		st.Nodes++
		st.RawBytes += int64(len(n.Data))
		st.StoredBytes += int64(len(stored[i]))
	}
	if st.Nodes > 0 {
		return st, bk.SetSequence(bk.Sequence() + uint64(st.Nodes))
	}
	return st, nil
}

// A bulk put (an import: hundreds of new nodes in one transaction) fills its pages. bbolt splits the nodes it
// spills at commit to FillPercent of a page, and at the default 0.5 a freshly imported tree would sit in half-empty
// pages for good: at n = 1,000,000 the file held 0.44 bytes per byte of JSON, against 0.27 with full pages, for
// the same bytes written per later single-field commit (93 KB, measured with /proc/self/io). Small commits keep the
// default: their keys land at random among existing pages.
const (
	allocStep = 256 << 10
	bulkNodes = 64
	bulkFill  = 0.95
)

// ReleaseMemory implements MemoryReleaser: the pages of the file this process has read through bbolt's map leave its
// resident set (they stay in the page cache). A bulk import touches the pages of the nodes bucket as it inserts, at
// random since keys are hashes, so without it the resident set grows with the file: 365 MiB for a 10,000,000-element
// import, against 56 MiB of heap. It runs inside a read transaction, which keeps bbolt from remapping meanwhile.
func (b *Bolt) ReleaseMemory() error {
	return b.view(func(tx *bolt.Tx) error {
		return dropMapped(b.db.Info().Data, tx.Size())
	})
}

var _ MemoryReleaser = (*Bolt)(nil)

// BoltStats describes a Bolt database.
type BoltStats struct {
	Nodes     int64 // nodes stored
	FileBytes int64 // size of the file; bbolt grows it ahead of use, in steps of up to 16 MiB
	UsedBytes int64 // bytes below bbolt's high-water mark (pages in use, or free for reuse)
}

// Stats returns the node count and the file's size.
func (b *Bolt) Stats() (BoltStats, error) {
	var st BoltStats
	err := b.view(func(tx *bolt.Tx) error {
		if b.index != nil {
			st.Nodes = int64(b.index.len())
		} else {
			st.Nodes = int64(tx.Bucket(bucketNodes).Sequence())
		}
		st.UsedBytes = tx.Size()
		return nil
	})
	if err != nil {
		return BoltStats{}, err
	}
	fi, err := os.Stat(b.path)
	if err != nil {
		return BoltStats{}, err
	}
	st.FileBytes = fi.Size()
	return st, nil
}

package snapshots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// A streaming import writes its nodes in batches, each in a transaction of its own, while it reads; the revision
// that names them comes last, in the writer's group commit, so nothing is visible until the whole import is
// durable, and an import that fails or is interrupted leaves no revision.
//
// Until that commit nothing reaches the nodes, and garbage collection removes what nothing reaches. So an import
// holds a lease in the catalog, renewed as it writes (and every leaseRenewal while it waits for input), and each
// batch's transaction records the addresses of every node it wrote or found already stored. Garbage collection keeps
// the nodes of every lease renewed within its grace window, and ends a lease that stopped being renewed (its import
// died): those nodes are then collected like any other unreachable ones. An import whose lease was ended fails when
// it next writes, or at its commit. The commit, and a failed import's clean-up, delete the lease and its lists.
const (
	importsBucket     = "imports"      // import id → importLease (JSON)
	importNodesBucket = "import-nodes" // import id "/" batch number → the addresses its nodes, 32 bytes each
)

// leaseRenewal is how often an import waiting for input renews its lease; writing a batch renews it too.
const leaseRenewal = 10 * time.Second

// importBatchBytes is how many bytes of nodes one batch writes. Each batch inserts its nodes at random places in the
// nodes bucket (their keys are hashes), and every page bbolt reads to do so stays in the process's resident set until
// released, with the kernel mapping up to 15 neighbouring pages of the file on each fault; smaller batches bound
// that, at the cost of more transactions (each rewrites the branch pages it passes through). At 10,000,000
// elements, 4 MiB batches peaked at 167 MiB RSS, 2 MiB at 103 MiB, 1 MiB at 65 MiB (and 25% slower). 1 MiB it
// is: through strata import, 2 MiB peaked at 111-117 MiB and, on a loaded machine, at up to 146 MiB, over the
// 128 MiB bound; 1 MiB peaks at 77-82 MiB with two imports running at once, for 12% more CPU.
const importBatchBytes = 1 << 20

// ImportOptions says how DB.Import reads its input. The zero value reads one JSON document.
type ImportOptions struct {
	// Lines reads JSON Lines: one JSON value per line (blank lines skipped), stored as an array.
	Lines bool
}

type importLease struct {
	Resource string    `json:"resource"`
	Branch   string    `json:"branch"`
	Started  time.Time `json:"started"`
	Renewed  time.Time `json:"renewed"`
}

// errLeaseEnded is the error of an import whose lease garbage collection ended.
func errLeaseEnded() error {
	return &ConflictError{Msg: "garbage collection ended this import's lease: it wrote nothing for longer than the " +
		"collection's grace window, so its nodes may be gone; nothing was committed: import again"}
}

// Import creates or replaces a whole resource with the JSON read from r, as one new revision, streaming: memory
// stays bounded whatever the size of the input (by the widest object, the depth and two batches of nodes). The JSON
// must be strict, as for Put. Errors in the input name its line, column and byte offset; an import that fails, or is
// interrupted, commits nothing. A dry run is refused: the input can be read only once.
func (db *DB) Import(ctx context.Context, resource string, r io.Reader, o ImportOptions, w WriteOptions) (*Result, error) {
	if err := ValidResourceName(resource); err != nil {
		return nil, err
	}
	if err := ValidRefName("branch", w.branch()); err != nil {
		return nil, err
	}
	if w.DryRun {
		return nil, invalid("an import cannot be a dry run (its input is read once, as it is stored); put the document instead")
	}
	return db.importValue(ctx, resource, w, func(ctx context.Context, f *revision.Forest) (revision.Value, revision.Stats, error) {
		return f.ImportWith(ctx, r, &revision.ImportOptions{Lines: o.Lines, Depth: 1, BatchBytes: importBatchBytes})
	})
}

// importValue commits the value build stores, through the import's lease, as the whole resource: Import's work
// once its input is chosen, and a large Put's.
func (db *DB) importValue(ctx context.Context, resource string, w WriteOptions, build func(context.Context, *revision.Forest) (revision.Value, revision.Stats, error)) (res *Result, err error) {
	if err := ValidResourceName(resource); err != nil {
		return nil, err
	}
	if err := ValidRefName("branch", w.branch()); err != nil {
		return nil, err
	}
	// A closed database takes no lease and stores no node, and says so as the writer would.
	db.mu.Lock()
	closed := db.closed
	db.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	ctx, end := commitSpan(ctx, w) // the span covers the build: that is where an import spends its time
	t0, submitted := time.Now(), false
	defer func() {
		// The batches and the lease are the write's own transactions: a storage failure in them is a failed commit,
		// as the writer tells of its own (Events.Commit; it marks the database not ready).
		if !submitted && errors.Is(err, store.ErrFailStop) {
			db.commitEvent(CommitEvent{Writes: 1, Duration: time.Since(t0), Err: err})
		}
		end(res, err)
	}()
	// Refuse now what the commit would refuse after reading everything, and answer a retry of a write already made
	// without building its document again (the writer would find the key only after that work).
	var replay *Result
	err = db.be.View(ctx, func(c store.CatalogReader) error {
		if k := w.IdempotencyKey; k != "" {
			var err error
			if replay, err = replayOf(c, k); err != nil || replay != nil {
				return err
			}
		}
		b, err := c.Branch(w.branch())
		if err != nil {
			return notFoundRef(c, "branch", w.branch(), err)
		}
		if w.ExpectedHead != 0 && b.Head != w.ExpectedHead {
			return &ConflictError{Branch: b.Name, Head: b.Head, Expected: w.ExpectedHead}
		}
		return nil
	})
	if err != nil || replay != nil {
		return replay, err
	}

	im, err := db.beginImport(ctx, resource, w.branch())
	if err != nil {
		return nil, err
	}
	committed := false
	defer func() {
		im.stop()
		if !committed {
			im.abandon()
		}
	}()
	v, stored, err := build(ctx, db.forest.WithStore(im))
	if err != nil {
		if le := im.leaseErr(); le != nil {
			return nil, le
		}
		return nil, err
	}
	// Check the document against the resource's schema here, before it waits for the writer: the writer then finds
	// it known valid (unless the schema changed meanwhile), and a whole check of a big import does not hold up
	// everyone else's commits. The lease is renewed while it runs (a whole check can take seconds); the renewals
	// stop only before the commit, which they would wait for.
	if err := db.checkImport(ctx, resource, w.branch(), v); err != nil {
		return nil, err
	}
	im.stop()
	inTx := w.InTx
	w.InTx = func(tx store.CatalogTx, rev store.RevisionRecord) error {
		if err := im.finish(tx); err != nil {
			return err
		}
		if inTx != nil {
			return inTx(tx, rev)
		}
		return nil
	}
	// The revision counts the nodes the batches stored as its own.
	submitted = true
	out := db.submit(ctx, &request{opts: w, stored: stored, change: func(ctx context.Context, f *revision.Forest, head State) (*revision.Change, []uint64, error) {
		c, err := f.Place(ctx, head.Root, revision.Pointer{resource}, v)
		return c, nil, err
	}})
	res, err = out.res, out.err
	if err != nil {
		return nil, err
	}
	committed = !res.Unchanged && !res.Replayed // else the lease is still there: abandon it
	if committed {
		// The revision keeps the nodes now: the lease and its lists go. If this fails (or the process dies first),
		// garbage collection ends the lease once it is older than the grace window, and deletes its lists.
		_ = im.drop()
	}
	return res, nil
}

// checkImport checks an imported value against the resource's schema, if it has one, incrementally from the
// value at the branch head when that one is known to be valid.
func (db *DB) checkImport(ctx context.Context, resource, branch string, v revision.Value) error {
	set, err := db.currentSchemas(ctx)
	if err != nil || set.byName[resource] == nil {
		return err
	}
	st, err := db.Resolve(ctx, Ref{Branch: branch})
	if err != nil {
		return err
	}
	return db.checkValue(ctx, db.forest, set.byName[resource], branch, st.Root, v)
}

// importer is one import in progress: the node store its tree is built into.
type importer struct {
	db    *DB
	id    string
	lease importLease
	batch int // batches written

	// mu makes the batches and the renewals take turns: both rewrite the lease. The commit's transaction runs
	// after both have stopped.
	mu       sync.Mutex
	ended    atomic.Bool // garbage collection ended the lease
	done     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

func importKey(id uint64) string { return fmt.Sprintf("%016x", id) }

func (im *importer) nodesKey(batch int) string { return fmt.Sprintf("%s/%08x", im.id, batch) }

// beginImport takes a lease and starts renewing it.
func (db *DB) beginImport(ctx context.Context, resource, branch string) (*importer, error) {
	now := db.now().UTC()
	im := &importer{db: db, lease: importLease{Resource: resource, Branch: branch, Started: now, Renewed: now}, done: make(chan struct{})}
	err := db.be.Update(ctx, func(tx store.CatalogTx) error {
		id, err := tx.NextID()
		if err != nil {
			return err
		}
		im.id = importKey(id)
		return im.putLease(tx)
	})
	if err != nil {
		return nil, err
	}
	im.wg.Add(1)
	go im.renew()
	return im, nil
}

func (im *importer) putLease(tx store.CatalogTx) error {
	b, err := json.Marshal(im.lease)
	if err != nil {
		return err
	}
	return tx.Put(importsBucket, im.id, b)
}

// holds checks, inside a transaction, that the lease is still this import's, and renews it. The caller holds mu.
func (im *importer) holds(tx store.CatalogTx) error {
	if _, ok, err := tx.Get(importsBucket, im.id); err != nil {
		return err
	} else if !ok {
		im.ended.Store(true)
		return errLeaseEnded()
	}
	im.lease.Renewed = im.db.now().UTC()
	return im.putLease(tx)
}

// leaseErr is errLeaseEnded once garbage collection has ended the lease.
func (im *importer) leaseErr() error {
	if im.ended.Load() {
		return errLeaseEnded()
	}
	return nil
}

// renew renews the lease every leaseRenewal until the import ends, so that a slow input does not lose it.
func (im *importer) renew() {
	defer im.wg.Done()
	t := time.NewTicker(leaseRenewal)
	defer t.Stop()
	for {
		select {
		case <-im.done:
			return
		case <-t.C:
			im.mu.Lock()
			err := im.db.be.Update(context.Background(), im.holds)
			im.mu.Unlock()
			if err != nil {
				return
			}
		}
	}
}

// stop ends the renewals; it may be called more than once.
func (im *importer) stop() {
	im.stopOnce.Do(func() { close(im.done) })
	im.wg.Wait()
}

// GetNodes implements store.NodeReader.
func (im *importer) GetNodes(ctx context.Context, hs []store.Hash) ([][]byte, error) {
	return im.db.be.GetNodes(ctx, hs)
}

// PutNodes implements store.NodeWriter: one batch, with the list of its addresses, in a transaction that renews the
// lease. The import writes one batch at a time.
func (im *importer) PutNodes(ctx context.Context, ns []store.Node) (store.PutStats, error) {
	// Compress outside the transaction (and while the import builds the next batch).
	im.db.prepareNodes(ns)
	hashes := make([]byte, 0, len(ns)*len(store.Hash{}))
	for i := range ns {
		hashes = append(hashes, ns[i].Hash[:]...)
	}
	var st store.PutStats
	im.mu.Lock()
	err := im.db.be.Update(ctx, func(tx store.CatalogTx) error {
		if err := im.holds(tx); err != nil {
			return err
		}
		var err error
		if st, err = tx.PutNodes(ns); err != nil {
			return err
		}
		return tx.Put(importNodesBucket, im.nodesKey(im.batch), hashes)
	})
	if err == nil {
		im.batch++
	}
	im.mu.Unlock()
	if err != nil {
		return store.PutStats{}, err
	}
	return st, im.release()
}

// release lets the store drop the pages of its file that the last transaction read (store.MemoryReleaser), so that
// an import's resident set does not grow with the file.
func (im *importer) release() error {
	if r, ok := im.db.be.(store.MemoryReleaser); ok {
		return r.ReleaseMemory()
	}
	return nil
}

// finish, in the transaction that commits the import's revision, checks that the lease still holds (so that no
// node of the tree was collected): the revision keeps the nodes from then on, and drop removes the lease and its
// lists once it has committed. Batches and renewals have stopped (they would wait for this transaction while it
// waited for them).
func (im *importer) finish(tx store.CatalogTx) error {
	if _, ok, err := tx.Get(importsBucket, im.id); err != nil {
		return err
	} else if !ok {
		im.ended.Store(true)
		return errLeaseEnded()
	}
	return nil
}

// importDropLists is how many of an import's lists one transaction of drop deletes. Deleting them all in one (1,100
// lists of 8 KiB for 10,000,000 elements) read 40-65 MB of the file through bbolt's map, pages interleaved with the
// import's nodes and each fault mapping its neighbours, and took the import's peak RSS from 76 MiB to up to 139 MiB
// at its very end; between these transactions the store lets go of the pages they read.
var importDropLists = 64 // a variable for tests

// drop deletes the import's lists, then its lease, a few lists per transaction. A lease without some of its lists
// protects less than it did, which is right: drop runs only once the nodes no longer need it.
func (im *importer) drop() error {
	ctx := context.Background()
	for from := 0; from < im.batch; from += importDropLists {
		to := min(im.batch, from+importDropLists)
		err := im.db.be.Update(ctx, func(tx store.CatalogTx) error {
			for b := from; b < to; b++ {
				if err := tx.Delete(importNodesBucket, im.nodesKey(b)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := im.release(); err != nil {
			return err
		}
	}
	return im.db.be.Update(ctx, func(tx store.CatalogTx) error { return tx.Delete(importsBucket, im.id) })
}

// abandon deletes the lease and lists of an import that will not commit, so that the next garbage collection
// removes its nodes. If it fails (or the process dies first), garbage collection ends the lease once it is older
// than the grace window.
func (im *importer) abandon() {
	im.mu.Lock()
	defer im.mu.Unlock()
	_ = im.drop()
}

// keepImports, inside a sweep transaction, marks the nodes of every import whose lease was renewed after cutoff,
// and ends the other leases (their imports died), deleting their lists: their nodes are then unreachable, like any
// others. Lists already marked are not read again.
func (m *marker) keepImports(tx store.CatalogTx, cutoff time.Time) error {
	// A live import renews its lease every leaseRenewal: a grace shorter than a few of those would end it while it
	// waits for input (found in review: gc --grace 5s failed a running import).
	if floor := m.db.now().Add(-3 * leaseRenewal); floor.Before(cutoff) {
		cutoff = floor
	}
	live := map[string]bool{}
	var ended []string
	var bad error
	err := tx.Scan(importsBucket, func(k string, v []byte) bool {
		var l importLease
		if err := json.Unmarshal(v, &l); err != nil {
			bad = fmt.Errorf("import lease %s: %w", k, err)
			return false
		}
		if l.Renewed.After(cutoff) {
			live[k] = true
		} else {
			ended = append(ended, k)
		}
		return true
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return err
	}
	var stale []string
	err = tx.Scan(importNodesBucket, func(k string, v []byte) bool {
		id, _, _ := strings.Cut(k, "/")
		if !live[id] {
			stale = append(stale, k)
			return true
		}
		if m.lists[k] {
			return true
		}
		if len(v)%len(store.Hash{}) != 0 {
			bad = fmt.Errorf("import node list %s is %d bytes, not a multiple of %d", k, len(v), len(store.Hash{}))
			return false
		}
		for i := 0; i < len(v); i += len(store.Hash{}) {
			m.seen[store.Hash(v[i:i+len(store.Hash{})])] = true
		}
		m.lists[k] = true
		return true
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return err
	}
	for _, k := range stale {
		if err := tx.Delete(importNodesBucket, k); err != nil {
			return err
		}
	}
	for _, k := range ended {
		if err := tx.Delete(importsBucket, k); err != nil {
			return err
		}
	}
	return nil
}

// Imports in progress, for tests and diagnostics.
func (db *DB) importsInProgress(ctx context.Context) (leases, lists int, err error) {
	err = db.be.View(ctx, func(c store.CatalogReader) error {
		if err := c.Scan(importsBucket, func(string, []byte) bool { leases++; return true }); err != nil {
			return err
		}
		return c.Scan(importNodesBucket, func(string, []byte) bool { lists++; return true })
	})
	return leases, lists, err
}

var _ store.NodeStore = (*importer)(nil)

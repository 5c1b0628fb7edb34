package snapshots

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// WriteOptions are the fields every write takes.
type WriteOptions struct {
	Branch         string // default main
	ExpectedHead   uint64 // when set, refuse with a ConflictError unless the branch head is this revision
	Message        string
	Author         string // the principal
	Tool           string // the tool or command that made the change
	IdempotencyKey string // a retried write with the same key returns the original result instead of committing again
	// InTx, if set, runs inside the transaction that commits the revision, after it is written: catalog records that
	// must land together with the revision or not at all (a consumed plan's marker). An error fails this write and
	// nothing of it is written; the other writes of its group are committed without it.
	InTx func(tx store.CatalogTx, rev store.RevisionRecord) error
	// DryRun computes the write on the branch head without committing anything: the Result carries a Preview (the
	// new root, readable with the nodes it would add) instead of a revision. An idempotency key that names an
	// earlier write still replays it.
	DryRun bool
}

func (w WriteOptions) branch() string {
	if w.Branch == "" {
		return Main
	}
	return w.Branch
}

// Result is a committed write.
type Result struct {
	Revision  uint64    `json:"revision"`
	Branch    string    `json:"branch"`
	Parent    uint64    `json:"parent"`
	Time      time.Time `json:"time"`
	Resources []string  `json:"resources"`
	NewNodes  int       `json:"new_nodes"`
	NewBytes  int64     `json:"new_bytes"`
	Replayed  bool      `json:"replayed,omitempty"`  // an earlier write with the same idempotency key
	Unchanged bool      `json:"unchanged,omitempty"` // the write changed nothing: no revision was made; Revision is the head
	// Preview is what a DryRun write would commit (nil otherwise, and for a replay or a write that changes nothing).
	Preview *Preview `json:"-"`
}

// changeFunc computes a new root from the branch head. It may build nodes through f (they are returned in the
// Change) and name extra parents (a merge).
type changeFunc func(ctx context.Context, f *revision.Forest, head State) (*revision.Change, []uint64, error)

type request struct {
	ctx    context.Context
	opts   WriteOptions
	change changeFunc                                           // a commit, or
	op     func(tx store.CatalogTx, now time.Time) (any, error) // a catalog operation
	done   chan outcome
}

type outcome struct {
	res *Result
	val any
	err error
}

// submit queues a request and waits for its outcome. Once queued, a write is carried through even if ctx is
// cancelled: a commit that has begun is made whole or not at all.
func (db *DB) submit(ctx context.Context, r *request) outcome {
	r.ctx, r.done = ctx, make(chan outcome, 1)
	db.mu.Lock()
	closed := db.closed
	db.mu.Unlock()
	if closed {
		return outcome{err: ErrClosed}
	}
	select {
	case db.queue <- r:
	case <-ctx.Done():
		return outcome{err: ctx.Err()}
	case <-db.closing:
		return outcome{err: ErrClosed}
	}
	return <-r.done
}

// Commit applies a change to a branch as one new revision.
func (db *DB) commit(ctx context.Context, w WriteOptions, fn changeFunc) (*Result, error) {
	if err := ValidRefName("branch", w.branch()); err != nil {
		return nil, err
	}
	if w.DryRun {
		return db.dryRun(ctx, w, fn)
	}
	o := db.submit(ctx, &request{opts: w, change: fn})
	return o.res, o.err
}

// catalogOp runs a catalog-only operation (branches, labels, plans) in its own transaction, in order with writes.
func (db *DB) catalogOp(ctx context.Context, fn func(tx store.CatalogTx, now time.Time) (any, error)) (any, error) {
	o := db.submit(ctx, &request{op: fn})
	return o.val, o.err
}

// writer is the database's single writer: it takes every waiting request and commits them together.
func (db *DB) writer() {
	defer db.wg.Done()
	for {
		var batch []*request
		select {
		case r := <-db.queue:
			batch = append(batch, r)
		case <-db.closing:
			for {
				select {
				case r := <-db.queue:
					db.run([]*request{r})
				default:
					return
				}
			}
		}
	more:
		for len(batch) < 256 {
			select {
			case r := <-db.queue:
				batch = append(batch, r)
			default:
				break more
			}
		}
		db.run(batch)
	}
}

// run carries out a batch: consecutive commits go together in one transaction; catalog operations run alone.
func (db *DB) run(batch []*request) {
	for len(batch) > 0 {
		if batch[0].op != nil {
			r := batch[0]
			var val any
			err := db.be.Update(r.ctx, func(tx store.CatalogTx) error {
				var err error
				val, err = r.op(tx, db.clock(tx))
				return err
			})
			r.done <- outcome{val: val, err: err}
			batch = batch[1:]
			continue
		}
		n := 1
		for n < len(batch) && batch[n].op == nil {
			n++
		}
		db.commitGroup(batch[:n])
		batch = batch[n:]
	}
}

// clock returns a time later than every revision's, so the time index stays unambiguous.
func (db *DB) clock(c store.CatalogReader) time.Time {
	now := db.now().UTC()
	if last, err := c.LastRevision(); err == nil && last > 0 {
		if rec, err := c.Revision(last); err == nil && !now.After(rec.Time) {
			now = rec.Time.Add(time.Microsecond)
		}
	}
	return now
}

var errRetry = errors.New("catalog moved under the batch; recompute")

// noopKeysBucket marks idempotency keys whose write changed nothing, so that a retry is answered "unchanged" too.
const noopKeysBucket = "idem-noop"

// inTxError is a request's InTx refusing: the transaction is abandoned and the group retried without it.
type inTxError struct {
	r   *request
	err error
}

func (e *inTxError) Error() string { return e.err.Error() }

type planned struct {
	r      *request
	rec    store.RevisionRecord // the new revision, or for a no-op the head it leaves as it is
	nodes  []store.Node
	branch store.BranchRecord
	noop   bool // the write changes nothing: no revision, but its idempotency key is recorded
}

// commitGroup computes every request of the group on the current heads (each on top of the ones before it on the
// same branch), then writes them all in one transaction. If another process committed in between, it starts over.
// No caller is answered on the strength of anything not yet durable: an answer that depends on an earlier request
// of the same group (a conflict with its head, a patch that fails on its content, a write it makes a no-op) waits,
// and is worked out again on the committed state.
func (db *DB) commitGroup(group []*request) {
	pending := group
	for retries := 0; len(pending) > 0; {
		if retries == 10 {
			for _, r := range pending {
				r.done <- outcome{err: fmt.Errorf("%w: the database kept changing under this write (another process is writing heavily); retry", ErrConflict)}
			}
			return
		}
		plans, deferred, last, startHeads, epoch, err := db.plan(pending)
		if err != nil {
			for _, r := range pending {
				r.done <- outcome{err: err}
			}
			return
		}
		if len(plans) == 0 {
			pending = deferred
			continue
		}
		err = db.be.Update(context.Background(), func(tx store.CatalogTx) error {
			n, err := tx.LastRevision()
			if err != nil {
				return err
			}
			if n != last {
				return errRetry
			}
			// A garbage-collection batch since planning may have removed nodes a change builds on.
			if e, _, err := tx.Get(gcBucket, gcEpochKey); err != nil || string(e) != epoch {
				return errRetry
			}
			for name, head := range startHeads {
				b, err := tx.Branch(name)
				if err != nil || b.Head != head {
					return errRetry
				}
			}
			for i := range plans {
				p := &plans[i]
				if k := p.r.opts.IdempotencyKey; k != "" {
					if n, ok, err := tx.Idempotent(k); err != nil {
						return err
					} else if ok {
						if _, err := tx.Revision(n); err == nil {
							return errRetry // committed meanwhile (another process): replay it
						}
					}
				}
				if p.noop {
					// Nothing changes; the key still records the answer, so that a retry gets the same one.
					if k := p.r.opts.IdempotencyKey; k != "" {
						if err := tx.SetIdempotent(k, p.rec.Number); err != nil {
							return err
						}
						if err := tx.Put(noopKeysBucket, k, nil); err != nil {
							return err
						}
					}
					continue
				}
				st, err := tx.PutNodes(p.nodes)
				if err != nil {
					return err
				}
				p.rec.NewNodes, p.rec.NewBytes = st.Nodes, st.StoredBytes
				if err := tx.AddRevision(p.rec); err != nil {
					return err
				}
				if err := tx.PutBranch(p.branch); err != nil {
					return err
				}
				if err := tx.LogHead(p.branch.ID, p.rec.Time, p.rec.Number); err != nil {
					return err
				}
				if k := p.r.opts.IdempotencyKey; k != "" {
					if err := tx.SetIdempotent(k, p.rec.Number); err != nil {
						return err
					}
				}
				if p.r.opts.InTx != nil {
					if err := p.r.opts.InTx(tx, p.rec); err != nil {
						return &inTxError{r: p.r, err: err}
					}
				}
			}
			return nil
		})
		var ie *inTxError
		if errors.Is(err, errRetry) || errors.As(err, &ie) {
			// Start over with the others; a request whose InTx refused gets its own error.
			again := deferred
			for _, p := range plans {
				if ie != nil && p.r == ie.r {
					p.r.done <- outcome{err: ie.err}
					continue
				}
				again = append(again, p.r)
			}
			pending = again
			retries++
			continue
		}
		for _, p := range plans {
			switch {
			case err != nil:
				p.r.done <- outcome{err: err}
			case p.noop:
				res := resultOf(p.rec, false)
				res.Unchanged, res.Resources, res.NewNodes, res.NewBytes = true, []string{}, 0, 0
				p.r.done <- outcome{res: res}
			default:
				p.r.done <- outcome{res: resultOf(p.rec, false)}
			}
		}
		pending = deferred
	}
}

func resultOf(rec store.RevisionRecord, replayed bool) *Result {
	r := &Result{Revision: rec.Number, Branch: rec.Branch, Time: rec.Time, Resources: rec.Resources,
		NewNodes: rec.NewNodes, NewBytes: rec.NewBytes, Replayed: replayed}
	if r.Resources == nil {
		r.Resources = []string{}
	}
	if len(rec.Parents) > 0 {
		r.Parent = rec.Parents[0]
	}
	return r
}

// plan computes the revisions a group would commit. Requests that fail (conflict, bad patch, replay) are answered
// here and left out of the plans.
func (db *DB) plan(group []*request) (plans []planned, deferred []*request, last uint64, startHeads map[string]uint64, epoch string, err error) {
	type view struct {
		branches map[string]store.BranchRecord
		revs     map[uint64]store.RevisionRecord
		replays  map[*request]store.RevisionRecord
		noops    map[*request]bool // replays of writes that changed nothing
		clock    time.Time
	}
	v := view{branches: map[string]store.BranchRecord{}, revs: map[uint64]store.RevisionRecord{}, replays: map[*request]store.RevisionRecord{}, noops: map[*request]bool{}}
	failed := map[*request]error{}
	err = db.be.View(context.Background(), func(c store.CatalogReader) error {
		var err error
		if last, err = c.LastRevision(); err != nil {
			return err
		}
		if e, _, err := c.Get(gcBucket, gcEpochKey); err != nil {
			return err
		} else {
			epoch = string(e)
		}
		v.clock = db.clock(c)
		for _, r := range group {
			if k := r.opts.IdempotencyKey; k != "" {
				if n, ok, err := c.Idempotent(k); err != nil {
					return err
				} else if ok {
					rec, err := c.Revision(n)
					if err == nil {
						v.replays[r] = rec
						if _, noop, err := c.Get(noopKeysBucket, k); err != nil {
							return err
						} else if noop {
							v.noops[r] = true
						}
						continue
					}
					if !errors.Is(err, store.ErrNotFound) {
						return err
					}
					// The revision was garbage-collected: the key no longer protects anything; commit anew.
				}
			}
			name := r.opts.branch()
			if _, ok := v.branches[name]; ok {
				continue
			}
			b, err := c.Branch(name)
			if err != nil {
				failed[r] = notFoundRef(c, "branch", name, err)
				continue
			}
			v.branches[name] = b
			if v.revs[b.Head], err = c.Revision(b.Head); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, 0, nil, "", err
	}
	startHeads = map[string]uint64{}
	for name, b := range v.branches {
		startHeads[name] = b.Head
	}
	ov := &overlay{base: db.be, nodes: map[store.Hash][]byte{}}
	f := db.forest.WithStore(ov)
	next, clock := last, v.clock
	dirty := map[string]bool{} // branches with a change planned in this group: their heads are not durable yet
	for _, r := range group {
		if rec, ok := v.replays[r]; ok {
			res := resultOf(rec, true)
			if v.noops[r] {
				res.Unchanged, res.Resources, res.NewNodes, res.NewBytes = true, []string{}, 0, 0
			}
			r.done <- outcome{res: res}
			continue
		}
		if err := failed[r]; err != nil {
			r.done <- outcome{err: err}
			continue
		}
		if err := r.ctx.Err(); err != nil {
			r.done <- outcome{err: err}
			continue
		}
		b := v.branches[r.opts.branch()]
		// fail answers r with err, unless err rests on a change of this group that is not durable yet: then r
		// waits for the next round.
		fail := func(err error) {
			if dirty[b.Name] {
				deferred = append(deferred, r)
			} else {
				r.done <- outcome{err: err}
			}
		}
		if r.opts.ExpectedHead != 0 && r.opts.ExpectedHead != b.Head {
			fail(&ConflictError{Branch: b.Name, Head: b.Head, Expected: r.opts.ExpectedHead})
			continue
		}
		head := v.revs[b.Head]
		root, err := revision.ValueFromEncoding(string(head.Root))
		if err != nil {
			fail(err)
			continue
		}
		change, extra, err := r.change(r.ctx, f, State{Rev: head, Root: root, Branch: b.Name})
		if err != nil {
			fail(err)
			continue
		}
		if change.Root == root && len(extra) == 0 {
			// Nothing changes: no empty revision. Answered once the group is durable, naming the head.
			plans = append(plans, planned{r: r, rec: head, branch: b, noop: true})
			continue
		}
		// Compress now, outside the transaction that will store them: it holds the writer lock (and, shared, the
		// file against other processes) and should do only B+tree work and the commit.
		for i := range change.Nodes {
			if change.Nodes[i].Stored == nil {
				change.Nodes[i].Stored = store.EncodeStored(change.Nodes[i].Data)
			}
		}
		if _, err := ov.PutNodes(r.ctx, change.Nodes); err != nil {
			fail(err)
			continue
		}
		touched, err := f.ChangedMembers(r.ctx, root, change.Root)
		if err != nil {
			fail(err)
			continue
		}
		next++
		if next > last+1 {
			clock = clock.Add(time.Microsecond)
		}
		rec := store.RevisionRecord{Number: next, Root: []byte(change.Root.Encoding()), Parents: append([]uint64{b.Head}, extra...),
			Branch: b.Name, Time: clock, Author: r.opts.Author, Tool: r.opts.Tool, Message: r.opts.Message, Resources: touched}
		b.Head = next
		v.branches[b.Name] = b
		v.revs[next] = rec
		dirty[b.Name] = true
		plans = append(plans, planned{r: r, rec: rec, nodes: change.Nodes, branch: b})
	}
	return plans, deferred, last, startHeads, epoch, nil
}

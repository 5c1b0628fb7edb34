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

// unchanged marks a result as a write that changed nothing: Revision stays the branch head, nothing was added, and
// no revision was made on anything (Parent 0: the head's own parent, or the head itself as a dry run had it, told
// callers something that did not happen).
func (r *Result) unchanged() *Result {
	r.Unchanged, r.Resources, r.NewNodes, r.NewBytes, r.Parent = true, []string{}, 0, 0, 0
	return r
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
	stored store.PutStats // nodes the change's tree holds that were stored before the commit (an import's)
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
	// The request is queued under db.mu, which Close takes to mark the database closed: a request is either queued
	// before the writer starts its last drain, or refused. (Queued after it, it would never be answered.)
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return outcome{err: ErrClosed}
	}
	select {
	case db.queue <- r:
	case <-ctx.Done():
		db.mu.Unlock()
		return outcome{err: ctx.Err()}
	}
	db.mu.Unlock()
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
	ctx, end := commitSpan(ctx, w)
	o := db.submit(ctx, &request{opts: w, change: fn})
	end(o.res, o.err)
	return o.res, o.err
}

// catalogOp runs a catalog-only operation (branches, labels, plans) in its own transaction, in order with writes.
func (db *DB) catalogOp(ctx context.Context, fn func(tx store.CatalogTx, now time.Time) (any, error)) (any, error) {
	o := db.submit(ctx, &request{op: fn})
	return o.val, o.err
}

// writer is the database's single writer: it takes every waiting request and commits them together. When several
// callers are active it waits a moment for more before committing (gatherer), planning each request as it arrives.
// Catalog operations run alone, in order with the commits around them.
func (db *DB) writer() {
	defer db.wg.Done()
	var g gatherer
	var carry []*request // taken from the queue, not yet run: they follow a catalog operation
	var seed *planSeed   // the catalog as the last group left it, if it committed and nothing ran since
	for {
		var idle time.Duration
		if len(carry) == 0 {
			idleStart := time.Now()
			select {
			case r := <-db.queue:
				idle = time.Since(idleStart)
				carry = append(carry, r)
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
		}
		batch := db.drain(carry)
		carry = nil
		if r := batch[0]; r.op != nil {
			seed = nil // it may move heads
			queued := db.runOp(r)
			batch[0] = nil // carry shares batch's array: a request done must not stay reachable through it
			carry = batch[1:]
			g.done(1, len(carry)+queued, 0)
			continue
		}
		// The commits before the first catalog operation make the group; the rest waits its turn.
		n := 1
		for n < len(batch) && batch[n].op == nil {
			n++
		}
		group := batch[:n]
		carry = batch[n:]
		t0 := time.Now()
		pl := db.newPlanner(seed)
		seed = nil
		if err := pl.add(group); err != nil {
			queued := len(db.queue)
			for _, r := range group {
				r.done <- outcome{err: err}
			}
			g.done(len(group), len(carry)+queued, 0)
			continue
		}
		var gathered time.Duration
		if len(carry) == 0 {
			if total, quiet, ok := g.wait(pl.n); ok {
				carry = db.gather(pl, g.expect, t0.Add(total), quiet)
				gathered = time.Since(t0)
			}
		}
		var tx time.Duration
		var queued int
		tx, queued, seed = db.commitGroup(pl, nil, idle, gathered)
		g.done(pl.n, len(carry)+queued, tx)
		// carry shares batch's array: the requests of the group, and what they hold (a 100 MB document, the output of
		// a transform), must not stay reachable through it until the next write comes.
		clear(group)
	}
}

const maxBatch = 256

// drain adds the requests already queued to batch, up to maxBatch in all.
func (db *DB) drain(batch []*request) []*request { return db.drainTo(batch, maxBatch) }

// drainTo adds the requests already queued to batch, up to limit in all.
func (db *DB) drainTo(batch []*request, limit int) []*request {
	for len(batch) < limit {
		select {
		case r := <-db.queue:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

// gather plans requests into pl as they arrive, until it holds want, none has arrived for quiet, the deadline has
// passed, a catalog operation arrives or the database is closing. It returns the requests it took from the queue
// but did not plan: a catalog operation and those after it.
func (db *DB) gather(pl *planner, want int, deadline time.Time, quiet time.Duration) (carry []*request) {
	want = min(want, maxBatch)
	t := time.NewTimer(min(quiet, time.Until(deadline)))
	defer t.Stop()
	for pl.n < want {
		select {
		case r := <-db.queue:
			got := db.drainTo([]*request{r}, max(1, want-pl.n))
			n := 0
			for n < len(got) && got[n].op == nil {
				n++
			}
			if n > 0 {
				if err := pl.add(got[:n]); err != nil {
					for _, r := range got[:n] {
						r.done <- outcome{err: err}
					}
					return got[n:]
				}
			}
			if n < len(got) {
				return got[n:]
			}
			left := time.Until(deadline)
			if left <= 0 {
				return nil
			}
			t.Reset(min(quiet, left))
		case <-t.C:
			return nil
		case <-db.closing:
			return nil
		}
	}
	return nil
}

// run carries out a batch without gathering: consecutive commits go together in one transaction; catalog
// operations run alone.
func (db *DB) run(batch []*request) {
	for len(batch) > 0 {
		if batch[0].op != nil {
			db.runOp(batch[0])
			batch = batch[1:]
			continue
		}
		n := 1
		for n < len(batch) && batch[n].op == nil {
			n++
		}
		db.commitGroup(nil, batch[:n], 0, 0)
		batch = batch[n:]
	}
}

// runOp runs a catalog operation in its own transaction. It returns how many requests were queued when it ended,
// before its caller was answered (and could queue another).
func (db *DB) runOp(r *request) (queued int) {
	var val any
	err := db.be.Update(r.ctx, func(tx store.CatalogTx) error {
		db.consumed.Store(0)
		var err error
		val, err = r.op(tx, db.clock(tx))
		return err
	})
	db.noteStorage(err)
	if err == nil {
		db.plansApplied()
	}
	queued = len(db.queue)
	r.done <- outcome{val: val, err: err}
	return queued
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
	r   *request
	rec store.RevisionRecord // the new revision, or for a no-op the head it leaves as it is
	// change is what the request built, its nodes stored with the revision and remembered once committed; nil for a
	// no-op: the write changes nothing, so no revision, but its idempotency key is recorded.
	change *revision.Change
	branch store.BranchRecord
	marks  []schemaMark // values found valid against their schemas, remembered with the revision
}

func (p *planned) noop() bool { return p.change == nil }

// commitGroup computes every request of the group on the current heads (each on top of the ones before it on the
// same branch), then writes them all in one transaction. If another process committed in between, it starts over.
// No caller is answered on the strength of anything not yet durable: an answer that depends on an earlier request
// of the same group (a conflict with its head, a patch that fails on its content, a write it makes a no-op) waits,
// and is worked out again on the committed state.
//
// pl, if not nil, is the group already planned (by the writer, as its requests arrived); otherwise pending is
// planned here. It returns the time its transactions took, how many requests were queued when the last one ended,
// before its callers were answered (the gatherer counts the callers who were waiting apart from them), and, if the
// last one committed, the catalog as it left it (the next group's seed).
func (db *DB) commitGroup(pl *planner, pending []*request, idle, gathered time.Duration) (txTime time.Duration, queued int, seed *planSeed) {
	for retries := 0; pl != nil || len(pending) > 0; pl = nil {
		if pl == nil {
			if retries == 10 {
				for _, r := range pending {
					r.done <- outcome{err: fmt.Errorf("%w: the database kept changing under this write (another process is writing heavily); retry", ErrConflict)}
				}
				return txTime, queued, nil
			}
			var err error
			if pl, err = db.plan(pending); err != nil {
				for _, r := range pending {
					r.done <- outcome{err: err}
				}
				return txTime, queued, nil
			}
		}
		plans, deferred, last, startHeads, epoch := pl.plans, pl.deferred, pl.last, pl.startHeads, pl.epoch
		schemaVersion := pl.schemas.ver()
		if len(plans) == 0 {
			pending = deferred
			continue
		}
		t1 := time.Now()
		err := db.be.Update(context.Background(), func(tx store.CatalogTx) error {
			db.consumed.Store(0)
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
			// A schema set or removed since planning (by another process, even) must be checked against.
			if v, _, err := tx.Get(schemaStateBucket, schemaVersionKey); err != nil || string(v) != schemaVersion {
				return errRetry
			}
			for name, head := range startHeads {
				b, err := tx.Branch(name)
				if err != nil || b.Head != head || b.ID != pl.branchIDs[name] {
					return errRetry
				}
			}
			// A branch that several revisions of the group move is written once, as the last of them leaves it
			// (and for any whose InTx hook runs, so that the hook sees its own revision as the head).
			lastOn := map[string]int{}
			for i := range plans {
				if !plans[i].noop() {
					lastOn[plans[i].branch.Name] = i
				}
			}
			for i := range plans {
				p := &plans[i]
				reused := false // the key named a revision since garbage-collected: it is recorded anew
				if k := p.r.opts.IdempotencyKey; k != "" {
					if n, ok, err := tx.Idempotent(k); err != nil {
						return err
					} else if ok {
						if _, err := tx.Revision(n); err == nil {
							return errRetry // committed meanwhile (another process): replay it
						}
						reused = true
					}
				}
				if p.noop() {
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
				st, err := tx.PutNodes(p.change.Nodes)
				if err != nil {
					return err
				}
				p.rec.NewNodes, p.rec.NewBytes = st.Nodes+p.r.stored.Nodes, st.StoredBytes+p.r.stored.StoredBytes
				if err := tx.AddRevision(p.rec); err != nil {
					return err
				}
				for _, m := range p.marks {
					if err := tx.Put(schemaValidBucket, m.key, []byte(m.val)); err != nil {
						return err
					}
				}
				if lastOn[p.branch.Name] == i || p.r.opts.InTx != nil {
					if err := tx.PutBranch(p.branch); err != nil {
						return err
					}
				}
				if err := tx.LogHead(p.branch.ID, p.rec.Time, p.rec.Number); err != nil {
					return err
				}
				if k := p.r.opts.IdempotencyKey; k != "" {
					if err := tx.SetIdempotent(k, p.rec.Number); err != nil {
						return err
					}
					if reused { // its first write may have changed nothing; this one did
						if err := tx.Delete(noopKeysBucket, k); err != nil {
							return err
						}
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
		txTime += time.Since(t1)
		queued = len(db.queue)
		seed = nil
		if !errors.Is(err, errRetry) {
			db.groupEvent(plans, time.Since(t1), err)
		}
		if err == nil {
			seed = pl.seed()
		}
		traceWriter(writerTrace{DB: db, Commits: len(plans), Plan: pl.took, Commit: time.Since(t1), Idle: idle, Gather: gathered, Arrived: pl.arrived})
		idle, gathered = 0, 0
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
			if ie == nil { // a refused hook is progress (its request leaves the group), not the database moving
				retries++
			}
			continue
		}
		if err == nil {
			for _, p := range plans {
				if !p.noop() {
					db.forest.Remember(p.change)
				}
			}
		}
		for _, p := range plans {
			switch {
			case err != nil:
				p.r.done <- outcome{err: err}
			case p.noop():
				p.r.done <- outcome{res: resultOf(p.rec, false).unchanged()}
			default:
				p.r.done <- outcome{res: resultOf(p.rec, false)}
			}
		}
		pending = deferred
	}
	return txTime, queued, seed
}

// groupEvent tells Events.Commit of a transaction of the writer that committed (or failed to commit) a group.
func (db *DB) groupEvent(plans []planned, took time.Duration, err error) {
	ev := CommitEvent{Writes: len(plans), Duration: took, Err: err}
	var ie *inTxError
	if err == nil {
		for i := range plans {
			if !plans[i].noop() {
				ev.Revisions++
				ev.Nodes += plans[i].rec.NewNodes
				ev.Bytes += plans[i].rec.NewBytes
			}
		}
		db.plansApplied()
	} else if errors.As(err, &ie) {
		return // nothing was committed; the group is tried again without the write whose InTx refused
	}
	db.commitEvent(ev)
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

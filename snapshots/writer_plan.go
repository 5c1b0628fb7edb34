package snapshots

import (
	"context"
	"errors"
	"time"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// planner computes the revisions a group would commit, request by request as they arrive: each on the heads as they
// will be once the requests planned before it are committed (their new nodes served from an in-memory overlay).
// Requests that fail (conflict, bad patch) or replay an earlier write are answered as they are planned, on
// committed state only: a failure that rests on a change planned in this group is deferred instead (deferred), to be
// worked out again once the group is durable.
//
// The catalog is read in one transaction per add that needs it; the first also fixes last, epoch and the clock,
// unless the planner starts from a seed: the state the writer's previous group left, as that group's transaction
// found and committed it. Another process committing between two reads, or since the seed, is caught where it is
// caught anyway: the group's transaction re-checks the last revision, the GC epoch and every head it started from,
// and the group is planned again from a fresh read. Until that check, a seeded branch is not known to be current,
// so a failure on it is not answered but deferred, like one on a branch the group changes: the caller gets it from
// a fresh read.
type planner struct {
	db         *DB
	started    bool
	last       uint64            // the last revision when planning began
	lastTime   time.Time         // the time of revision next
	seeded     map[string]bool   // branches known from the seed, not read in this group
	epoch      string            // the GC epoch when planning began
	startHeads map[string]uint64 // each branch's head as read, before this group
	branchIDs  map[string]uint64 // and its id (a branch deleted and made again at the same head is another branch)
	branches   map[string]store.BranchRecord
	revs       map[uint64]store.RevisionRecord
	ov         *overlay
	f          *revision.Forest
	schemas    *schemaSet // the schemas every request is checked against (their version is checked at commit)
	schemasOK  bool       // schemas is the catalog's as of a read in this group (not only the seed's): see fail in one
	next       uint64
	clock      time.Time
	dirty      map[string]bool // branches with a change planned in this group: their heads are not durable yet
	keys       map[string]bool // idempotency keys of the requests planned in this group
	plans      []planned
	deferred   []*request
	n          int           // requests added
	took       time.Duration // time spent planning
	begun      time.Time     // the first add's start
	arrived    time.Duration // the last add's start, after begun: when the last request arrived
}

// planSeed is the catalog as the writer's last group left it, as far as the writer's planning needs it.
type planSeed struct {
	last     uint64
	lastTime time.Time
	epoch    string
	branches map[string]store.BranchRecord
	revs     map[uint64]store.RevisionRecord // each branch's head
	schemas  *schemaSet
}

// prepareNodes hashes and compresses nodes for the database's backend (store.PrepareNodes), ahead of the write
// transaction that stores them.
func (db *DB) prepareNodes(ns []store.Node) { store.PrepareNodes(ns, db.be.NodeCodec()) }

// newPlanner returns a planner that reads the catalog, or, given a seed, starts from it.
func (db *DB) newPlanner(seed *planSeed) *planner {
	ov := &overlay{base: db.be, nodes: map[store.Hash][]byte{}}
	p := &planner{db: db, startHeads: map[string]uint64{}, branchIDs: map[string]uint64{}, branches: map[string]store.BranchRecord{},
		revs: map[uint64]store.RevisionRecord{}, ov: ov,
		f: db.forest.WithStore(ov).WithPrepare(db.prepareNodes), dirty: map[string]bool{},
		keys: map[string]bool{}, seeded: map[string]bool{}}
	if seed != nil {
		p.started, p.last, p.next, p.lastTime, p.epoch = true, seed.last, seed.last, seed.lastTime, seed.epoch
		p.schemas = seed.schemas
		p.clock = clockAfter(db.now().UTC(), seed.lastTime)
		for name, b := range seed.branches {
			p.branches[name], p.revs[b.Head], p.seeded[name] = b, seed.revs[b.Head], true
		}
	}
	return p
}

// clockAfter is now, or just after last if now is not later (clock).
func clockAfter(now, last time.Time) time.Time {
	if !now.After(last) {
		return last.Add(time.Microsecond)
	}
	return now
}

// seed returns the catalog as it is once this planner's group has committed.
func (p *planner) seed() *planSeed {
	s := &planSeed{last: p.next, lastTime: p.lastTime, epoch: p.epoch, branches: map[string]store.BranchRecord{},
		revs: map[uint64]store.RevisionRecord{}, schemas: p.schemas}
	for name, b := range p.branches {
		s.branches[name], s.revs[b.Head] = b, p.revs[b.Head]
	}
	return s
}

// plan computes the revisions a group would commit (planner.add on a new planner, reading the catalog).
func (db *DB) plan(group []*request) (*planner, error) {
	p := db.newPlanner(nil)
	if err := p.add(group); err != nil {
		return nil, err
	}
	return p, nil
}

// add plans rs after the requests already planned. On an error reading the catalog it returns the error and has
// answered none of rs; the requests planned before are unaffected.
func (p *planner) add(rs []*request) error {
	t0 := time.Now()
	if p.begun.IsZero() {
		p.begun = t0
	}
	p.arrived = t0.Sub(p.begun)
	defer func() { p.took += time.Since(t0) }()
	db := p.db
	replays := map[*request]*Result{}
	failed := map[*request]error{}
	// Later requests on a branch already read, without an idempotency key, need nothing from the catalog.
	read := !p.started
	for _, r := range rs {
		name := r.opts.branch()
		b, ok := p.branches[name]
		if !ok || r.opts.IdempotencyKey != "" {
			read = true
		}
		if _, seen := p.startHeads[name]; ok && !seen {
			p.startHeads[name], p.branchIDs[name] = b.Head, b.ID // a seeded branch, first used: its head before this group
		}
	}
	var err error
	readCatalog := func(c store.CatalogReader) error {
		if !p.started {
			last, err := c.LastRevision()
			if err != nil {
				return err
			}
			e, _, err := c.Get(gcBucket, gcEpochKey)
			if err != nil {
				return err
			}
			p.last, p.epoch, p.clock = last, string(e), db.now().UTC()
			if p.schemas, err = db.loadSchemas(c); err != nil {
				return err
			}
			p.schemasOK = true
			// As clock does: a time later than every revision's.
			if last > 0 {
				if rec, err := c.Revision(last); err == nil {
					p.lastTime, p.clock = rec.Time, clockAfter(p.clock, rec.Time)
				}
			}
		}
		if !p.schemasOK {
			v, _, err := c.Get(schemaStateBucket, schemaVersionKey)
			if err != nil {
				return err
			}
			p.schemasOK = string(v) == p.schemas.ver()
		}
		for _, r := range rs {
			if k := r.opts.IdempotencyKey; k != "" {
				if res, err := replayOf(c, k); err != nil {
					return err
				} else if res != nil {
					replays[r] = res
					continue
				}
			}
			name := r.opts.branch()
			if _, ok := p.branches[name]; ok {
				continue
			}
			b, err := c.Branch(name)
			if err != nil {
				failed[r] = notFoundRef(c, "branch", name, err)
				continue
			}
			rev, err := c.Revision(b.Head)
			if err != nil {
				return err
			}
			p.branches[name], p.revs[b.Head], p.startHeads[name], p.branchIDs[name] = b, rev, b.Head, b.ID
		}
		return nil
	}
	if read {
		err = db.be.View(context.Background(), readCatalog)
	}
	if err != nil {
		return err
	}
	if !p.started {
		p.started, p.next = true, p.last
	}
	p.n += len(rs)
	for _, r := range rs {
		if res, ok := replays[r]; ok {
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
		if k := r.opts.IdempotencyKey; k != "" && p.keys[k] {
			// A retry of a request planned in this group: once that one is durable, this one replays it.
			p.deferred = append(p.deferred, r)
			continue
		}
		p.one(r)
	}
	return nil
}

// one plans r on its branch as the group has left it.
func (p *planner) one(r *request) {
	b := p.branches[r.opts.branch()]
	// fail answers r with err, unless err rests on a change of this group that is not durable yet: then r
	// waits for the next round.
	fail := func(err error) {
		// A refusal by a schema of the seed's, not read again in this group, waits too (found in review: another
		// process's schema rm or set left them stale, and a write on a branch read fresh was refused under a schema
		// no longer there).
		var se *SchemaError
		if p.dirty[b.Name] || p.seeded[b.Name] || (!p.schemasOK && errors.As(err, &se)) {
			p.deferred = append(p.deferred, r)
		} else {
			r.done <- outcome{err: err}
		}
	}
	if r.opts.ExpectedHead != 0 && r.opts.ExpectedHead != b.Head {
		fail(&ConflictError{Branch: b.Name, Head: b.Head, Expected: r.opts.ExpectedHead})
		return
	}
	head := p.revs[b.Head]
	root, err := revision.ValueFromEncoding(string(head.Root))
	if err != nil {
		fail(err)
		return
	}
	change, extra, err := r.change(r.ctx, p.f, State{Rev: head, Root: root, Branch: b.Name})
	if err != nil {
		fail(err)
		return
	}
	if change.Root == root && len(extra) == 0 {
		// Nothing changes: no empty revision. Answered once the group is durable, naming the head.
		p.plans = append(p.plans, planned{r: r, rec: head, branch: b})
		p.keep(r)
		return
	}
	// Compress now (what the forest did not hand to prepareNodes while it built them), outside the transaction
	// that will store them: it holds the writer lock (and, shared, the file against other processes) and should do
	// only B+tree work and the commit.
	p.db.prepareNodes(change.Nodes)
	if _, err := p.ov.PutNodes(r.ctx, change.Nodes); err != nil {
		fail(err)
		return
	}
	touched, err := p.f.ChangedMembers(r.ctx, root, change.Root)
	if err != nil {
		fail(err)
		return
	}
	marks, err := p.db.checkWrite(r.ctx, p.f, p.schemas, b.Name, root, change.Root, touched)
	if err != nil {
		fail(err)
		return
	}
	p.next++
	if p.next > p.last+1 {
		p.clock = p.clock.Add(time.Microsecond)
	}
	if !p.clock.After(b.Created) { // the branch's head log begins at its creation: stay after it
		p.clock = b.Created.Add(time.Microsecond)
	}
	p.lastTime = p.clock
	rec := store.RevisionRecord{Number: p.next, Root: []byte(change.Root.Encoding()), Parents: append([]uint64{b.Head}, extra...),
		Branch: b.Name, Time: p.clock, Author: r.opts.Author, Tool: r.opts.Tool, Message: r.opts.Message, Resources: touched}
	b.Head = p.next
	p.branches[b.Name] = b
	p.revs[p.next] = rec
	p.dirty[b.Name] = true
	p.plans = append(p.plans, planned{r: r, rec: rec, change: change, branch: b, marks: marks})
	p.keep(r)
}

// keep notes r's idempotency key as planned in this group.
func (p *planner) keep(r *request) {
	if k := r.opts.IdempotencyKey; k != "" {
		p.keys[k] = true
	}
}

// replayOf is the answer to a retry of the write that recorded idempotency key k: its revision, marked replayed (and
// unchanged if it changed nothing), or nil if no write recorded k or its revision was garbage-collected (then the key
// no longer protects anything, and the write commits anew).
func replayOf(c store.CatalogReader, k string) (*Result, error) {
	n, ok, err := c.Idempotent(k)
	if err != nil || !ok {
		return nil, err
	}
	rec, err := c.Revision(n)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	res := resultOf(rec, true)
	if _, noop, err := c.Get(noopKeysBucket, k); err != nil {
		return nil, err
	} else if noop {
		res.unchanged()
	}
	return res, nil
}

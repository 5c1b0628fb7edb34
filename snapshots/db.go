// Package snapshots is Strata's versioned database: a history of immutable revisions of a JSON object (the root,
// whose members are the resources), with branches, snapshot labels and time travel. It sits on a store.Backend (a node
// store and a catalog committed together) and package revision's trees.
//
// Every change is a new revision; nothing is edited in place. Branch and snapshot operations and reverts write no
// nodes. Writes to a database go through one writer goroutine that commits every waiting request in one transaction
// (group commit), each as its own revision.
package snapshots

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// Main is the branch every database has from its creation.
const Main = "main"

// Options configures a DB. The zero value is usable.
type Options struct {
	// Forest options (node cache size).
	Forest *revision.Options
	// Now returns the current time; tests set it. Defaults to time.Now.
	Now func() time.Time
	// Creator is recorded as the author of the database's first revision.
	Creator string
	// Events, when set, are told what the database does (events.go): commits, plans.
	Events Events

	name string // the database's name in its Dir, for Events
}

// DB is one versioned database. It is safe for concurrent use.
type DB struct {
	be     store.Backend
	forest *revision.Forest
	now    func() time.Time

	queue   chan *request
	closing chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	closed  bool

	// Schemas (schema.go): the set last loaded from the catalog, and the values known to satisfy them.
	schemaMu sync.Mutex
	schemas  *schemaSet
	valid    validCache
	// schemaNoMemory makes every check start from nothing known valid (tests and benchmarks of whole checks).
	schemaNoMemory atomic.Bool
	wholeChecks    atomic.Int64 // writes checked whole (nothing known valid about the value replaced), for tests
	name           string       // in its Dir
	events         Events
	// failStop is the storage failure (store.ErrFailStop) of the last write, nil once one succeeds (Dir.Ready).
	failStop atomic.Pointer[error]
	// consumed counts the plans the writer's current transaction marks applied (Events.Plan, once it commits).
	consumed atomic.Int32
}

// Open opens a database on a backend, creating its first revision (an empty root on branch main) if the backend
// is empty. The DB owns the backend and closes it.
func Open(ctx context.Context, be store.Backend, opts *Options) (*DB, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	db := &DB{be: be, forest: revision.New(be, o.Forest), now: o.Now, queue: make(chan *request, 256), closing: make(chan struct{}),
		name: o.name, events: o.Events}
	err := be.Update(ctx, func(tx store.CatalogTx) error {
		last, err := tx.LastRevision()
		if err != nil || last > 0 {
			return err
		}
		now := o.Now().UTC()
		id, err := tx.NextID()
		if err != nil {
			return err
		}
		rec := store.RevisionRecord{Number: 1, Root: []byte(revision.EmptyObject.Encoding()), Branch: Main, Time: now,
			Author: o.Creator, Tool: "create_database", Message: "create database"}
		if err := tx.AddRevision(rec); err != nil {
			return err
		}
		if err := tx.PutBranch(store.BranchRecord{Name: Main, ID: id, Head: 1, Base: 1, Creator: o.Creator, Created: now}); err != nil {
			return err
		}
		return tx.LogHead(id, now, 1)
	})
	if err != nil {
		return nil, err
	}
	db.wg.Add(1)
	go db.writer()
	return db, nil
}

// Close stops the writer (after the requests already queued) and closes the backend.
func (db *DB) Close() error {
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return nil
	}
	db.closed = true
	close(db.closing)
	db.mu.Unlock()
	db.wg.Wait()
	return db.be.Close()
}

// Forest returns the trees of this database, for reads of values it returned.
func (db *DB) Forest() *revision.Forest { return db.forest }

// Ref names a state of the database for a read. The zero Ref is the head of main.
type Ref struct {
	Revision uint64     // a revision number
	Snapshot string     // a snapshot label
	Branch   string     // a branch (default main); with At, the branch as it was at that instant
	At       *time.Time // with Branch: any instant, year 1 included (nil: no time)
	Name     string     // a snapshot or branch name, whichever exists (they share one namespace)
}

func (r Ref) String() string {
	switch {
	case r.Revision > 0:
		return strconv.FormatUint(r.Revision, 10)
	case r.Snapshot != "":
		return r.Snapshot
	case r.Name != "":
		return r.Name
	case r.At != nil:
		return r.branch() + "@" + r.At.Format(time.RFC3339Nano)
	}
	return r.branch()
}

func (r Ref) branch() string {
	if r.Branch == "" {
		return Main
	}
	return r.Branch
}

// ThroughBranch is the branch a state named by the ref is read through, when the ref alone says (a branch, a
// BRANCH@TIME, or nothing: main); ok is false for a revision or snapshot (no branch) and for a Name, which only
// the catalog tells apart. A front end names the branch it answered from this, without reading the catalog again.
func (r Ref) ThroughBranch() (branch string, ok bool) {
	if r.Revision != 0 || r.Snapshot != "" || r.Name != "" {
		return "", false
	}
	return r.branch(), true
}

// Validate checks that the ref's fields do not contradict each other.
func (r Ref) Validate() error {
	n := 0
	for _, set := range []bool{r.Revision > 0, r.Snapshot != "", r.Name != ""} {
		if set {
			n++
		}
	}
	if n > 1 || (n == 1 && (r.Branch != "" || r.At != nil)) {
		return invalid("a ref names one state: give a revision, a snapshot, or a branch (optionally with a time), not several")
	}
	return nil
}

// ParseRef parses the command-line form of a ref: a revision number, a snapshot or branch name, or BRANCH@TIMESTAMP
// (RFC 3339).
func ParseRef(s string) (Ref, error) {
	if s == "" {
		return Ref{}, nil
	}
	if allDigits.MatchString(s) {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || n == 0 {
			return Ref{}, invalid("revision %q is not a revision number (they start at 1)", s)
		}
		return Ref{Revision: n}, nil
	}
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		t, err := time.Parse(time.RFC3339Nano, s[i+1:])
		if err != nil {
			return Ref{}, invalid("%q: the part after @ must be an RFC 3339 time such as 2026-11-30T14:20:00Z", s)
		}
		return Ref{Branch: s[:i], At: &t}, nil
	}
	return Ref{Name: s}, nil
}

// ParseRefWholeSecond is ParseRef for a ref a person typed or copied from a listing that shows times to the second
// (strata log, the review page): a BRANCH@TIME without fractions of a second stands for the whole second, so that
// the time shown for a revision names that revision and not the one before it (docs/design.md §5).
func ParseRefWholeSecond(s string) (Ref, error) {
	ref, err := ParseRef(s)
	if err != nil {
		return ref, err
	}
	if i := strings.LastIndexByte(s, '@'); i >= 0 && ref.At != nil && !strings.ContainsAny(s[i:], ".,") {
		end := ref.At.Add(time.Second - time.Nanosecond)
		ref.At = &end
	}
	return ref, nil
}

// WholeSecondError rewords a refusal of a ref parsed by ParseRefWholeSecond so that it names the time as it was
// typed, without the fraction that stands for the rest of the second.
func WholeSecondError(err error) error {
	var nf *NotFoundError
	if !errors.As(err, &nf) || nf.What != "revision" || !strings.Contains(nf.Name, wholeSecondFraction) {
		return err
	}
	cp := *nf
	cp.Name = strings.Replace(nf.Name, wholeSecondFraction, "", 1)
	cp.Hint = strings.Replace(nf.Hint, wholeSecondFraction, "", 1)
	return &cp
}

// wholeSecondFraction is what ParseRefWholeSecond adds to a time given to the second, as RFC 3339 shows it.
const wholeSecondFraction = ".999999999"

// State is what a ref resolved to.
type State struct {
	Rev    store.RevisionRecord
	Root   revision.Value
	Branch string // the branch the ref went through, if any
}

// Resolve finds the revision a ref names.
func (db *DB) Resolve(ctx context.Context, ref Ref) (State, error) {
	if err := ref.Validate(); err != nil {
		return State{}, err
	}
	var st State
	err := db.be.View(ctx, func(c store.CatalogReader) error {
		var err error
		st, err = resolve(c, ref)
		return err
	})
	return st, err
}

func resolve(c store.CatalogReader, ref Ref) (State, error) {
	var n uint64
	var branch string
	switch {
	case ref.Revision > 0:
		n = ref.Revision
	case ref.Snapshot != "":
		l, err := c.Label(ref.Snapshot)
		if err != nil {
			if _, berr := c.Branch(ref.Snapshot); berr == nil && errors.Is(err, store.ErrNotFound) {
				return State{}, &NotFoundError{What: "snapshot", Name: ref.Snapshot,
					Hint: fmt.Sprintf("%s is a branch, not a snapshot: name it as a branch", ref.Snapshot)}
			}
			return State{}, notFoundRef(c, "snapshot", ref.Snapshot, err)
		}
		n = l.Revision
	case ref.Name != "":
		if l, err := c.Label(ref.Name); err == nil {
			n = l.Revision
		} else if !errors.Is(err, store.ErrNotFound) {
			return State{}, err
		} else {
			b, err := c.Branch(ref.Name)
			if err != nil {
				return State{}, notFoundRef(c, "branch or snapshot", ref.Name, err)
			}
			n, branch = b.Head, b.Name
		}
	default:
		branch = ref.branch()
		b, err := c.Branch(branch)
		if err != nil {
			if _, lerr := c.Label(branch); lerr == nil && errors.Is(err, store.ErrNotFound) {
				// NAME@TIME reads a branch's head log; a snapshot names one revision for ever (a review's
				// suspicion: this said only that branch v1 was not found).
				hint := fmt.Sprintf("%s is a snapshot, not a branch: a snapshot names one revision, so read it without a time (%s)", branch, branch)
				if ref.At == nil {
					hint = fmt.Sprintf("%s is a snapshot, not a branch: name it as a snapshot", branch)
				}
				return State{}, &NotFoundError{What: "branch", Name: branch, Hint: hint}
			}
			return State{}, notFoundRef(c, "branch", branch, err)
		}
		n = b.Head
		if ref.At != nil {
			rev, ok, err := c.HeadAt(b.ID, *ref.At)
			if err != nil {
				return State{}, err
			}
			if !ok {
				return State{}, &NotFoundError{What: "revision", Name: ref.String(),
					Hint: fmt.Sprintf("branch %s did not exist yet at %s (it was created %s)", branch, ref.At.UTC().Format(time.RFC3339Nano), b.Created.UTC().Format(time.RFC3339Nano))}
			}
			n = rev
		}
	}
	rec, err := c.Revision(n)
	if errors.Is(err, store.ErrNotFound) {
		last, _ := c.LastRevision()
		return State{}, &NotFoundError{What: "revision", Name: strconv.FormatUint(n, 10), Hint: fmt.Sprintf("revisions run from 1 to %d", last)}
	}
	if err != nil {
		return State{}, err
	}
	root, err := revision.ValueFromEncoding(string(rec.Root))
	if err != nil {
		return State{}, fmt.Errorf("revision %d: %w", n, err)
	}
	return State{Rev: rec, Root: root, Branch: branch}, nil
}

func notFoundRef(c store.CatalogReader, what, name string, err error) error {
	if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	var names []string
	if what != "snapshot" {
		bs, _ := c.Branches()
		for _, b := range bs {
			names = append(names, b.Name)
		}
	}
	if what != "branch" {
		ls, _ := c.Labels()
		for _, l := range ls {
			names = append(names, l.Name)
		}
	}
	return &NotFoundError{What: what, Name: name, DidYouMean: closest(name, names)}
}

// Get reads the value at ptr inside a resource at a ref.
func (db *DB) Get(ctx context.Context, ref Ref, resource string, ptr revision.Pointer) (revision.Value, State, error) {
	st, err := db.Resolve(ctx, ref)
	if err != nil {
		return revision.Value{}, st, err
	}
	v, err := db.resource(ctx, st, resource)
	if err != nil {
		return revision.Value{}, st, err
	}
	if len(ptr) > 0 {
		v, err = db.forest.Get(ctx, v, ptr)
	}
	return v, st, err
}

// resource returns a resource's value in a state.
func (db *DB) resource(ctx context.Context, st State, name string) (revision.Value, error) {
	if err := ValidResourceName(name); err != nil {
		return revision.Value{}, err
	}
	return resourceIn(ctx, db.forest, st, name, fmt.Sprintf("not in revision %d", st.Rev.Number))
}

// ResourceSummary describes one resource at a state.
type ResourceSummary struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Size  uint64 `json:"size"`  // bytes as compact JSON
	Count uint64 `json:"count"` // members or elements (0 for scalars)
}

// Resources lists the resources at a state, in name order.
func (db *DB) Resources(ctx context.Context, st State) ([]ResourceSummary, error) {
	out := []ResourceSummary{}
	err := db.forest.Members(ctx, st.Root, func(name string, v revision.Value) error {
		out = append(out, ResourceSummary{Name: name, Kind: v.Kind().String(), Size: v.Size(), Count: v.Len()})
		return nil
	})
	return out, err
}

// Branches lists the branches.
func (db *DB) Branches(ctx context.Context) ([]store.BranchRecord, error) {
	var out []store.BranchRecord
	err := db.be.View(ctx, func(c store.CatalogReader) error {
		var err error
		out, err = c.Branches()
		return err
	})
	return out, err
}

// Snapshots lists the snapshot labels.
func (db *DB) Snapshots(ctx context.Context) ([]store.LabelRecord, error) {
	var out []store.LabelRecord
	err := db.be.View(ctx, func(c store.CatalogReader) error {
		var err error
		out, err = c.Labels()
		return err
	})
	return out, err
}

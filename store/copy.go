package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
)

// Copying a database whole from one backend to another (strata db copy: a data directory to PostgreSQL and back).
// CatalogReader looks entries up by key; a copy must also list what it cannot list (the head log, idempotency keys,
// the named buckets, the id counter), and write revision records with the numbers they have, gaps left by garbage
// collection included, which AddRevision refuses. The catalogs of every backend (bbolt, PostgreSQL, memory)
// implement both interfaces below.

// CatalogDumper lists a catalog whole. The catalog readers of View implement it.
type CatalogDumper interface {
	// HeadLog calls fn for every entry of every branch's head log, by branch id, then time.
	HeadLog(fn func(branchID uint64, t time.Time, rev uint64) error) error
	// IdempotencyKeys calls fn for every idempotency key and the revision it committed, in key order.
	IdempotencyKeys(fn func(key string, rev uint64) error) error
	// Buckets lists the named buckets (Get, Scan) that hold at least one key, in name order.
	Buckets() ([]string, error)
	// LastID is the last id NextID gave (0 for none).
	LastID() (uint64, error)
}

// CatalogLoader writes what only a copy writes. The catalog transactions of Update implement it.
type CatalogLoader interface {
	// LoadRevision stores a revision record as it is. Its number must be above the last revision's; unlike
	// AddRevision, numbers may skip (the revisions garbage collection removed from the original).
	LoadRevision(r RevisionRecord) error
	// RaiseID makes NextID give ids above id from now on (it never lowers the counter).
	RaiseID(id uint64) error
}

// ErrCannotCopy is returned for a backend whose catalog cannot be listed or loaded whole.
var ErrCannotCopy = errors.New("this storage backend cannot be copied whole")

// bbolt.

func (c *boltCat) HeadLog(fn func(uint64, time.Time, uint64) error) error {
	bk := c.bucket(bucketRevTS)
	if bk == nil {
		return nil
	}
	return bk.ForEach(func(k, v []byte) error {
		if len(k) != 16 {
			return fmt.Errorf("%w: head log key of %d bytes", ErrCorruptNode, len(k))
		}
		rev, _, err := getRev(k, v)
		if err != nil {
			return err
		}
		ns := int64(binary.BigEndian.Uint64(k[8:]) ^ 1<<63)
		return fn(binary.BigEndian.Uint64(k[:8]), time.Unix(0, ns).UTC(), rev)
	})
}

func (c *boltCat) IdempotencyKeys(fn func(string, uint64) error) error {
	bk := c.bucket(bucketIdem)
	if bk == nil {
		return nil
	}
	return bk.ForEach(func(k, v []byte) error {
		rev, _, err := getRev(k, v)
		if err != nil {
			return err
		}
		return fn(string(k), rev)
	})
}

func (c *boltCat) Buckets() ([]string, error) {
	parent := c.bucket(bucketKV)
	var out []string
	if parent == nil {
		return out, nil
	}
	err := parent.ForEach(func(k, v []byte) error {
		if v == nil { // a nested bucket
			if bk := parent.Bucket(k); bk != nil {
				if first, _ := bk.Cursor().First(); first == nil {
					return nil // emptied
				}
				out = append(out, string(k))
			}
		}
		return nil
	})
	return out, err
}

func (c *boltCat) LastID() (uint64, error) {
	bk := c.bucket(bucketMeta)
	if bk == nil {
		return 0, nil
	}
	return bk.Sequence(), nil
}

func (c *boltCat) LoadRevision(r RevisionRecord) error {
	last, err := c.LastRevision()
	if err != nil {
		return err
	}
	if r.Number <= last {
		return errOutOfOrder(r.Number, last)
	}
	return c.putRevision(r)
}

func (c *boltCat) RaiseID(id uint64) error {
	bk, err := c.wbucket(bucketMeta)
	if err != nil {
		return err
	}
	if bk.Sequence() >= id {
		return nil
	}
	return bk.SetSequence(id)
}

// PostgreSQL.

func (c *pgCat) HeadLog(fn func(uint64, time.Time, uint64) error) error {
	type entry struct{ branch, t, rev int64 }
	after := entry{branch: -1 << 63, t: -1 << 63}
	for {
		var page []entry
		err := c.query("listing the head log",
			"SELECT branch, t, rev FROM strata_headlog WHERE db = $1 AND (branch, t) > ($2, $3) ORDER BY branch, t LIMIT $4",
			[]any{c.d.id, after.branch, after.t, pgPage * 8}, func(r pgx.Rows) error {
				var e entry
				if err := r.Scan(&e.branch, &e.t, &e.rev); err != nil {
					return err
				}
				page = append(page, e)
				return nil
			})
		if err != nil {
			return err
		}
		for _, e := range page {
			if err := fn(uint64(e.branch), time.Unix(0, e.t).UTC(), uint64(e.rev)); err != nil {
				return err
			}
		}
		if len(page) < pgPage*8 {
			return nil
		}
		after = page[len(page)-1]
	}
}

func (c *pgCat) IdempotencyKeys(fn func(string, uint64) error) error {
	after := []byte{}
	for {
		type kr struct {
			key []byte
			rev int64
		}
		var page []kr
		err := c.query("listing idempotency keys", "SELECT key, rev FROM strata_idem WHERE db = $1 AND key > $2 ORDER BY key LIMIT $3",
			[]any{c.d.id, after, pgPage * 8}, func(r pgx.Rows) error {
				var e kr
				if err := r.Scan(&e.key, &e.rev); err != nil {
					return err
				}
				page = append(page, e)
				return nil
			})
		if err != nil {
			return err
		}
		for _, e := range page {
			if err := fn(string(e.key), uint64(e.rev)); err != nil {
				return err
			}
		}
		if len(page) < pgPage*8 {
			return nil
		}
		after = page[len(page)-1].key
	}
}

func (c *pgCat) Buckets() ([]string, error) {
	out := []string{}
	err := c.query("listing buckets", "SELECT DISTINCT bucket FROM strata_kv WHERE db = $1 ORDER BY bucket", []any{c.d.id},
		func(r pgx.Rows) error {
			var b []byte
			if err := r.Scan(&b); err != nil {
				return err
			}
			out = append(out, string(b))
			return nil
		})
	return out, err
}

func (c *pgCat) LastID() (uint64, error) {
	if c.write {
		return c.nextID, nil
	}
	return c.counter("the id counter", "next_id")
}

func (c *pgCat) LoadRevision(r RevisionRecord) error {
	if r.Number <= c.last {
		return errOutOfOrder(r.Number, c.last)
	}
	return c.putRevision(r)
}

func (c *pgCat) RaiseID(id uint64) error {
	if id > c.nextID {
		c.nextID = id
		c.wrote = true
	}
	return nil
}

// Memory.

func (t *memTx) HeadLog(fn func(uint64, time.Time, uint64) error) error {
	ids := make([]uint64, 0, len(t.c.headLog))
	for id := range t.c.headLog {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		for _, e := range t.c.headLog[id] {
			if err := fn(id, e.t, e.rev); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *memTx) IdempotencyKeys(fn func(string, uint64) error) error {
	keys := make([]string, 0, len(t.c.idem))
	for k := range t.c.idem {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := fn(k, t.c.idem[k]); err != nil {
			return err
		}
	}
	return nil
}

func (t *memTx) Buckets() ([]string, error) {
	out := []string{}
	for b, m := range t.c.buckets {
		if len(m) > 0 {
			out = append(out, b)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (t *memTx) LastID() (uint64, error) { return t.c.nextID, nil }

func (t *memTx) LoadRevision(r RevisionRecord) error {
	last := uint64(len(t.c.revs))
	if r.Number <= last {
		return errOutOfOrder(r.Number, last)
	}
	for uint64(len(t.c.revs)) < r.Number-1 {
		t.c.revs = append(t.c.revs, RevisionRecord{}) // a hole, as DeleteRevision leaves
	}
	t.c.revs = append(t.c.revs, r)
	return nil
}

func (t *memTx) RaiseID(id uint64) error {
	t.c.nextID = max(t.c.nextID, id)
	return nil
}

var (
	_ CatalogDumper = (*boltCat)(nil)
	_ CatalogLoader = (*boltCat)(nil)
	_ CatalogDumper = (*pgCat)(nil)
	_ CatalogLoader = (*pgCat)(nil)
	_ CatalogDumper = (*memTx)(nil)
	_ CatalogLoader = (*memTx)(nil)
)

// CatalogDump is a whole catalog, as DumpCatalog read it: everything but the nodes.
type CatalogDump struct {
	Revisions []RevisionRecord // in number order; numbers may skip
	Branches  []BranchRecord
	Labels    []LabelRecord
	HeadLog   []HeadLogEntry
	Idem      map[string]uint64
	Buckets   map[string]map[string][]byte
	LastID    uint64
}

// HeadLogEntry is one entry of a branch's head log.
type HeadLogEntry struct {
	Branch uint64
	Time   time.Time
	Rev    uint64
}

// DumpCatalog reads a whole catalog, in the one consistent view c is. It fails with ErrCannotCopy if c cannot list
// everything.
func DumpCatalog(c CatalogReader) (*CatalogDump, error) {
	dc, ok := c.(CatalogDumper)
	if !ok {
		return nil, fmt.Errorf("%w (%T lists no head log)", ErrCannotCopy, c)
	}
	d := &CatalogDump{Idem: map[string]uint64{}, Buckets: map[string]map[string][]byte{}}
	last, err := c.LastRevision()
	if err != nil {
		return nil, err
	}
	if err := c.Revisions(last, func(r RevisionRecord) bool {
		d.Revisions = append(d.Revisions, r)
		return true
	}); err != nil {
		return nil, err
	}
	for i, j := 0, len(d.Revisions)-1; i < j; i, j = i+1, j-1 {
		d.Revisions[i], d.Revisions[j] = d.Revisions[j], d.Revisions[i]
	}
	if d.Branches, err = c.Branches(); err != nil {
		return nil, err
	}
	if d.Labels, err = c.Labels(); err != nil {
		return nil, err
	}
	if err := dc.HeadLog(func(b uint64, t time.Time, rev uint64) error {
		d.HeadLog = append(d.HeadLog, HeadLogEntry{b, t, rev})
		return nil
	}); err != nil {
		return nil, err
	}
	if err := dc.IdempotencyKeys(func(k string, rev uint64) error {
		d.Idem[k] = rev
		return nil
	}); err != nil {
		return nil, err
	}
	names, err := dc.Buckets()
	if err != nil {
		return nil, err
	}
	for _, b := range names {
		m := map[string][]byte{}
		if err := c.Scan(b, func(k string, v []byte) bool {
			m[k] = v
			return true
		}); err != nil {
			return nil, err
		}
		d.Buckets[b] = m
	}
	if d.LastID, err = dc.LastID(); err != nil {
		return nil, err
	}
	return d, nil
}

// LoadCatalog writes a dumped catalog into an empty one, in the transaction tx: the same revision records (with
// their numbers), branches (with their ids), labels, head log, idempotency keys, buckets and id counter. The nodes
// are the caller's to put first. It fails with ErrCannotCopy if tx cannot load records as they are, and refuses a
// catalog that is not empty.
func LoadCatalog(tx CatalogTx, d *CatalogDump) error {
	lc, ok := tx.(CatalogLoader)
	if !ok {
		return fmt.Errorf("%w (%T cannot load records)", ErrCannotCopy, tx)
	}
	last, err := tx.LastRevision()
	if err != nil {
		return err
	}
	if last != 0 {
		return fmt.Errorf("loading a catalog into one that already has %d revisions", last)
	}
	for _, r := range d.Revisions {
		if err := lc.LoadRevision(r); err != nil {
			return err
		}
	}
	for _, b := range d.Branches {
		if err := tx.PutBranch(b); err != nil {
			return err
		}
	}
	for _, l := range d.Labels {
		if err := tx.PutLabel(l); err != nil {
			return err
		}
	}
	for _, e := range d.HeadLog {
		if err := tx.LogHead(e.Branch, e.Time, e.Rev); err != nil {
			return err
		}
	}
	for k, rev := range d.Idem {
		if err := tx.SetIdempotent(k, rev); err != nil {
			return err
		}
	}
	for b, m := range d.Buckets {
		for k, v := range m {
			if err := tx.Put(b, k, v); err != nil {
				return err
			}
		}
	}
	return lc.RaiseID(d.LastID)
}

package store

import (
	"bytes"
	"slices"
	"sync"
)

// revCache keeps decoded revision records, keyed by number, beside the exact stored bytes they were decoded from.
// Decoding a record's JSON is most of resolving a revision (~6 µs of a ~12 µs point read); a hit costs a comparison
// of the stored bytes instead. Comparing, not trusting the number, keeps it right whatever happens to the file
// behind it: another process's GC deleting a revision (the key is gone: a miss), a restored or replaced file (other
// bytes: a miss). Two generations approximate LRU: hits in the old one move to the new one, and when the new one is
// full it becomes the old one.
type revCache struct {
	mu       sync.Mutex
	cur, old map[uint64]*revEntry
}

type revEntry struct {
	raw []byte
	rec RevisionRecord
}

const revCacheGen = 4096 // records per generation (a record is a few hundred bytes)

// get returns the record cached for n if it was decoded from raw (the bytes stored now; nil: none).
func (c *revCache) get(n uint64, raw []byte) (RevisionRecord, bool) {
	if raw == nil {
		return RevisionRecord{}, false
	}
	c.mu.Lock()
	e := c.cur[n]
	if e == nil {
		if e = c.old[n]; e != nil {
			c.addLocked(n, e)
		}
	}
	c.mu.Unlock()
	if e == nil || !bytes.Equal(e.raw, raw) {
		return RevisionRecord{}, false
	}
	return e.rec.clone(), true
}

func (c *revCache) put(n uint64, raw []byte, rec RevisionRecord) {
	e := &revEntry{raw: bytes.Clone(raw), rec: rec.clone()}
	c.mu.Lock()
	c.addLocked(n, e)
	c.mu.Unlock()
}

func (c *revCache) addLocked(n uint64, e *revEntry) {
	if c.cur == nil || len(c.cur) >= revCacheGen {
		c.old, c.cur = c.cur, make(map[uint64]*revEntry, revCacheGen)
	}
	c.cur[n] = e
}

// clone copies the record's slices, so that neither the cache nor a caller sees the other's changes.
func (r RevisionRecord) clone() RevisionRecord {
	r.Root = slices.Clone(r.Root)
	r.Parents = slices.Clone(r.Parents)
	r.Resources = slices.Clone(r.Resources)
	return r
}

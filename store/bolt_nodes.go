package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// Formats 2 to 4 keep nodes in an append-only log inside the bbolt file (docs/storage.md §4). Format 1 kept each
// node at its SHA-256 address in one B+tree: every new node landed on a random leaf, so a commit of four new nodes
// rewrote four or more leaf pages and the branch pages above them (more as the tree grew a level), a bulk load split
// pages all over the tree, and the file held part-full pages for good (2.3–2.5× the stored bytes). Since format 2
// the nodes one write adds are concatenated into one chunk at the next sequence number, so a commit appends at the
// right edge of two buckets and its pages are full; the hash → place map lives in memory, loaded from the compact
// chunk index when the file is opened (40 bytes a node, read in key order).
//
// In formats 2 and 3 a chunk is a value of the chunks bucket. bbolt rewrites a leaf whole when a key is added to it,
// and splits a leaf only past four keys, so each commit rewrote the last two to four chunks beside its own: at
// N = 1,000,000 a single-field commit wrote 8 pages of chunks for 3 of its own (17 pages in all), and the first
// commits after a load rewrote its last 256 KiB chunks. Every page costs the commit's fsync about 26 µs on this
// disk. Format 4 makes each chunk a bucket of its own, holding its bytes under one key: the chunks bucket's leaves
// hold 16-byte bucket headers, and a chunk's pages are written once.
var (
	bucketChunks   = []byte("chunks")   // be64(chunk) → the stored forms of its nodes, concatenated (format 4: in a bucket, under chunkData)
	bucketChunkIdx = []byte("chunkidx") // be64(chunk) → per node: hash (32) ‖ be32(offset) ‖ be32(length)
	chunkData      = []byte{0}          // format 4: the key of a chunk's bytes in its bucket

	// metaIndexGen counts the transactions that removed nodes. Another process's index is current if it has loaded
	// every chunk up to the newest and this number has not moved since: chunks are never rewritten otherwise.
	metaIndexGen = []byte("index-gen")
)

const (
	// maxChunk bounds a chunk's bytes: a bulk write becomes several chunks, so that removing part of one rewrites
	// at most this much of the index, and reading one node never maps more than this. In a bbolt page a value
	// comes behind the page header (16 bytes), its element header (16) and its key (8), and a leaf holds at least
	// two entries: n full chunks of 256 KiB less those 40 bytes fit n×64 pages of 4 KiB (or n×16 of 16 KiB),
	// where 256 KiB a chunk took a page more for every chunk.
	maxChunk = 256<<10 - chunkPageOverhead

	chunkPageOverhead = 16 + 16 + 8
	hashLen           = len(Hash{})
	idxEntry          = hashLen + 8
)

// loc is where a node's stored form is: bytes [off, off+n) of a chunk.
type loc struct {
	chunk  uint64
	off, n uint32
}

// nodeIndex maps each node of a file of format 2, 3 or 4 to its place. A write transaction's additions enter it just
// before bbolt commits (a reader sees the commit's heads as soon as its meta page is written, and must then find
// their nodes; one whose transaction is older does not have the chunk, and finds the node missing, as it should),
// its removals once the commit has succeeded; all under the Bolt's writer mutex, so that the next write transaction
// sees every change of the previous ones. A failed commit drops the whole map (the store stops; a reopen reloads it).
type nodeIndex struct {
	mu   sync.RWMutex
	m    map[Hash]loc
	upTo uint64 // every chunk up to this one is loaded
	gen  uint64 // metaIndexGen when loaded
	// created and txid identify the file state the map follows: a file whose creation time differs, or whose last
	// transaction is older than the last this map saw (a backup restored over it), is loaded anew.
	created []byte
	txid    uint64
	// sorted is every hash, in order, as of the start of the listing in progress (hashes).
	sorted []Hash
}

// load brings the index up to the state of the file in tx: only chunks newer than upTo, unless nodes were removed
// since (another process collected garbage), in which case it reloads the whole index.
func (x *nodeIndex) load(tx *bolt.Tx, path string) error {
	gen := indexGen(tx.Bucket(bucketMeta))
	created := tx.Bucket(bucketMeta).Get(metaCreated)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.m == nil || gen != x.gen || !bytes.Equal(created, x.created) || uint64(tx.ID()) < x.txid ||
		!x.holds(x.upTo, tx.Bucket(bucketChunkIdx).Get(be64(x.upTo))) {
		x.m, x.upTo, x.sorted = map[Hash]loc{}, 0, nil
	}
	x.created, x.txid = bytes.Clone(created), uint64(tx.ID())
	cur := tx.Bucket(bucketChunkIdx).Cursor()
	for k, v := cur.Seek(be64(x.upTo + 1)); k != nil; k, v = cur.Next() {
		if len(k) != 8 || len(v)%idxEntry != 0 {
			return fmt.Errorf("%w: %s: the chunk index has a damaged entry (key %x, %d bytes): restore the file from a "+
				"backup", ErrBadFile, path, k, len(v))
		}
		c := binary.BigEndian.Uint64(k)
		for e := v; len(e) > 0; e = e[idxEntry:] {
			x.m[Hash(e[:hashLen])] = loc{chunk: c, off: binary.BigEndian.Uint32(e[hashLen:]),
				n: binary.BigEndian.Uint32(e[hashLen+4:])}
		}
		x.upTo = c
	}
	x.gen = gen
	return nil
}

// holds reports whether the map has chunk c as the file's chunk index entry v describes it: every node of v at its
// place in c. Chunks are never rewritten, and removing nodes from an entry moves metaIndexGen (or, by this process,
// removes them from the map too), so a file that still carries the history the map was loaded from passes. One that
// was replaced by an older copy of itself (a backup restored), in which another process has since committed (so its
// last transaction is no longer older than the map's), fails: its chunk c is missing, or holds that process's nodes
// under the number the restored file handed out again. Chunk 0 (no chunk loaded yet) always passes.
func (x *nodeIndex) holds(c uint64, v []byte) bool {
	if c == 0 {
		return true
	}
	if len(v) == 0 || len(v)%idxEntry != 0 {
		return false
	}
	for e := v; len(e) > 0; e = e[idxEntry:] {
		want := loc{chunk: c, off: binary.BigEndian.Uint32(e[hashLen:]), n: binary.BigEndian.Uint32(e[hashLen+4:])}
		if x.m[Hash(e[:hashLen])] != want {
			return false
		}
	}
	return true
}

// indexGen reads metaIndexGen (0 until a transaction has removed nodes).
func indexGen(meta *bolt.Bucket) uint64 {
	if v := meta.Get(metaIndexGen); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (x *nodeIndex) find(h Hash) (loc, bool) {
	x.mu.RLock()
	l, ok := x.m[h]
	x.mu.RUnlock()
	return l, ok
}

func (x *nodeIndex) len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.m)
}

// hashes returns up to limit addresses greater than after (after nil: from the start), in order. A listing from the
// start sorts every hash once, copied under the read lock and sorted outside it, so that node reads and commits do
// not wait for the sort; its later pages are cut from that order, without the hashes removed since, and the copy is
// dropped once a page comes back empty. So nodes added after a listing began may be missing from its later pages:
// garbage collection, which lists its candidates this way, never removes a node it was not given.
func (x *nodeIndex) hashes(after *Hash, limit int) []Hash {
	cmp := func(a, b Hash) int { return bytes.Compare(a[:], b[:]) }
	x.mu.RLock()
	sorted := x.sorted
	if after == nil || sorted == nil {
		sorted = make([]Hash, 0, len(x.m))
		for h := range x.m {
			sorted = append(sorted, h)
		}
		x.mu.RUnlock()
		slices.SortFunc(sorted, cmp)
		x.mu.RLock()
	}
	from := 0
	if after != nil {
		from, _ = slices.BinarySearchFunc(sorted, *after, cmp)
		if from < len(sorted) && sorted[from] == *after {
			from++
		}
	}
	out := make([]Hash, 0, min(limit, len(sorted)-from))
	for i := from; i < len(sorted) && len(out) < limit; i++ {
		if _, ok := x.m[sorted[i]]; ok {
			out = append(out, sorted[i])
		}
	}
	x.mu.RUnlock()
	x.mu.Lock()
	x.sorted = sorted
	if len(out) == 0 {
		x.sorted = nil // the listing is done: do not keep 32 bytes a node
	}
	x.mu.Unlock()
	return out
}

// nodeTx is one transaction's view of the nodes of a file of format 2, 3 or 4: the index, with what the
// transaction has added and removed on top.
type nodeTx struct {
	x      *nodeIndex
	tx     *bolt.Tx
	add    map[Hash]loc
	del    map[Hash]struct{}
	gen    uint64 // metaIndexGen written by this transaction, if it removed nodes
	id     uint64 // the transaction's id (the file's txid once it commits)
	nested bool   // format 4: each chunk is a bucket
	// last is the chunk the previous get read, for the next: a whole-document read takes its nodes in the order a
	// load stored them, hundreds from one chunk, and opening a chunk's bucket allocates.
	last struct {
		chunk uint64
		v     []byte // nil: none
	}
}

func (t *nodeTx) lookup(h Hash) (loc, bool) {
	if l, ok := t.add[h]; ok {
		return l, true
	}
	if _, ok := t.del[h]; ok {
		return loc{}, false
	}
	return t.x.find(h)
}

// get returns the stored form of node h, aliasing the transaction's memory, or nil if the transaction does not have it.
func (t *nodeTx) get(h Hash) []byte {
	l, ok := t.lookup(h)
	if !ok {
		return nil
	}
	// A read transaction older than the commit that added h does not have its chunk: h is missing in it, as it
	// would be in format 1.
	v := t.chunk(l.chunk)
	if end := uint64(l.off) + uint64(l.n); v == nil || end > uint64(len(v)) {
		return nil
	}
	return v[l.off : l.off+l.n]
}

// chunk returns the bytes of chunk c, or nil if the transaction does not have it.
func (t *nodeTx) chunk(c uint64) []byte {
	if t.last.v != nil && t.last.chunk == c {
		return t.last.v
	}
	chunks := t.tx.Bucket(bucketChunks)
	var v []byte
	if !t.nested {
		v = chunks.Get(be64(c))
	} else if b := chunks.Bucket(be64(c)); b != nil {
		v = b.Get(chunkData)
	}
	t.last.chunk, t.last.v = c, v
	return v
}

// put appends every node not already present, in chunks of at most maxChunk bytes.
func (t *nodeTx) put(nodes []Node, stored [][]byte) (PutStats, error) {
	chunks, idx := t.tx.Bucket(bucketChunks), t.tx.Bucket(bucketChunkIdx)
	chunks.FillPercent, idx.FillPercent = 1, 1 // keys only ever grow: full pages never split again
	var (
		st   PutStats
		seq  uint64
		buf  []byte
		ents []byte
	)
	flush := func() error {
		if len(ents) == 0 {
			return nil
		}
		// bbolt keeps the slices until the commit: buf and ents are not reused.
		if err := t.putChunk(chunks, seq, buf); err != nil {
			return err
		}
		if err := idx.Put(be64(seq), ents); err != nil {
			return err
		}
		buf, ents = nil, nil
		return nil
	}
	for i, n := range nodes {
		if _, ok := t.add[n.Hash]; ok {
			continue // earlier in this transaction (its chunk may not be written yet)
		}
		if t.get(n.Hash) != nil {
			continue // present (one whose chunk is gone, in a damaged file, is stored again)
		}
		s := stored[i]
		if len(buf) > 0 && len(buf)+len(s) > maxChunk {
			if err := flush(); err != nil {
				return PutStats{}, err
			}
		}
		if len(buf) == 0 {
			var err error
			if seq, err = chunks.NextSequence(); err != nil {
				return PutStats{}, err
			}
			buf = make([]byte, 0, min(maxChunk, chunkEstimate(stored[i:])))
		}
		l := loc{chunk: seq, off: uint32(len(buf)), n: uint32(len(s))}
		buf = append(buf, s...)
		ents = append(ents, n.Hash[:]...)
		ents = binary.BigEndian.AppendUint32(ents, l.off)
		ents = binary.BigEndian.AppendUint32(ents, l.n)
		if t.add == nil {
			t.add = map[Hash]loc{}
		}
		t.add[n.Hash] = l
		delete(t.del, n.Hash)
		st.Nodes++
		st.RawBytes += int64(len(n.Data))
		st.StoredBytes += int64(len(s))
	}
	return st, flush()
}

// putChunk stores a new chunk: a value of the chunks bucket, or in format 4 a bucket of its own.
func (t *nodeTx) putChunk(chunks *bolt.Bucket, seq uint64, data []byte) error {
	if !t.nested {
		return chunks.Put(be64(seq), data)
	}
	b, err := chunks.CreateBucket(be64(seq))
	if err != nil {
		return err
	}
	b.FillPercent = 1
	return b.Put(chunkData, data)
}

// deleteChunk deletes the chunk at key k, stored as putChunk stored it.
func (t *nodeTx) deleteChunk(chunks *bolt.Bucket, k []byte) error {
	if !t.nested {
		return chunks.Delete(k)
	}
	return chunks.DeleteBucket(k)
}

// chunkEstimate is the bytes the remaining nodes would take, for a first allocation.
func chunkEstimate(stored [][]byte) int {
	n := 0
	for _, s := range stored {
		if n += len(s); n >= maxChunk {
			break
		}
	}
	return n
}

// remove deletes the nodes present among hs. Each chunk's index entry is rewritten without them, and a chunk none of
// whose nodes is left is deleted with its entry; the bytes of the others stay in their chunk until it empties
// (chunks are never moved, so a reader's older transaction keeps finding every node that is still live).
func (t *nodeTx) remove(hs []Hash) (int, int64, error) {
	byChunk := map[uint64]map[Hash]struct{}{}
	n, size := 0, int64(0)
	for _, h := range hs {
		l, ok := t.lookup(h)
		if !ok {
			continue
		}
		if byChunk[l.chunk] == nil {
			byChunk[l.chunk] = map[Hash]struct{}{}
		}
		if _, dup := byChunk[l.chunk][h]; dup {
			continue
		}
		byChunk[l.chunk][h] = struct{}{}
		n++
		size += int64(l.n)
	}
	if n == 0 {
		return 0, 0, nil
	}
	t.last.v = nil // a chunk may go
	chunks, idx := t.tx.Bucket(bucketChunks), t.tx.Bucket(bucketChunkIdx)
	for c, gone := range byChunk {
		k := be64(c)
		var keep []byte
		for e := idx.Get(k); len(e) >= idxEntry; e = e[idxEntry:] {
			if _, ok := gone[Hash(e[:hashLen])]; !ok {
				keep = append(keep, e[:idxEntry]...)
			}
		}
		var err error
		if len(keep) == 0 {
			if err = idx.Delete(k); err == nil {
				err = t.deleteChunk(chunks, k)
			}
		} else {
			err = idx.Put(k, keep)
		}
		if err != nil {
			return 0, 0, err
		}
		for h := range gone {
			delete(t.add, h)
			if t.del == nil {
				t.del = map[Hash]struct{}{}
			}
			t.del[h] = struct{}{}
		}
	}
	if t.gen == 0 {
		meta := t.tx.Bucket(bucketMeta)
		t.gen = indexGen(meta) + 1
		if err := meta.Put(metaIndexGen, be64(t.gen)); err != nil {
			return 0, 0, err
		}
	}
	return n, size, nil
}

// publish adds the transaction's new nodes to the index, just before its commit (see nodeIndex).
func (t *nodeTx) publish() {
	if len(t.add) == 0 {
		return
	}
	t.x.mu.Lock()
	defer t.x.mu.Unlock()
	for h, l := range t.add {
		t.x.m[h] = l
		t.x.upTo = max(t.x.upTo, l.chunk)
	}
}

// committed applies the transaction's removals once its commit has succeeded.
func (t *nodeTx) committed() {
	t.x.mu.Lock()
	defer t.x.mu.Unlock()
	t.x.txid = max(t.x.txid, t.id) // tx.ID() is -1 once committed
	if len(t.del) == 0 {
		return
	}
	for h := range t.del {
		delete(t.x.m, h)
	}
	if t.gen != 0 {
		t.x.gen = t.gen
	}
}

// failed forgets the whole index after a failed commit: which of its chunks reached the disk is unknown, and the
// sequence numbers of those that did not will be handed out again. The store stops; a reopen loads the index anew.
func (t *nodeTx) failed() {
	t.x.mu.Lock()
	defer t.x.mu.Unlock()
	t.x.m, t.x.upTo, t.x.gen, t.x.sorted = nil, 0, 0, nil
}

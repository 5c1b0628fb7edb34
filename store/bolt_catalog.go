package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Catalog buckets (docs/storage.md §4). Created on first write; absent buckets read as empty.
var (
	bucketRevs     = []byte("revs")     // be64(revision) → RevisionRecord JSON; append-only
	bucketRevTS    = []byte("revts")    // be64(branch id) ‖ be64(time) → be64(revision): each branch's head log
	bucketBranches = []byte("branches") // name → BranchRecord JSON
	bucketLabels   = []byte("labels")   // name → LabelRecord JSON
	bucketIdem     = []byte("idem")     // idempotency key → be64(revision)
	bucketKV       = []byte("kv")       // named sub-buckets: plans, approvals, GC state
)

// View implements Backend: fn reads the catalog in one bbolt read transaction. Records are decoded (copied) before
// they are returned, so nothing aliases the memory map after the transaction ends.
func (b *Bolt) View(ctx context.Context, fn func(CatalogReader) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.damage(b.view(func(tx *bolt.Tx) error { return fn(&boltCat{tx: tx, b: b}) }))
}

// damage names the file in an error that reports damage to it (a catalog entry failing its checksum, a node
// missing), so that the operator's log says which database to restore (gate.FileFaultHint). Errors of the store's
// own that name it already (fail-stop, closed) are left as they are.
func (b *Bolt) damage(err error) error {
	if err == nil || !(errors.Is(err, ErrCorruptNode) || errors.Is(err, ErrNodeMissing)) ||
		strings.Contains(err.Error(), b.path) {
		return err
	}
	return fmt.Errorf("%s: %w", b.path, err)
}

// NodeCodec implements Backend: zstd in a format-3 file, S2 in the older formats.
func (b *Bolt) NodeCodec() Codec { return b.codec }

// Update implements Backend: fn's writes, nodes included, commit in one durable bbolt transaction, or not at all.
func (b *Bolt) Update(ctx context.Context, fn func(CatalogTx) error) error {
	return b.damage(b.update(ctx, func(tx *bolt.Tx, nt *nodeTx) error {
		c := &boltCat{tx: tx, b: b, nt: nt}
		if err := fn(c); err != nil {
			return err
		}
		if !c.wrote {
			return errNoCommit // nothing changed: no commit, no fsync
		}
		return nil
	}))
}

var _ Backend = (*Bolt)(nil)

type boltCat struct {
	tx    *bolt.Tx
	b     *Bolt
	nt    *nodeTx // the nodes of a file of format 2, 3 or 4 in a write transaction; nil for format 1 or a read
	wrote bool
}

func (c *boltCat) bucket(name []byte) *bolt.Bucket { return c.tx.Bucket(name) }

func (c *boltCat) wbucket(name []byte) (*bolt.Bucket, error) {
	c.wrote = true
	bk, err := c.tx.CreateBucketIfNotExists(name)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(name, bucketRevs) || bytes.Equal(name, bucketRevTS) {
		bk.FillPercent = 1.0 // append-only keys: full pages never split again
	}
	return bk, nil
}

// Every catalog value is sealed with a CRC-32C of its bytes, so that a flipped bit in a head, a label or a revision
// record is reported as damage instead of served (docs/security.md T5). Nodes need none: their address is their hash.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func seal(v []byte) []byte { return binary.BigEndian.AppendUint32(v, crc32.Checksum(v, castagnoli)) }

// unseal checks and strips the seal; the result is a copy, safe after the transaction.
func unseal(key, v []byte) ([]byte, error) {
	if len(v) < 4 {
		return nil, fmt.Errorf("%w: catalog entry %s is %d bytes, too short to be sealed", ErrCorruptNode, entryName(key), len(v))
	}
	body := v[:len(v)-4]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(v[len(v)-4:]) {
		return nil, fmt.Errorf("%w: catalog entry %s fails its checksum: the file is damaged; restore it from a backup", ErrCorruptNode, entryName(key))
	}
	return append([]byte(nil), body...), nil
}

// entryName shows a catalog key in an error: a name as text, a binary key in hex, and an eight-byte one (a revision
// number, say) also as the number it holds.
func entryName(key []byte) string {
	for _, c := range key {
		if c < 0x20 || c > 0x7e {
			if len(key) == 8 {
				return fmt.Sprintf("with key %x (%d)", key, binary.BigEndian.Uint64(key))
			}
			return fmt.Sprintf("with key %x", key)
		}
	}
	return strconv.Quote(string(key))
}

func getJSON[T any](bk *bolt.Bucket, key []byte) (T, error) {
	if bk == nil {
		var v T
		return v, ErrNotFound
	}
	return decodeJSON[T](key, bk.Get(key))
}

// decodeJSON decodes the stored value raw of key (nil: absent).
func decodeJSON[T any](key, raw []byte) (T, error) {
	var v T
	if raw == nil {
		return v, ErrNotFound
	}
	body, err := unseal(key, raw)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return v, fmt.Errorf("%w: catalog entry %q: %v", ErrCorruptNode, key, err)
	}
	return v, nil
}

func putJSON(bk *bolt.Bucket, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return bk.Put(key, seal(raw))
}

// getRev reads a sealed big-endian revision number.
func getRev(key, v []byte) (uint64, bool, error) {
	if v == nil {
		return 0, false, nil
	}
	body, err := unseal(key, v)
	if err != nil {
		return 0, false, err
	}
	if len(body) != 8 {
		return 0, false, fmt.Errorf("%w: catalog entry %q holds %d bytes, not a revision number", ErrCorruptNode, key, len(body))
	}
	return binary.BigEndian.Uint64(body), true, nil
}

func (c *boltCat) Revision(n uint64) (RevisionRecord, error) {
	bk := c.bucket(bucketRevs)
	if bk == nil {
		return RevisionRecord{}, ErrNotFound
	}
	key := be64(n)
	raw := bk.Get(key)
	if r, ok := c.b.revs.get(n, raw); ok {
		return r, nil
	}
	r, err := decodeJSON[RevisionRecord](key, raw)
	if err != nil {
		return r, err
	}
	if r.Number != n {
		return r, fmt.Errorf("%w: the record stored as revision %d says it is revision %d", ErrCorruptNode, n, r.Number)
	}
	c.b.revs.put(n, raw, r)
	return r, nil
}

func (c *boltCat) LastRevision() (uint64, error) {
	bk := c.bucket(bucketRevs)
	if bk == nil {
		return 0, nil
	}
	k, _ := bk.Cursor().Last()
	if k == nil {
		return 0, nil
	}
	if len(k) != 8 {
		return 0, fmt.Errorf("%w: revision key of %d bytes", ErrCorruptNode, len(k))
	}
	return binary.BigEndian.Uint64(k), nil
}

func (c *boltCat) Revisions(from uint64, fn func(RevisionRecord) bool) error {
	bk := c.bucket(bucketRevs)
	if bk == nil {
		return nil
	}
	cur := bk.Cursor()
	k, v := cur.Seek(be64(from))
	if k == nil || binary.BigEndian.Uint64(k) > from {
		k, v = cur.Prev()
	}
	for ; k != nil; k, v = cur.Prev() {
		var r RevisionRecord
		body, err := unseal(k, v)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(body, &r); err != nil {
			return fmt.Errorf("%w: revision record: %v", ErrCorruptNode, err)
		}
		if !fn(r) {
			return nil
		}
	}
	return nil
}

func (c *boltCat) Branch(name string) (BranchRecord, error) {
	return getJSON[BranchRecord](c.bucket(bucketBranches), []byte(name))
}

func listJSON[T any](bk *bolt.Bucket) ([]T, error) {
	out := []T{}
	if bk == nil {
		return out, nil
	}
	err := bk.ForEach(func(k, v []byte) error {
		var x T
		body, err := unseal(k, v)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(body, &x); err != nil {
			return fmt.Errorf("%w: catalog entry %q: %v", ErrCorruptNode, k, err)
		}
		out = append(out, x)
		return nil
	})
	return out, err
}

func (c *boltCat) Branches() ([]BranchRecord, error) {
	return listJSON[BranchRecord](c.bucket(bucketBranches))
}

func (c *boltCat) Label(name string) (LabelRecord, error) {
	return getJSON[LabelRecord](c.bucket(bucketLabels), []byte(name))
}

func (c *boltCat) Labels() ([]LabelRecord, error) {
	return listJSON[LabelRecord](c.bucket(bucketLabels))
}

// timeKey orders times as unsigned big-endian bytes, pre-1970 included.
func timeKey(t time.Time) []byte { return be64(uint64(unixNano(t)) ^ 1<<63) }

// unixNano is t.UnixNano, held to the instants it can represent (1678 to 2262): before them the first, after them
// the last. t.UnixNano wraps around outside them, so a read at the year 1000 found today's head (found in review).
// Revisions are made now, well inside, so an instant outside orders exactly as it should against every one.
func unixNano(t time.Time) int64 {
	switch {
	case t.Before(minUnixNano):
		return math.MinInt64
	case t.After(maxUnixNano):
		return math.MaxInt64
	}
	return t.UnixNano()
}

var minUnixNano, maxUnixNano = time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)

func (c *boltCat) HeadAt(id uint64, at time.Time) (uint64, bool, error) {
	bk := c.bucket(bucketRevTS)
	if bk == nil {
		return 0, false, nil
	}
	prefix := be64(id)
	cur := bk.Cursor()
	// The last entry of this branch at or before at: seek just past at, step back.
	next := append(append([]byte{}, prefix...), timeKey(at.Add(time.Nanosecond))...)
	k, v := cur.Seek(next)
	if k == nil {
		k, v = cur.Last()
	} else {
		k, v = cur.Prev()
	}
	if k == nil || !bytes.HasPrefix(k, prefix) {
		return 0, false, nil
	}
	return getRev(k, v)
}

func (c *boltCat) Idempotent(key string) (uint64, bool, error) {
	bk := c.bucket(bucketIdem)
	if bk == nil {
		return 0, false, nil
	}
	return getRev([]byte(key), bk.Get([]byte(key)))
}

func (c *boltCat) kv(name string) *bolt.Bucket {
	parent := c.bucket(bucketKV)
	if parent == nil {
		return nil
	}
	return parent.Bucket([]byte(name))
}

func (c *boltCat) Get(bucket, key string) ([]byte, bool, error) {
	bk := c.kv(bucket)
	if bk == nil {
		return nil, false, nil
	}
	v := bk.Get([]byte(key))
	if v == nil {
		return nil, false, nil
	}
	body, err := unseal([]byte(key), v)
	return body, err == nil, err
}

func (c *boltCat) Scan(bucket string, fn func(string, []byte) bool) error {
	bk := c.kv(bucket)
	if bk == nil {
		return nil
	}
	cur := bk.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		body, err := unseal(k, v)
		if err != nil {
			return err
		}
		if !fn(string(k), body) {
			return nil
		}
	}
	return nil
}

func (c *boltCat) PutNodes(nodes []Node) (PutStats, error) {
	if len(nodes) == 0 {
		return PutStats{}, nil
	}
	stored, err := encodeNodes(context.Background(), nodes, c.b.codec)
	if err != nil {
		return PutStats{}, err
	}
	c.wrote = true
	return putNodes(c.tx, c.nt, nodes, stored)
}

func (c *boltCat) AddRevision(r RevisionRecord) error {
	last, err := c.LastRevision()
	if err != nil {
		return err
	}
	if r.Number != last+1 {
		return errOutOfOrder(r.Number, last)
	}
	return c.putRevision(r)
}

// putRevision stores a revision record whose number its caller has checked.
func (c *boltCat) putRevision(r RevisionRecord) error {
	bk, err := c.wbucket(bucketRevs)
	if err != nil {
		return err
	}
	return putJSON(bk, be64(r.Number), r)
}

func (c *boltCat) PutBranch(br BranchRecord) error {
	bk, err := c.wbucket(bucketBranches)
	if err != nil {
		return err
	}
	return putJSON(bk, []byte(br.Name), br)
}

func (c *boltCat) DeleteBranch(name string) error {
	bk, err := c.wbucket(bucketBranches)
	if err != nil {
		return err
	}
	return bk.Delete([]byte(name))
}

func (c *boltCat) PutLabel(l LabelRecord) error {
	bk, err := c.wbucket(bucketLabels)
	if err != nil {
		return err
	}
	return putJSON(bk, []byte(l.Name), l)
}

func (c *boltCat) DeleteLabel(name string) error {
	bk, err := c.wbucket(bucketLabels)
	if err != nil {
		return err
	}
	return bk.Delete([]byte(name))
}

func (c *boltCat) LogHead(id uint64, at time.Time, rev uint64) error {
	bk, err := c.wbucket(bucketRevTS)
	if err != nil {
		return err
	}
	return bk.Put(append(be64(id), timeKey(at)...), seal(be64(rev)))
}

func (c *boltCat) SetIdempotent(key string, rev uint64) error {
	bk, err := c.wbucket(bucketIdem)
	if err != nil {
		return err
	}
	return bk.Put([]byte(key), seal(be64(rev)))
}

func (c *boltCat) wkv(name string) (*bolt.Bucket, error) {
	parent, err := c.wbucket(bucketKV)
	if err != nil {
		return nil, err
	}
	return parent.CreateBucketIfNotExists([]byte(name))
}

func (c *boltCat) Put(bucket, key string, val []byte) error {
	bk, err := c.wkv(bucket)
	if err != nil {
		return err
	}
	return bk.Put([]byte(key), seal(append([]byte(nil), val...)))
}

func (c *boltCat) Delete(bucket, key string) error {
	bk, err := c.wkv(bucket)
	if err != nil {
		return err
	}
	return bk.Delete([]byte(key))
}

func (c *boltCat) NextID() (uint64, error) {
	bk, err := c.wbucket(bucketMeta)
	if err != nil {
		return 0, err
	}
	return bk.NextSequence()
}

func (c *boltCat) DeleteNodes(hs []Hash) (int, int64, error) {
	if c.nt != nil {
		if len(hs) == 0 {
			return 0, 0, nil
		}
		c.wrote = true
		return c.nt.remove(hs)
	}
	bk := c.bucket(bucketNodes)
	if bk == nil || len(hs) == 0 {
		return 0, 0, nil
	}
	c.wrote = true
	n, bytes := 0, int64(0)
	for _, h := range hs {
		v := bk.Get(h[:])
		if v == nil {
			continue
		}
		bytes += int64(len(v))
		if err := bk.Delete(h[:]); err != nil {
			return n, bytes, err
		}
		n++
	}
	if seq := bk.Sequence(); n > 0 && seq >= uint64(n) {
		return n, bytes, bk.SetSequence(seq - uint64(n))
	}
	return n, bytes, nil
}

func (c *boltCat) DeleteRevision(n uint64) error {
	last, err := c.LastRevision()
	if err != nil || n == 0 || n >= last {
		return err // the newest revision stays, so numbers are never reused
	}
	bk, err := c.wbucket(bucketRevs)
	if err != nil {
		return err
	}
	return bk.Delete(be64(n))
}

// NodeHashes implements NodeLister, in one short read transaction per call.
func (b *Bolt) NodeHashes(ctx context.Context, after *Hash, limit int) ([]Hash, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := b.usable(); err != nil {
		return nil, err
	}
	if b.index != nil {
		return b.index.hashes(after, limit), nil
	}
	var out []Hash
	err := b.view(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketNodes)
		if bk == nil {
			return nil
		}
		cur := bk.Cursor()
		var k []byte
		if after == nil {
			k, _ = cur.First()
		} else {
			k, _ = cur.Seek(after[:])
			if k != nil && bytes.Equal(k, after[:]) {
				k, _ = cur.Next()
			}
		}
		for ; k != nil && len(out) < limit; k, _ = cur.Next() {
			var h Hash
			copy(h[:], k)
			out = append(out, h)
		}
		return nil
	})
	return out, err
}

var _ NodeLister = (*Bolt)(nil)

func (c *boltCat) GetNodes(hs []Hash) ([][]byte, error) {
	get := c.b.nodeGetter(c.tx, c.nt)
	out := make([][]byte, len(hs))
	for i, h := range hs {
		v := get(h)
		if v == nil {
			return nil, c.b.missing(h)
		}
		data, err := decodeStored(h, v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.b.path, err)
		}
		out[i] = data
	}
	return out, nil
}

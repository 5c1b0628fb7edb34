package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"sort"
	"sync"
	"time"
)

// MemBackend is an in-memory Backend: nodes in a Mem, catalog in maps. Updates are atomic (all or nothing) and
// serialised; it is for tests and scratch databases, and is the reference the on-disk backend is checked against.
type MemBackend struct {
	*Mem
	mu  sync.RWMutex
	cat memCatalog
}

type memCatalog struct {
	revs     []RevisionRecord // revs[i] is revision i+1
	branches map[string]BranchRecord
	labels   map[string]LabelRecord
	headLog  map[uint64][]headEntry // by branch id, in time order
	idem     map[string]uint64
	buckets  map[string]map[string][]byte
	nextID   uint64
}

type headEntry struct {
	t   time.Time
	rev uint64
}

// NewMemBackend returns an empty in-memory backend.
func NewMemBackend() *MemBackend {
	return &MemBackend{Mem: NewMem(), cat: memCatalog{
		branches: map[string]BranchRecord{}, labels: map[string]LabelRecord{}, headLog: map[uint64][]headEntry{},
		idem: map[string]uint64{}, buckets: map[string]map[string][]byte{},
	}}
}

// View implements Backend.
func (m *MemBackend) View(ctx context.Context, fn func(CatalogReader) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return fn(&memTx{mem: m.Mem, c: &m.cat})
}

// NodeCodec implements Backend: memCodec.
func (m *MemBackend) NodeCodec() Codec { return memCodec }

// Update implements Backend. Writes go to a copy of the catalog that replaces the original only when fn succeeds.
func (m *MemBackend) Update(ctx context.Context, fn func(CatalogTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.cat.clone()
	tx := &memTx{mem: m.Mem, c: &c}
	if err := fn(tx); err != nil {
		return err
	}
	if len(tx.nodes) > 0 {
		if _, err := m.Mem.PutNodes(ctx, tx.nodes); err != nil {
			return err
		}
	}
	if len(tx.deletes) > 0 {
		m.Mem.delete(tx.deletes)
	}
	m.cat = c
	return nil
}

// Close implements Backend.
func (m *MemBackend) Close() error { return nil }

func (c *memCatalog) clone() memCatalog {
	n := memCatalog{
		revs: append([]RevisionRecord(nil), c.revs...), branches: make(map[string]BranchRecord, len(c.branches)),
		labels: make(map[string]LabelRecord, len(c.labels)), headLog: make(map[uint64][]headEntry, len(c.headLog)),
		idem: make(map[string]uint64, len(c.idem)), buckets: make(map[string]map[string][]byte, len(c.buckets)), nextID: c.nextID,
	}
	for k, v := range c.branches {
		n.branches[k] = v
	}
	for k, v := range c.labels {
		n.labels[k] = v
	}
	for k, v := range c.headLog {
		n.headLog[k] = append([]headEntry(nil), v...)
	}
	for k, v := range c.idem {
		n.idem[k] = v
	}
	for b, m := range c.buckets {
		nm := make(map[string][]byte, len(m))
		for k, v := range m {
			nm[k] = v
		}
		n.buckets[b] = nm
	}
	return n
}

type memTx struct {
	mem     *Mem
	c       *memCatalog
	nodes   []Node
	deletes []Hash
	pending map[Hash]bool
}

func (t *memTx) Revision(n uint64) (RevisionRecord, error) {
	if n == 0 || n > uint64(len(t.c.revs)) || t.c.revs[n-1].Number == 0 {
		return RevisionRecord{}, ErrNotFound
	}
	return t.c.revs[n-1], nil
}

func (t *memTx) LastRevision() (uint64, error) { return uint64(len(t.c.revs)), nil }

func (t *memTx) Revisions(from uint64, fn func(RevisionRecord) bool) error {
	for n := min(from, uint64(len(t.c.revs))); n >= 1; n-- {
		if t.c.revs[n-1].Number == 0 {
			continue
		}
		if !fn(t.c.revs[n-1]) {
			return nil
		}
	}
	return nil
}

func (t *memTx) Branch(name string) (BranchRecord, error) {
	b, ok := t.c.branches[name]
	if !ok {
		return BranchRecord{}, ErrNotFound
	}
	return b, nil
}

func (t *memTx) Branches() ([]BranchRecord, error) {
	out := make([]BranchRecord, 0, len(t.c.branches))
	for _, b := range t.c.branches {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (t *memTx) Label(name string) (LabelRecord, error) {
	l, ok := t.c.labels[name]
	if !ok {
		return LabelRecord{}, ErrNotFound
	}
	return l, nil
}

func (t *memTx) Labels() ([]LabelRecord, error) {
	out := make([]LabelRecord, 0, len(t.c.labels))
	for _, l := range t.c.labels {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (t *memTx) HeadAt(id uint64, at time.Time) (uint64, bool, error) {
	log := t.c.headLog[id]
	i := sort.Search(len(log), func(i int) bool { return log[i].t.After(at) })
	if i == 0 {
		return 0, false, nil
	}
	return log[i-1].rev, true, nil
}

func (t *memTx) Idempotent(key string) (uint64, bool, error) {
	r, ok := t.c.idem[key]
	return r, ok, nil
}

func (t *memTx) Get(bucket, key string) ([]byte, bool, error) {
	v, ok := t.c.buckets[bucket][key]
	return append([]byte(nil), v...), ok, nil
}

func (t *memTx) Scan(bucket string, fn func(string, []byte) bool) error {
	m := t.c.buckets[bucket]
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !fn(k, append([]byte(nil), m[k]...)) {
			return nil
		}
	}
	return nil
}

func (t *memTx) PutNodes(nodes []Node) (PutStats, error) {
	var st PutStats
	if t.pending == nil {
		t.pending = map[Hash]bool{}
	}
	for _, n := range nodes {
		if t.pending[n.Hash] {
			continue
		}
		if t.mem.has(n.Hash) {
			continue
		}
		t.pending[n.Hash] = true
		n.stored = storedForm(n, memCodec) // once: the commit stores this same form
		t.nodes = append(t.nodes, n)
		st.Nodes++
		st.RawBytes += int64(len(n.Data))
		st.StoredBytes += int64(len(n.stored))
	}
	return st, nil
}

func (t *memTx) AddRevision(r RevisionRecord) error {
	if r.Number != uint64(len(t.c.revs))+1 {
		return errOutOfOrder(r.Number, uint64(len(t.c.revs)))
	}
	t.c.revs = append(t.c.revs, r)
	return nil
}

func (t *memTx) PutBranch(b BranchRecord) error { t.c.branches[b.Name] = b; return nil }
func (t *memTx) DeleteBranch(name string) error { delete(t.c.branches, name); return nil }
func (t *memTx) PutLabel(l LabelRecord) error   { t.c.labels[l.Name] = l; return nil }
func (t *memTx) DeleteLabel(name string) error  { delete(t.c.labels, name); return nil }

func (t *memTx) LogHead(id uint64, at time.Time, rev uint64) error {
	t.c.headLog[id] = append(t.c.headLog[id], headEntry{at, rev})
	return nil
}

func (t *memTx) SetIdempotent(key string, rev uint64) error { t.c.idem[key] = rev; return nil }

func (t *memTx) Put(bucket, key string, val []byte) error {
	m := t.c.buckets[bucket]
	if m == nil {
		m = map[string][]byte{}
		t.c.buckets[bucket] = m
	}
	m[key] = append([]byte(nil), val...)
	return nil
}

func (t *memTx) Delete(bucket, key string) error { delete(t.c.buckets[bucket], key); return nil }

func (t *memTx) NextID() (uint64, error) { t.c.nextID++; return t.c.nextID, nil }

func (t *memTx) DeleteNodes(hs []Hash) (int, int64, error) {
	t.deletes = append(t.deletes, hs...)
	n, bytes := 0, int64(0)
	t.mem.mu.RLock()
	defer t.mem.mu.RUnlock()
	for _, h := range hs {
		if v, ok := t.mem.nodes[h]; ok {
			n++
			bytes += int64(len(v))
		}
	}
	return n, bytes, nil
}

func (t *memTx) DeleteRevision(n uint64) error {
	if n == 0 || n >= uint64(len(t.c.revs)) {
		return nil // the newest revision stays
	}
	t.c.revs[n-1] = RevisionRecord{} // a hole: numbers are positions
	return nil
}

// NodeHashes implements NodeLister.
func (m *MemBackend) NodeHashes(ctx context.Context, after *Hash, limit int) ([]Hash, error) {
	all := m.Hashes()
	sort.Slice(all, func(i, j int) bool { return bytes.Compare(all[i][:], all[j][:]) < 0 })
	i := 0
	if after != nil {
		i = sort.Search(len(all), func(i int) bool { return bytes.Compare(all[i][:], after[:]) > 0 })
	}
	return all[i:min(len(all), i+limit)], nil
}

// be64 encodes n big-endian, the key order of revision numbers and times.
func be64(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

var (
	_ Backend    = (*MemBackend)(nil)
	_ NodeLister = (*MemBackend)(nil)
)

func (t *memTx) GetNodes(hs []Hash) ([][]byte, error) {
	out := make([][]byte, len(hs))
	var missing []Hash
	var at []int
	for i, h := range hs {
		found := false
		for _, n := range t.nodes {
			if n.Hash == h {
				out[i], found = append([]byte(nil), n.Data...), true
				break
			}
		}
		if !found {
			missing = append(missing, h)
			at = append(at, i)
		}
	}
	if len(missing) > 0 {
		got, err := t.mem.GetNodes(context.Background(), missing)
		if err != nil {
			return nil, err
		}
		for k, i := range at {
			out[i] = got[k]
		}
	}
	return out, nil
}

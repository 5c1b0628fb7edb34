package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/strata-db/strata/internal/nofollow"
)

// Checking a file before bbolt maps it (docs/storage.md §10, docs/security.md T5). bbolt validates its meta pages, but then
// maps the file and trusts the meta page's high-water mark: a file cut short opens, and the first read of a page past
// the end of the file kills the process with SIGBUS. So OpenBolt reads both meta pages itself and refuses the file
// unless it is a bbolt file whose meta pages are intact and whose length covers every page they refer to; then it
// walks the page tree bbolt will use (pageWalker, below), since bbolt's own walk on open crashes on damaged pages.
//
// bbolt v1.5.0's meta page (go.etcd.io/bbolt/internal/common/page.go and meta.go), in the machine's byte order:
//
//	page header  id u64 @0, flags u16 @8, count u16 @10, overflow u32 @12
//	meta @16     magic u32, version u32, pageSize u32, flags u32,
//	             root bucket {root pgid u64, sequence u64}, freelist pgid u64, pgid u64 (high-water mark),
//	             txid u64, checksum u64 (FNV-1a 64 of the 56 meta bytes before it)
//
// Meta page 0 is at offset 0 and meta page 1 at offset pageSize; commits write them alternately (txid % 2), so
// the one with the higher txid is the current state and the other the transaction before.
const (
	boltMetaOffset   = 16
	boltMetaEnd      = boltMetaOffset + 64
	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	boltNoFreelist   = ^uint64(0)
	boltMinPageSize  = 1024
	boltMaxPageSize  = 1 << 24 // bbolt looks for the second meta page up to 16 MiB in
	boltPageFlagMeta = 0x04
	boltPageHeader   = 16
	boltElemSize     = 16 // branch and leaf page elements are both 16 bytes
	boltPageBranch   = 0x01
	boltPageLeaf     = 0x02
	boltPageFreelist = 0x10
	boltBucketLeaf   = 0x01 // leaf element flag: the value is a bucket
	boltBucketHeader = 16   // a bucket value starts with its root pgid and sequence
	// maxPageSpan bounds the bytes one page and its overflow pages may span: the largest leaf bbolt writes, two
	// elements (it splits no leaf below two) of its largest key and value. Most of Strata's values are chunks of
	// 256 KiB or less, but a node holding one huge object key or number (which are not chunked, as strings are)
	// gets a chunk as large as it is; a file holding one (TestHugeNodeReopens: 300 MB) was refused as damaged when
	// this bound was 256 MiB. A span must also end inside the file, which is the check that catches damage.
	maxPageSpan = boltPageHeader + 2*(boltElemSize+bolt.MaxKeySize+bolt.MaxValueSize)
)

var errLockTimeout = errors.New("lock timeout")

type boltMeta struct {
	page                       int // 0 or 1
	magic, version, pageSize   uint32
	root, freelist, pgid, txid uint64
	problem                    string // why the page is not a valid meta page; "" if it is
	bboltAccepts               bool   // bbolt's own validation passes (magic, version, checksum)
}

// parseBoltMeta decodes and validates the meta page at the start of p (at least boltMetaEnd bytes), the way bbolt's
// Meta.Validate does, plus range checks that bbolt's Meta.Write asserts.
func parseBoltMeta(page int, p []byte) boltMeta {
	ne := binary.NativeEndian
	m := p[boltMetaOffset:boltMetaEnd]
	bm := boltMeta{
		page:     page,
		magic:    ne.Uint32(m[0:]),
		version:  ne.Uint32(m[4:]),
		pageSize: ne.Uint32(m[8:]),
		root:     ne.Uint64(m[16:]),
		freelist: ne.Uint64(m[32:]),
		pgid:     ne.Uint64(m[40:]),
		txid:     ne.Uint64(m[48:]),
	}
	h := fnv.New64a()
	h.Write(m[:56])
	switch {
	case bm.magic != boltMagic:
		bm.problem = "no bbolt magic number"
	case bm.version != boltVersion:
		bm.problem = fmt.Sprintf("bbolt format version %d, not %d", bm.version, boltVersion)
	case ne.Uint64(m[56:]) != h.Sum64():
		bm.problem = "checksum mismatch"
	default:
		bm.bboltAccepts = true
	}
	switch {
	case bm.problem != "":
	case bm.pageSize < boltMinPageSize || bm.pageSize > boltMaxPageSize || bm.pageSize&(bm.pageSize-1) != 0:
		bm.problem = fmt.Sprintf("impossible page size %d", bm.pageSize)
	case bm.pgid < 4 || bm.root < 2 || bm.root >= bm.pgid ||
		(bm.freelist != boltNoFreelist && (bm.freelist < 2 || bm.freelist >= bm.pgid)):
		bm.problem = fmt.Sprintf("inconsistent page numbers (root %d, freelist %d, high-water mark %d)", bm.root, int64(bm.freelist), bm.pgid)
	case ne.Uint16(p[8:]) != boltPageFlagMeta:
		bm.problem = fmt.Sprintf("page flags %#x, not a meta page", ne.Uint16(p[8:]))
	}
	return bm
}

// readAt returns the n bytes at off, or nil if the file is shorter.
func readAt(f *os.File, off int64, n int) ([]byte, error) {
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, off); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	return buf, nil
}

// checkBoltFile refuses a file at path that bbolt must not be given. A missing or empty file is fine: bbolt creates
// the database in it.
func checkBoltFile(path string, timeout time.Duration, allowRollback, skipWalk bool) error {
	f, err := nofollow.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("opening %s: %w", path, err)
	}
	defer f.Close()
	if err := lockShared(f, timeout); err != nil {
		if errors.Is(err, errLockTimeout) {
			return lockedError(path, timeout)
		}
		return fmt.Errorf("locking %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrBadFile, path)
	}
	size := fi.Size()
	if size == 0 {
		return nil
	}
	notDB := func(why string) error {
		return fmt.Errorf("%w: %s is not a strata database (%s): check the path, or move the file away to create a "+
			"new database there", ErrBadFile, path, why)
	}
	if size < boltMetaEnd {
		return notDB(fmt.Sprintf("it is only %d bytes long", size))
	}

	// Meta page 0 gives the page size, and so where meta page 1 is. If page 0 is damaged, look for page 1 where
	// bbolt would: at the OS page size, then at every power of two from 1 KiB.
	first, err := readAt(f, 0, boltMetaEnd)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	m0 := parseBoltMeta(0, first)
	m1 := boltMeta{page: 1, problem: "beyond the end of the file"}
	var offsets []int64
	if m0.problem == "" {
		offsets = []int64{int64(m0.pageSize)}
	} else {
		m1.problem = "no intact meta page found where page 1 could be"
		offsets = []int64{int64(os.Getpagesize())}
		for ps := int64(boltMinPageSize); ps <= boltMaxPageSize; ps *= 2 {
			offsets = append(offsets, ps)
		}
	}
	for _, off := range offsets {
		p, err := readAt(f, off, boltMetaEnd)
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		if p == nil {
			continue
		}
		if m := parseBoltMeta(1, p); m.problem == "" && int64(m.pageSize) == off {
			m1 = m
			break
		} else if m0.problem == "" {
			m1 = m
		}
	}

	var valid []boltMeta
	for _, m := range []boltMeta{m0, m1} {
		if m.problem == "" {
			valid = append(valid, m)
		}
	}
	for _, m := range []boltMeta{m0, m1} {
		if m.bboltAccepts && m.problem != "" {
			// bbolt would use this page: it cannot be skipped, even with AllowMetaRollback.
			return fmt.Errorf("%w: %s: bbolt meta page %d is inconsistent (%s): restore the file from a backup",
				ErrBadFile, path, m.page, m.problem)
		}
	}
	if len(valid) == 0 {
		if m0.magic != boltMagic {
			if allZero(first) {
				return fmt.Errorf("%w: %s is not a strata database, or is one whose two meta pages were destroyed: it "+
					"starts with zero bytes and has no intact bbolt meta page. Check the path; if it is your database, "+
					"restore it from a backup", ErrBadFile, path)
			}
			return notDB(fmt.Sprintf("not a bbolt file: it starts %q", printable(first[:16])))
		}
		return fmt.Errorf("%w: %s: both bbolt meta pages are damaged (page 0: %s; page 1: %s): restore it from a backup",
			ErrBadFile, path, m0.problem, m1.problem)
	}
	ps := int64(valid[0].pageSize)
	if len(valid) == 2 && valid[1].pageSize != valid[0].pageSize {
		return fmt.Errorf("%w: %s: its two bbolt meta pages disagree on the page size (%d and %d): restore it from a backup",
			ErrBadFile, path, valid[0].pageSize, valid[1].pageSize)
	}
	// Truncation first: a file cut short inside page 1 also has a damaged page 1.
	if size < 2*ps {
		return truncated(path, size, valid[0], 2*ps)
	}
	for _, m := range valid {
		if end := int64(m.pgid) * ps; m.pgid > uint64(1<<62)/uint64(ps) || size < end {
			return truncated(path, size, m, end)
		}
	}
	if len(valid) == 1 && !allowRollback {
		bad, good := m1, m0
		if m0.problem != "" {
			bad, good = m0, m1
		}
		return fmt.Errorf("%w: %s: bbolt meta page %d is damaged (%s) while meta page %d (transaction %d) is intact. "+
			"A crash while a commit was being written leaves this (that commit was never acknowledged), and so does "+
			"damage to the file. To open the database as of transaction %d, dropping whatever came after it, roll it "+
			"back (strata check %s --allow-meta-rollback); or restore the file from a backup",
			ErrBadFile, path, bad.page, bad.problem, good.page, good.txid, good.txid,
			strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	}

	// The meta page bbolt will use: the intact one with the higher transaction id.
	use := valid[0]
	if len(valid) == 2 && valid[1].txid > use.txid {
		use = valid[1]
	}
	if skipWalk {
		return nil
	}
	if err := newPageWalker(f, uint64(ps), use.pgid).walk(use); err != nil {
		return fmt.Errorf("%w: %s is damaged: %v (in the page tree of bbolt meta page %d, transaction %d): restore "+
			"it from a backup", ErrBadFile, path, err, use.page, use.txid)
	}
	return nil
}

func truncated(path string, size int64, m boltMeta, want int64) error {
	return fmt.Errorf("%w: %s is truncated: it is %d bytes, but bbolt meta page %d (transaction %d) needs %d bytes "+
		"(%d pages of %d bytes). The file was cut short (copied while in use, a full disk, or damage); opening it "+
		"would crash on the first read past its end: restore it from a backup",
		ErrBadFile, path, size, m.page, m.txid, want, want/int64(m.pageSize), m.pageSize)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// pageWalker checks the page tree under a meta page before bbolt sees it. With NoFreelistSync, bbolt rebuilds its
// freelist on open by walking every page with its consistency checker, in a goroutine of its own: a damaged page
// there (an element pointing outside its page, a child outside the file) panics or faults where no recover can
// reach, and kills the process. The walker reads the same pages with bounds checks, and mirrors the checks whose
// failure bbolt reports (page ids and types, pages referenced twice, key order), so that a file it passes gives
// bbolt nothing to crash or panic on. It reads each page in use once, from a read-only map of the file where it can
// (else with ReadAt): about the cost of bbolt's own walk.
type pageWalker struct {
	data  []byte // pages [0, hwm) of the file, mapped; nil to read them with ReadAt
	f     *os.File
	ps    uint64
	hwm   uint64   // pages [0, hwm) are in the file
	seen  []uint64 // bitset: pages reached
	freed []uint64 // bitset: pages on a persisted freelist
}

func newPageWalker(f *os.File, ps, hwm uint64) *pageWalker {
	return &pageWalker{f: f, ps: ps, hwm: hwm, seen: make([]uint64, hwm/64+1), freed: make([]uint64, hwm/64+1)}
}

func bitSet(b []uint64, i uint64) bool { return b[i/64]&(1<<(i%64)) != 0 }
func setBit(b []uint64, i uint64)      { b[i/64] |= 1 << (i % 64) }

// walk checks everything reachable from meta page m. A fault reading the map (the file shrank under us, or a disk
// read failed) is returned as an error.
func (w *pageWalker) walk(m boltMeta) (err error) {
	if size := w.hwm * w.ps; size <= math.MaxInt {
		if data, unmap, merr := mapFile(w.f, int(size)); merr == nil {
			w.data = data
			defer unmap()
		}
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("reading it failed: %v", r)
		}
	}()
	if m.freelist != boltNoFreelist {
		if err := w.readFreelist(m.freelist); err != nil {
			return err
		}
	}
	_, err = w.walkPage(m.root, nil, nil)
	return err
}

func (w *pageWalker) read(off, n uint64) ([]byte, error) {
	if w.data != nil {
		return w.data[off : off+n : off+n], nil
	}
	p := make([]byte, n)
	if _, err := w.f.ReadAt(p, int64(off)); err != nil {
		return nil, err
	}
	return p, nil
}

// page returns page pgid and its overflow pages, after checking its header. wantFlags 0 means branch or leaf.
func (w *pageWalker) page(pgid uint64, wantFlags uint16) ([]byte, error) {
	if pgid < 2 || pgid >= w.hwm {
		return nil, fmt.Errorf("a reference to page %d, outside the file's pages [2, %d)", pgid, w.hwm)
	}
	p, err := w.read(pgid*w.ps, w.ps)
	if err != nil {
		return nil, fmt.Errorf("reading page %d: %w", pgid, err)
	}
	ne := binary.NativeEndian
	id, flags, overflow := ne.Uint64(p[0:]), ne.Uint16(p[8:]), uint64(ne.Uint32(p[12:]))
	typeOK := flags == wantFlags
	if wantFlags == 0 {
		typeOK = flags == boltPageBranch || flags == boltPageLeaf
	}
	switch {
	case id != pgid:
		return nil, fmt.Errorf("page %d says it is page %d", pgid, id)
	case !typeOK:
		return nil, fmt.Errorf("page %d has unexpected type %#x", pgid, flags)
	case overflow >= w.hwm-pgid:
		return nil, fmt.Errorf("page %d runs past the last page (%d overflow pages)", pgid, overflow)
	case (overflow+1)*w.ps > maxPageSpan:
		return nil, fmt.Errorf("page %d claims %d overflow pages", pgid, overflow)
	}
	for i := pgid; i <= pgid+overflow; i++ {
		if bitSet(w.seen, i) {
			return nil, fmt.Errorf("page %d is referenced twice", i)
		}
		if bitSet(w.freed, i) {
			return nil, fmt.Errorf("page %d is in use and on the freelist", i)
		}
		setBit(w.seen, i)
	}
	if overflow > 0 {
		if p, err = w.read(pgid*w.ps, (overflow+1)*w.ps); err != nil {
			return nil, fmt.Errorf("reading page %d: %w", pgid, err)
		}
	}
	return p, nil
}

func (w *pageWalker) readFreelist(pgid uint64) error {
	p, err := w.page(pgid, boltPageFreelist)
	if err != nil {
		return err
	}
	ne := binary.NativeEndian
	start, count := uint64(boltPageHeader), uint64(ne.Uint16(p[10:]))
	if count == 0xFFFF { // the real count is the first element
		start, count = boltPageHeader+8, ne.Uint64(p[boltPageHeader:])
	}
	if count > (uint64(len(p))-start)/8 {
		return fmt.Errorf("freelist page %d lists %d pages, more than it holds", pgid, count)
	}
	for i := range count {
		id := ne.Uint64(p[start+8*i:])
		if id < 2 || id >= w.hwm {
			return fmt.Errorf("freelist page %d frees page %d, outside the file's pages [2, %d)", pgid, id, w.hwm)
		}
		if bitSet(w.freed, id) {
			return fmt.Errorf("freelist page %d frees page %d twice", pgid, id)
		}
		setBit(w.freed, id)
	}
	return nil
}

// elems returns the element count of page p (a page, or an inline bucket's page), checking that they fit.
func elems(p []byte) (int, error) {
	if len(p) < boltPageHeader {
		return 0, fmt.Errorf("%d bytes, shorter than a page header", len(p))
	}
	count := int(binary.NativeEndian.Uint16(p[10:]))
	if boltPageHeader+count*boltElemSize > len(p) {
		return 0, fmt.Errorf("%d elements, more than fit in the page", count)
	}
	return count, nil
}

// element returns element i of a branch or leaf page whose element count elems has checked.
func element(p []byte, branch bool, i int) (key, value []byte, child uint64, bucket bool, err error) {
	ne := binary.NativeEndian
	e := uint64(boltPageHeader + i*boltElemSize)
	var pos, ksize, vsize uint64
	if branch {
		pos, ksize, child = uint64(ne.Uint32(p[e:])), uint64(ne.Uint32(p[e+4:])), ne.Uint64(p[e+8:])
	} else {
		bucket = ne.Uint32(p[e:])&boltBucketLeaf != 0
		pos, ksize, vsize = uint64(ne.Uint32(p[e+4:])), uint64(ne.Uint32(p[e+8:])), uint64(ne.Uint32(p[e+12:]))
	}
	start, n := e+pos, ksize+vsize
	if start > uint64(len(p)) || n > uint64(len(p))-start {
		return nil, nil, 0, false, fmt.Errorf("element %d points outside its page", i)
	}
	return p[start : start+ksize], p[start+ksize : start+n], child, bucket, nil
}

// walkPage checks the subtree at pgid and returns its largest key, as bbolt's recursivelyCheckPageKeyOrderInternal
// (tx_check.go) does: keys on a page strictly increase, the first is at least the parent's key for it, and all are
// below the parent's next key.
func (w *pageWalker) walkPage(pgid uint64, minKey, maxKey []byte) ([]byte, error) {
	p, err := w.page(pgid, 0)
	if err != nil {
		return nil, err
	}
	count, err := elems(p)
	if err != nil {
		return nil, fmt.Errorf("page %d: %w", pgid, err)
	}
	branch := binary.NativeEndian.Uint16(p[8:]) == boltPageBranch
	if branch && count == 0 {
		return nil, fmt.Errorf("branch page %d is empty", pgid)
	}
	running := minKey
	for i := range count {
		key, value, child, bucket, err := element(p, branch, i)
		if err == nil {
			err = checkKeyOrder(i, key, running, maxKey)
		}
		if err != nil {
			return nil, fmt.Errorf("page %d: %w", pgid, err)
		}
		if branch {
			next := maxKey
			if i+1 < count {
				if next, _, _, _, err = element(p, true, i+1); err != nil {
					return nil, fmt.Errorf("page %d: %w", pgid, err)
				}
			}
			if running, err = w.walkPage(child, key, next); err != nil {
				return nil, err
			}
			continue
		}
		running = key
		if bucket {
			if err := w.walkBucket(value); err != nil {
				return nil, fmt.Errorf("bucket %q on page %d: %w", printable(key), pgid, err)
			}
		}
	}
	return running, nil
}

// checkKeyOrder mirrors bbolt's verifyKeyOrder.
func checkKeyOrder(i int, key, prev, maxKey []byte) error {
	switch {
	case i == 0 && prev != nil && bytes.Compare(prev, key) > 0:
		return errors.New("its first key is below its parent's key for it")
	case i > 0 && bytes.Compare(prev, key) >= 0:
		return fmt.Errorf("key %d is out of order", i)
	case maxKey != nil && bytes.Compare(key, maxKey) >= 0:
		return fmt.Errorf("key %d is not below its parent's next key", i)
	}
	return nil
}

// walkBucket checks a bucket value: a root page, or an inline bucket whose leaf page follows the header. bbolt's
// checker skips inline buckets, but reads through them are bounds-checked here too.
func (w *pageWalker) walkBucket(v []byte) error {
	if len(v) < boltBucketHeader {
		return fmt.Errorf("value is %d bytes, shorter than a bucket header", len(v))
	}
	if root := binary.NativeEndian.Uint64(v); root != 0 {
		_, err := w.walkPage(root, nil, nil)
		return err
	}
	p := v[boltBucketHeader:]
	count, err := elems(p)
	if err != nil {
		return fmt.Errorf("inline page: %w", err)
	}
	if binary.NativeEndian.Uint16(p[8:]) != boltPageLeaf {
		return errors.New("inline page is not a leaf")
	}
	for i := range count {
		key, value, _, bucket, err := element(p, false, i)
		if err != nil {
			return fmt.Errorf("inline page: %w", err)
		}
		if bucket {
			if err := w.walkBucket(value); err != nil {
				return fmt.Errorf("bucket %q: %w", printable(key), err)
			}
		}
	}
	return nil
}

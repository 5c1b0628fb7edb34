package store_test

import (
	"context"
	"encoding/binary"
	"errors"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/strata-db/strata/internal/workload"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/store"
)

// formatOf returns a file's format, whether it has a chunks bucket, and how many of its chunks are buckets of their
// own (format 4) and how many plain values (formats 2 and 3).
func formatOf(t *testing.T, path string) (format string, chunks bool, nested, flat int) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_ = db.View(func(tx *bolt.Tx) error {
		format = string(tx.Bucket([]byte("meta")).Get([]byte("strata-format")))
		cb := tx.Bucket([]byte("chunks"))
		if chunks = cb != nil; !chunks {
			return nil
		}
		return cb.ForEach(func(_, v []byte) error {
			if v == nil {
				nested++
			} else {
				flat++
			}
			return nil
		})
	})
	return format, chunks, nested, flat
}

// codecsOf returns the codec bytes the nodes of a file begin with (0 raw, 1 S2, 2 zstd), and how many of each.
func codecsOf(t *testing.T, path string) map[byte]int {
	t.Helper()
	seen := map[byte]int{}
	for _, c := range storedCodecs(t, path) {
		seen[c]++
	}
	return seen
}

// storedCodecs returns the codec byte each node of a file is stored with, by address.
func storedCodecs(t *testing.T, path string) map[store.Hash]byte {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	codecs := map[store.Hash]byte{}
	_ = db.View(func(tx *bolt.Tx) error {
		if nodes := tx.Bucket([]byte("nodes")); nodes != nil { // format 1
			return nodes.ForEach(func(k, v []byte) error { codecs[store.Hash(k)] = v[0]; return nil })
		}
		return tx.Bucket([]byte("chunkidx")).ForEach(func(k, idx []byte) error {
			chunk, _ := chunkOf(tx, k)
			for e := idx; len(e) >= 40; e = e[40:] {
				codecs[store.Hash(e[:32])] = chunk[binary.BigEndian.Uint32(e[32:])]
			}
			return nil
		})
	})
	return codecs
}

// What a database file holds in each codec after the writes a user makes, through the library every front end
// calls: a load's leaves in zstd (bulk), a single-field commit's new leaf in S2 (a commit's few nodes), and every
// array inner node raw, whoever wrote it. (Inner nodes were raw before the tree marked them incompressible too, after
// zstd's attempt; TestNodesOfHashesAreMarkedIncompressible shows that no codec is tried on them now.)
func TestWhatWritesStoreInEachCodec(t *testing.T) {
	const arrLeaf, arrInner = 3, 4 // node kinds: the first byte of a node (revision/internal/codec)
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "db"+snapshots.Ext)
	write := func(fn func(db *snapshots.DB) error) {
		t.Helper()
		d, err := snapshots.OpenDir(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		db, err := d.Open(ctx, "db")
		if errors.Is(err, snapshots.ErrNotFound) {
			db, err = d.Create(ctx, "db", "test")
		}
		if err == nil {
			err = fn(db)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	write(func(db *snapshots.DB) error {
		_, err := db.Put(ctx, "doc", workload.JSON(20000), snapshots.WriteOptions{})
		return err
	})
	loaded := storedCodecs(t, path)
	write(func(db *snapshots.DB) error {
		_, err := db.Patch(ctx, "doc", []revision.Operation{{Op: "replace", Path: "/10000/score",
			Value: []byte("1234"), HasValue: true}}, snapshots.WriteOptions{})
		return err
	})
	after := storedCodecs(t, path)

	hs := slices.Collect(maps.Keys(after))
	b, err := store.OpenBolt(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := b.GetNodes(ctx, hs)
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
	loadLeaves, commitLeaves := map[byte]int{}, map[byte]int{} // codec → leaves
	inner := 0
	for i, h := range hs {
		kind, c := data[i][0], after[h]
		if kind == arrInner {
			inner++
			if c != 0 {
				t.Errorf("an array inner node is stored with codec %d, want raw (0)", c)
			}
		}
		if kind == arrLeaf {
			if _, ok := loaded[h]; ok {
				loadLeaves[c]++
			} else {
				commitLeaves[c]++
			}
		}
	}
	if c := commitLeaves; c[1] == 0 || c[2] != 0 {
		t.Errorf("the commit's new leaves have codecs %v; want S2 (1) only", c)
	}
	// The load hands its nodes over in batches of 1 MiB (bulk: zstd); only its last few nodes may be a small batch.
	if c := loadLeaves; c[2] < 10*c[1] {
		t.Errorf("the load's leaves have codecs %v; want zstd (2) for nearly all", c)
	}
	if inner < 2 {
		t.Errorf("%d array inner nodes: the test does not cover them", inner)
	}
	t.Logf("leaves by codec: load %v, commit %v; %d array inner nodes of %d", loadLeaves, commitLeaves, inner, len(hs))
}

// A database an earlier build made (format 1, 2 or 3) opens in a data directory, takes new writes in its format,
// with only the codecs and the layout that build reads (S2 or raw in formats 1 and 2; chunks as plain values in
// formats 2 and 3), and `strata db copy` (snapshots.CopyDatabase) makes a format-4 copy of it, nodes in zstd and each
// chunk a bucket, with the same revisions.
func TestOlderFormatsInADirectory(t *testing.T) {
	for _, format := range []string{"1", "2", "3"} {
		t.Run("format "+format, func(t *testing.T) { testOlderFormatInADirectory(t, format) })
	}
}

func testOlderFormatInADirectory(t *testing.T, format string) {
	ctx := context.Background()
	from, to := t.TempDir(), t.TempDir()
	path := filepath.Join(from, "old"+snapshots.Ext)
	var o store.BoltOptions
	store.SetBoltFormat(&o, format)
	b := openBolt(t, path, &o)
	db, err := snapshots.Open(ctx, b, &snapshots.Options{Creator: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	// A long string, so that its node compresses (a node compression does not shrink is stored raw).
	name := strings.Repeat("old ", 500)
	if _, err := db.Put(ctx, "doc", []byte(`{"items":[1,2,3],"name":"`+name+`"}`), snapshots.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	b.Close()

	src, err := snapshots.OpenDir(from, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	old, err := src.Open(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	ops, err := revision.ParsePatch([]byte(`[{"op":"add","path":"/items/-","value":4}]`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Patch(ctx, "doc", ops, snapshots.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	dst, err := snapshots.OpenDir(to, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if _, err := snapshots.CopyDatabase(ctx, src, dst, "old", nil); err != nil {
		t.Fatal(err)
	}
	copied, err := dst.Open(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	for _, rev := range []uint64{2, 3} {
		want := map[uint64]string{2: `{"items":[1,2,3],"name":"` + name + `"}`, 3: `{"items":[1,2,3,4],"name":"` + name + `"}`}[rev]
		for _, d := range []*snapshots.DB{old, copied} {
			v, _, err := d.Get(ctx, snapshots.Ref{Revision: rev}, "doc", nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := d.Forest().JSON(ctx, v)
			if err != nil || string(got) != want {
				t.Fatalf("revision %d: %s, %v; want %s", rev, got, err, want)
			}
		}
	}
	src.Close()
	dst.Close()
	f, chunks, nested, flat := formatOf(t, path)
	if f != format || chunks != (format != "1") {
		t.Errorf("the original is format %q (chunks bucket: %v) after a write; want %s", f, chunks, format)
	}
	if nested != 0 || chunks && flat < 2 {
		t.Errorf("the original has %d chunks in buckets and %d as values after a write; want none in buckets, which "+
			"format %s's builds cannot read", nested, flat, format)
	}
	// The writes above are commits of a few nodes, which every format gets in S2 (PrepareNodes); formats 1 and 2
	// must never get zstd, which their builds cannot read. (The copy below shows bulk writes in zstd.)
	if c := codecsOf(t, path); c[1] == 0 || c[2] != 0 {
		t.Errorf("the original's nodes have codecs %v; want S2 (1) and no zstd (2)", c)
	}
	copyPath := filepath.Join(to, "old"+snapshots.Ext)
	if f, chunks, nested, flat := formatOf(t, copyPath); f != store.BoltFormat || !chunks || nested == 0 || flat != 0 {
		t.Errorf("the copy is format %q (chunks bucket: %v; %d chunks in buckets, %d as values); want %s, every "+
			"chunk in a bucket", f, chunks, nested, flat, store.BoltFormat)
	}
	if c := codecsOf(t, copyPath); c[2] == 0 || c[1] != 0 {
		t.Errorf("the copy's nodes have codecs %v; want zstd (2) and no S2 (1)", slices.Sorted(maps.Keys(c)))
	}
}

// randomNodes returns n nodes of size bytes that do not compress, so that each is stored as is.
func randomNodes(seed uint64, n, size int) []store.Node {
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
	out := make([]store.Node, n)
	for i := range out {
		data := make([]byte, size)
		_, _ = r.Read(data)
		out[i] = store.Node{Hash: store.HashOf(data), Data: data}
	}
	return out
}

// In format 4 a commit writes the pages of its own chunk and never again those of the chunks before it; formats 2
// and 3, whose chunks are values of one bucket, rewrote the last few with every commit (bbolt rewrites a leaf whole
// and splits it only past four keys), and the first commits after a load rewrote the load's last chunks.
func TestCommitWritesItsChunkOnce(t *testing.T) {
	pages := func(t *testing.T, format string) (afterLoad, median int64) {
		var o store.BoltOptions
		if format != "" {
			store.SetBoltFormat(&o, format)
		}
		var last int64
		o.OnCommit = func(c store.CommitStats) { last = c.PageBytes }
		b := openBolt(t, filepath.Join(t.TempDir(), "db"+snapshots.Ext), &o)
		putAll(t, b, randomNodes(1, 60, 8000)) // a load: two chunks of 256 KiB or less
		var per []int64
		for i := range 12 {
			putAll(t, b, randomNodes(uint64(i+2), 1, 8000)) // a commit of one 8 KB node: two pages
			per = append(per, last)
		}
		afterLoad = per[0]
		slices.Sort(per)
		return afterLoad, per[len(per)/2]
	}
	const page = 4096
	// Two pages of the chunk's own, and one leaf each of the chunks bucket (bucket headers), the chunk index and the
	// root bucket.
	const want = 5 * page
	l4, m4 := pages(t, "")
	if l4 > want || m4 > want {
		t.Errorf("format 4: the first commit after a load allocated %d bytes of pages, and the median commit %d; "+
			"want at most %d (its chunk's two pages and three leaves)", l4, m4, want)
	}
	l3, m3 := pages(t, "3")
	t.Logf("pages allocated by an 8 KB commit: format 4 %d after a load, %d median; format 3 %d, %d", l4/page, m4/page,
		l3/page, m3/page)
	if m3 <= m4 || l3 < 64*page {
		t.Errorf("format 3: the first commit after a load allocated %d bytes of pages, the median one %d; want more "+
			"than format 4's %d, and the load's last chunk rewritten (64 pages or more)", l3, m3, m4)
	}
}

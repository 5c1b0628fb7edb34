package store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/strata-db/strata/store"
	"github.com/strata-db/strata/store/storetest"
)

func openBolt(t testing.TB, path string, opts *store.BoltOptions) *store.Bolt {
	t.Helper()
	b, err := store.OpenBolt(path, opts)
	if err != nil {
		t.Fatalf("OpenBolt: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func TestBoltConformance(t *testing.T) {
	storetest.TestNodeStore(t, func(t *testing.T) store.NodeStore {
		return openBolt(t, filepath.Join(t.TempDir(), "db.strata"), nil)
	})
}

// format1 returns options that create files in format 1 (nodes keyed by hash), which this build still reads and
// writes: every file earlier builds made is one.
func format1() *store.BoltOptions {
	var o store.BoltOptions
	store.SetBoltFormat(&o, "1")
	return &o
}

func TestBoltFormat1Conformance(t *testing.T) {
	t.Run("nodes", func(t *testing.T) {
		storetest.TestNodeStore(t, func(t *testing.T) store.NodeStore {
			return openBolt(t, filepath.Join(t.TempDir(), "db.strata"), format1())
		})
	})
	t.Run("backend", func(t *testing.T) {
		storetest.TestBackend(t, func(t *testing.T) store.Backend {
			return openBolt(t, filepath.Join(t.TempDir(), "db.strata"), format1())
		})
	})
}

// testNodes returns n distinct JSON-ish nodes of about size bytes.
func testNodes(seed, n, size int) []store.Node {
	out := make([]store.Node, n)
	for i := range out {
		var b bytes.Buffer
		fmt.Fprintf(&b, `{"seed":%d,"i":%d,"rows":[`, seed, i)
		for k := 0; b.Len() < size; k++ {
			fmt.Fprintf(&b, `{"k":%d,"v":"value %d of node %d","f":%d.%d},`, k, k*7, i, k, i)
		}
		b.WriteString(`0]}`)
		out[i] = store.Node{Hash: store.HashOf(b.Bytes()), Data: b.Bytes()}
	}
	return out
}

func putAll(t testing.TB, s store.NodeStore, nodes []store.Node) {
	t.Helper()
	if _, err := s.PutNodes(context.Background(), nodes); err != nil {
		t.Fatalf("PutNodes: %v", err)
	}
}

func mustGet(t testing.TB, s store.NodeStore, nodes []store.Node) {
	t.Helper()
	hs := make([]store.Hash, len(nodes))
	for i, n := range nodes {
		hs[i] = n.Hash
	}
	got, err := s.GetNodes(context.Background(), hs)
	if err != nil {
		t.Fatalf("GetNodes: %v", err)
	}
	for i, n := range nodes {
		if !bytes.Equal(got[i], n.Data) {
			t.Fatalf("node %d (%s) read back wrong", i, n.Hash.Short())
		}
	}
}

func mustMiss(t testing.TB, s store.NodeStore, nodes []store.Node) {
	t.Helper()
	for _, n := range nodes {
		if _, err := s.GetNodes(context.Background(), []store.Hash{n.Hash}); !errors.Is(err, store.ErrNodeMissing) {
			t.Fatalf("node %s: got %v, want ErrNodeMissing", n.Hash.Short(), err)
		}
	}
}

// Bolt honours cancellation strictly (the suite also accepts stores that ignore it).
func TestBoltContextCanceled(t *testing.T) {
	b := openBolt(t, filepath.Join(t.TempDir(), "db"), nil)
	nodes := testNodes(1, 10, 1000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if st, err := b.PutNodes(ctx, nodes); !errors.Is(err, context.Canceled) || st != (store.PutStats{}) {
		t.Fatalf("PutNodes(canceled) = %+v, %v; want context.Canceled", st, err)
	}
	mustMiss(t, b, nodes)
	putAll(t, b, nodes)
	if got, err := b.GetNodes(ctx, []store.Hash{nodes[0].Hash}); !errors.Is(err, context.Canceled) || got != nil {
		t.Fatalf("GetNodes(canceled) = %d results, %v; want context.Canceled", len(got), err)
	}
}

func TestBoltReopen(t *testing.T) {
	t.Run("format 4", func(t *testing.T) { testBoltReopen(t, nil) })
	t.Run("format 3", func(t *testing.T) {
		var o store.BoltOptions
		store.SetBoltFormat(&o, "3")
		testBoltReopen(t, &o)
	})
	t.Run("format 1", func(t *testing.T) { testBoltReopen(t, format1()) })
}

func testBoltReopen(t *testing.T, opts *store.BoltOptions) {
	path := filepath.Join(t.TempDir(), "db.strata")
	b, err := store.OpenBolt(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if b.Path() != path {
		t.Fatalf("Path() = %q, want %q", b.Path(), path)
	}
	var all []store.Node
	for batch := range 5 {
		nodes := testNodes(batch, 40, 4000)
		putAll(t, b, nodes)
		all = append(all, nodes...)
	}
	// Values that span overflow pages: 1 MiB of JSON, and 1 MiB that does not compress.
	big := testNodes(6, 1, 1<<20)
	noise := make([]byte, 1<<20)
	_, _ = rand.NewChaCha8([32]byte{6}).Read(noise)
	big = append(big, store.Node{Hash: store.HashOf(noise), Data: noise})
	putAll(t, b, big)
	all = append(all, big...)
	st1, err := b.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st1.Nodes != int64(len(all)) || st1.UsedBytes <= 0 || st1.FileBytes < st1.UsedBytes {
		t.Fatalf("Stats() = %+v with %d nodes stored", st1, len(all))
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("database file mode: %v, %v; want 0600", fi.Mode(), err)
	}

	b = openBolt(t, path, nil)
	mustGet(t, b, all)
	st2, err := b.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st2 != st1 {
		t.Fatalf("Stats after reopen = %+v, before = %+v", st2, st1)
	}
	// Putting the same nodes again adds nothing and does not commit.
	if st, err := b.PutNodes(context.Background(), all); err != nil || st != (store.PutStats{}) {
		t.Fatalf("PutNodes(present) = %+v, %v", st, err)
	}
	// Stats counts nodes exactly, including duplicates within a call.
	more := testNodes(99, 3, 500)
	putAll(t, b, append(more, more...))
	if st, _ := b.Stats(); st.Nodes != int64(len(all)+3) {
		t.Fatalf("Stats().Nodes = %d, want %d", st.Nodes, len(all)+3)
	}
}

func TestBoltCreate(t *testing.T) {
	dir := t.TempDir()
	if _, err := store.OpenBolt(filepath.Join(dir, "no", "such", "dir", "db"), nil); err == nil {
		t.Fatal("OpenBolt in a missing directory succeeded")
	}
	// An existing empty file becomes a new database.
	path := filepath.Join(dir, "empty")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	b := openBolt(t, path, nil)
	nodes := testNodes(1, 3, 100)
	putAll(t, b, nodes)
	mustGet(t, b, nodes)
}

func TestBoltClosed(t *testing.T) {
	b, err := store.OpenBolt(filepath.Join(t.TempDir(), "db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := b.GetNodes(context.Background(), []store.Hash{{}}); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("GetNodes after Close: %v", err)
	}
	if _, err := b.PutNodes(context.Background(), testNodes(1, 1, 10)); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("PutNodes after Close: %v", err)
	}
	if _, err := b.Stats(); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Stats after Close: %v", err)
	}
}

// A node whose data does not match its hash would pin a wrong value at that address forever (put-if-absent): the
// whole call is refused.
func TestBoltRefusesWrongHash(t *testing.T) {
	b := openBolt(t, filepath.Join(t.TempDir(), "db"), nil)
	nodes := testNodes(1, 3, 100)
	nodes[1].Hash = nodes[2].Hash
	if _, err := b.PutNodes(context.Background(), nodes); !errors.Is(err, store.ErrCorruptNode) {
		t.Fatalf("PutNodes(wrong hash) = %v, want ErrCorruptNode", err)
	}
	mustMiss(t, b, []store.Node{nodes[0], nodes[2]})

	// PrepareNodes checks the hash before it makes a stored form, on one CPU or several: a node it prepared is
	// not checked again, so one that fails must reach PutNodes unprepared, and be refused there.
	for _, n := range []int{3, 100} {
		batch := testNodes(2, n, 100)
		batch[n/2].Hash = batch[0].Hash
		store.PrepareNodes(batch, b.NodeCodec())
		if _, err := b.PutNodes(context.Background(), batch); !errors.Is(err, store.ErrCorruptNode) {
			t.Fatalf("PutNodes(%d prepared, one with a wrong hash) = %v, want ErrCorruptNode", n, err)
		}
		mustMiss(t, b, batch[1:2])
	}
}

// A stored value changed behind the store's back is reported as corrupt, never returned.
func TestBoltDetectsCorruptValue(t *testing.T) {
	for _, format := range []string{"4", "3"} {
		t.Run("format "+format, func(t *testing.T) { testBoltDetectsCorruptChunk(t, format) })
	}
	t.Run("format 1", func(t *testing.T) {
		testBoltDetectsCorruptValue(t, format1(), func(tx *bolt.Tx, nodes []store.Node) error {
			nb := tx.Bucket([]byte("nodes"))
			return nb.Put(nodes[0].Hash[:], nb.Get(nodes[1].Hash[:]))
		})
	})
}

// chunkOf returns the bytes of a chunk and a function that replaces them: a value of the chunks bucket, or in
// format 4 the one value of a bucket of its own.
func chunkOf(tx *bolt.Tx, key []byte) ([]byte, func([]byte) error) {
	chunks := tx.Bucket([]byte("chunks"))
	if b := chunks.Bucket(key); b != nil {
		return b.Get([]byte{0}), func(v []byte) error { return b.Put([]byte{0}, v) }
	}
	return chunks.Get(key), func(v []byte) error { return chunks.Put(key, v) }
}

func testBoltDetectsCorruptChunk(t *testing.T, format string) {
	var o store.BoltOptions
	store.SetBoltFormat(&o, format)
	testBoltDetectsCorruptValue(t, &o, func(tx *bolt.Tx, nodes []store.Node) error {
		// Both nodes are in chunk 1; node 0 gets node 1's bytes, which hash to node 1's address.
		key := binary.BigEndian.AppendUint64(nil, 1)
		chunk, setChunk := chunkOf(tx, key)
		idx := tx.Bucket([]byte("chunkidx")).Get(key)
		place := map[store.Hash][2]uint32{}
		for e := idx; len(e) >= 40; e = e[40:] {
			place[store.Hash(e[:32])] = [2]uint32{binary.BigEndian.Uint32(e[32:]), binary.BigEndian.Uint32(e[36:])}
		}
		p0, p1 := place[nodes[0].Hash], place[nodes[1].Hash]
		if p0[1] == 0 || p1[1] == 0 {
			return fmt.Errorf("chunk 1 does not hold both nodes: %v", place)
		}
		v := slices.Concat(chunk[:p0[0]], chunk[p1[0]:p1[0]+p1[1]], chunk[p0[0]+p0[1]:])
		ents := slices.Clone(idx)
		for e := ents; len(e) >= 40; e = e[40:] {
			switch store.Hash(e[:32]) {
			case nodes[0].Hash:
				binary.BigEndian.PutUint32(e[36:], p1[1])
			case nodes[1].Hash:
				binary.BigEndian.PutUint32(e[32:], binary.BigEndian.Uint32(e[32:])+p1[1]-p0[1])
			}
		}
		if err := tx.Bucket([]byte("chunkidx")).Put(key, ents); err != nil {
			return err
		}
		return setChunk(v)
	})
}

func testBoltDetectsCorruptValue(t *testing.T, opts *store.BoltOptions, corrupt func(*bolt.Tx, []store.Node) error) {
	path := filepath.Join(t.TempDir(), "db")
	b, err := store.OpenBolt(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	nodes := testNodes(1, 2, 2000)
	putAll(t, b, nodes)
	b.Close()

	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error { return corrupt(tx, nodes) })
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	b = openBolt(t, path, nil)
	if _, err := b.GetNodes(context.Background(), []store.Hash{nodes[1].Hash, nodes[0].Hash}); !errors.Is(err, store.ErrCorruptNode) {
		t.Fatalf("GetNodes(corrupt) = %v, want ErrCorruptNode", err)
	}
	mustGet(t, b, nodes[1:])
}

// makeDB creates a database holding three batches of nodes (three commits) and closes it.
func makeDB(t *testing.T, opts *store.BoltOptions) (path string, batches [][]store.Node) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "db.strata")
	b, err := store.OpenBolt(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		nodes := testNodes(i, 100, 4000)
		putAll(t, b, nodes)
		batches = append(batches, nodes)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return path, batches
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

// refuse checks that OpenBolt refuses path with an error matching target whose message names the file and contains
// each of want, and that the file was not touched.
func refuse(t *testing.T, path string, opts *store.BoltOptions, target error, want ...string) {
	t.Helper()
	before := fileSum(t, path)
	b, err := store.OpenBolt(path, opts)
	if err == nil {
		b.Close()
		t.Fatal("OpenBolt succeeded")
	}
	t.Logf("refused: %v", err)
	if !errors.Is(err, target) {
		t.Errorf("error does not match %v", target)
	}
	msg := err.Error()
	for _, w := range append([]string{path}, want...) {
		if !strings.Contains(msg, w) {
			t.Errorf("error does not mention %q", w)
		}
	}
	if fileSum(t, path) != before {
		t.Error("OpenBolt changed a file it refused")
	}
}

func metaTxids(t *testing.T, path string) (txid [2]uint64, pageSize int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tx0, ps, problem := store.ParseBoltMeta(data)
	if problem != "" {
		t.Fatalf("meta page 0: %s", problem)
	}
	tx1, ps1, problem := store.ParseBoltMeta(data[ps:])
	if problem != "" || ps1 != ps {
		t.Fatalf("meta page 1: %s (page size %d)", problem, ps1)
	}
	return [2]uint64{tx0, tx1}, ps
}

func TestBoltRefusesTruncated(t *testing.T) {
	// A small first map keeps the file close to its high-water mark (bbolt grows the file to the map's size while
	// that is under 16 MiB, and by 16 MiB past the high-water mark beyond it).
	path, batches := makeDB(t, &store.BoltOptions{InitialMmapSize: 1})
	b := openBolt(t, path, nil)
	st, err := b.Stats()
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	_, ps := metaTxids(t, path)
	t.Logf("file %d bytes, high-water mark %d bytes, page size %d", st.FileBytes, st.UsedBytes, ps)
	// Half the file may still cover every page in use (bbolt grows the file ahead of use): then it must open, and
	// serve every node.
	halfOK := st.FileBytes/2 >= st.UsedBytes

	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		size int64
		ok   bool
	}{
		{"half the file", st.FileBytes / 2, halfOK},
		{"half the pages in use", st.UsedBytes / 2, false},
		{"100 bytes", 100, false},
		{"one page", int64(ps), false},
		{"two pages", 2 * int64(ps), false},
		{"high-water mark less one byte", st.UsedBytes - 1, false},
		{"high-water mark less one page", st.UsedBytes - int64(ps), false},
		{"exactly the high-water mark", st.UsedBytes, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, orig[:tc.size], 0o600); err != nil {
				t.Fatal(err)
			}
			if !tc.ok {
				want := "truncated"
				if tc.size < 80 {
					want = "not a strata database"
				}
				refuse(t, path, nil, store.ErrBadFile, want, "backup")
				return
			}
			b := openBolt(t, path, nil)
			for _, nodes := range batches {
				mustGet(t, b, nodes)
			}
		})
	}
}

// A file truncated while it is open makes reads fault on the map (SIGBUS). The store stops instead of the process,
// and Close releases the file.
func TestBoltTruncatedWhileOpen(t *testing.T) {
	for _, keep := range []string{"half", "nothing"} {
		t.Run(keep, func(t *testing.T) {
			path, batches := makeDB(t, &store.BoltOptions{InitialMmapSize: 1})
			b, err := store.OpenBolt(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			st, err := b.Stats()
			if err != nil {
				t.Fatal(err)
			}
			mustGet(t, b, batches[0])
			size := int64(0)
			if keep == "half" {
				size = st.UsedBytes / 2
			}
			if err := os.Truncate(path, size); err != nil {
				t.Fatal(err)
			}
			var all []store.Hash
			for _, nodes := range batches {
				for _, n := range nodes {
					all = append(all, n.Hash)
				}
			}
			_, err = b.GetNodes(context.Background(), all)
			t.Logf("GetNodes after truncation: %v", err)
			if !errors.Is(err, store.ErrFailStop) {
				t.Fatalf("GetNodes on a truncated file = %v, want ErrFailStop", err)
			}
			if _, err := b.PutNodes(context.Background(), testNodes(7, 1, 10)); !errors.Is(err, store.ErrFailStop) {
				t.Fatalf("PutNodes after a fault = %v, want ErrFailStop", err)
			}
			done := make(chan error)
			go func() { done <- b.Close() }()
			select {
			case err := <-done:
				t.Logf("Close: %v", err)
			case <-time.After(10 * time.Second):
				t.Fatal("Close hangs after a fault")
			}
			if keep == "half" {
				refuse(t, path, &store.BoltOptions{Timeout: time.Second}, store.ErrBadFile, "truncated")
			}
		})
	}
}

func TestBoltRefusesDamagedMeta(t *testing.T) {
	path, batches := makeDB(t, nil)
	txids, ps := metaTxids(t, path)
	newest := 0
	if txids[1] > txids[0] {
		newest = 1
	}
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	damage := func(t *testing.T, page int, f func(p []byte)) {
		data := bytes.Clone(orig)
		f(data[page*ps : (page+1)*ps])
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for page := range 2 {
		t.Run(fmt.Sprintf("zeroed page %d", page), func(t *testing.T) {
			damage(t, page, func(p []byte) { clear(p) })
			refuse(t, path, nil, store.ErrBadFile, fmt.Sprintf("meta page %d is damaged", page), "--allow-meta-rollback")
		})
		t.Run(fmt.Sprintf("bit flip in page %d", page), func(t *testing.T) {
			damage(t, page, func(p []byte) { p[16+40] ^= 0x10 }) // a bit of the high-water mark
			refuse(t, path, nil, store.ErrBadFile, "checksum mismatch", "--allow-meta-rollback")
		})
	}
	t.Run("both zeroed", func(t *testing.T) {
		damage(t, 0, func(p []byte) { clear(p) })
		data, _ := os.ReadFile(path)
		clear(data[ps : 2*ps])
		os.WriteFile(path, data, 0o600)
		refuse(t, path, &store.BoltOptions{AllowMetaRollback: true}, store.ErrBadFile)
	})

	// With AllowMetaRollback, damage to the newest meta page opens the database as of the transaction before: the
	// last commit is gone, the earlier ones are intact, and the next commit repairs the page.
	t.Run("rollback", func(t *testing.T) {
		damage(t, newest, func(p []byte) { clear(p) })
		b := openBolt(t, path, &store.BoltOptions{AllowMetaRollback: true})
		mustGet(t, b, batches[0])
		mustGet(t, b, batches[1])
		mustMiss(t, b, batches[2])
		if st, err := b.Stats(); err != nil || st.Nodes != 200 {
			t.Fatalf("Stats() = %+v, %v; want 200 nodes", st, err)
		}
		putAll(t, b, batches[2])
		b.Close()
		b = openBolt(t, path, nil)
		for _, nodes := range batches {
			mustGet(t, b, nodes)
		}
	})
}

func TestBoltRefusesForeignFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	garbage := make([]byte, 64<<10)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(garbage)
	sqlite := append([]byte("SQLite format 3\x00"), make([]byte, 8192)...)
	json := bytes.Repeat([]byte(`{"not":"a database"}`+"\n"), 1000)

	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"random garbage", garbage},
		{"ten bytes", []byte("0123456789")},
		{"sqlite", sqlite},
		{"json", json},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refuse(t, write(tc.name, tc.data), nil, store.ErrBadFile, "not a strata database", "check the path")
		})
	}

	t.Run("directory", func(t *testing.T) {
		if _, err := store.OpenBolt(dir, nil); err == nil {
			t.Fatal("OpenBolt(directory) succeeded")
		}
	})

	// bbolt files that are not (this format of) Strata databases.
	boltFile := func(name string, fill func(tx *bolt.Tx) error) string {
		path := filepath.Join(dir, name)
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Update(fill); err != nil {
			t.Fatal(err)
		}
		return path
	}
	t.Run("other program's bbolt", func(t *testing.T) {
		path := boltFile("other", func(tx *bolt.Tx) error {
			b, err := tx.CreateBucket([]byte("users"))
			if err != nil {
				return err
			}
			return b.Put([]byte("alice"), []byte("x"))
		})
		refuse(t, path, nil, store.ErrBadFile, "another program")
	})
	t.Run("meta without format", func(t *testing.T) {
		path := boltFile("noformat", func(tx *bolt.Tx) error {
			_, err := tx.CreateBucket([]byte("meta"))
			return err
		})
		refuse(t, path, nil, store.ErrBadFile, "strata-format")
	})
	t.Run("format 5", func(t *testing.T) {
		path := boltFile("format5", func(tx *bolt.Tx) error {
			for _, name := range []string{"meta", "chunks", "chunkidx"} {
				if _, err := tx.CreateBucket([]byte(name)); err != nil {
					return err
				}
			}
			return tx.Bucket([]byte("meta")).Put([]byte("strata-format"), []byte("5"))
		})
		refuse(t, path, nil, store.ErrFormat, `format "5"`, "formats 1, 2, 3 and 4")
	})
	for format, buckets := range map[string][]string{"1": {"meta"}, "2": {"meta", "chunks"}, "3": {"meta", "chunkidx"},
		"4": {"meta", "chunks"}} {
		t.Run("format "+format+" without its node buckets", func(t *testing.T) {
			path := boltFile("nonodes"+format, func(tx *bolt.Tx) error {
				for _, name := range buckets {
					if _, err := tx.CreateBucket([]byte(name)); err != nil {
						return err
					}
				}
				return tx.Bucket([]byte("meta")).Put([]byte("strata-format"), []byte(format))
			})
			refuse(t, path, nil, store.ErrBadFile, "bucket", "restore it from a backup")
		})
	}
	t.Run("empty bbolt file", func(t *testing.T) {
		// A bbolt file with no buckets (a crash during creation) becomes a new database.
		path := boltFile("nobuckets", func(tx *bolt.Tx) error { return nil })
		b := openBolt(t, path, nil)
		putAll(t, b, testNodes(1, 2, 100))
	})
}

func TestBoltLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	first := openBolt(t, path, nil)
	nodes := testNodes(1, 5, 500)
	putAll(t, first, nodes)

	start := time.Now()
	second, err := store.OpenBolt(path, &store.BoltOptions{Timeout: 300 * time.Millisecond})
	elapsed := time.Since(start)
	if err == nil {
		second.Close()
		t.Fatal("second OpenBolt on an open file succeeded")
	}
	t.Logf("second open after %v: %v", elapsed, err)
	if !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), "another process") || !strings.Contains(err.Error(), path) {
		t.Fatalf("second OpenBolt: %v; want ErrLocked naming the file and another process", err)
	}
	if elapsed < 250*time.Millisecond || elapsed > 3*time.Second {
		t.Fatalf("second OpenBolt gave up after %v, want about 300ms", elapsed)
	}
	mustGet(t, first, nodes) // the first is undisturbed

	// Once the first closes, a waiting opener gets the file.
	done := make(chan error, 1)
	go func() {
		b, err := store.OpenBolt(path, &store.BoltOptions{Timeout: 5 * time.Second})
		if err == nil {
			mustGet(t, b, nodes)
			err = b.Close()
		}
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	first.Close()
	if err := <-done; err != nil {
		t.Fatalf("open after the first closed: %v", err)
	}
}

// TestBoltFailStop injects an I/O error into a commit: the test reaches the *os.File that bbolt writes through (via
// the openFile hook) and closes it, so the commit's file writes (pwrite, or the ftruncate that grows the file) fail
// with "file already closed", through bbolt's real error path. The store must then refuse every call, reads
// included, until it is reopened; and the failed commit must have had no effect.
func TestBoltFailStop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	var mu sync.Mutex
	var file *os.File
	opts := &store.BoltOptions{}
	store.SetBoltOpenFile(opts, func(name string, flag int, mode os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, mode)
		mu.Lock()
		file = f
		mu.Unlock()
		return f, err
	})
	b, err := store.OpenBolt(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	good := testNodes(1, 20, 4000)
	putAll(t, b, good)

	mu.Lock()
	file.Close()
	mu.Unlock()
	lost := testNodes(2, 20, 4000)
	_, err = b.PutNodes(ctx, lost)
	t.Logf("failed commit: %v", err)
	if !errors.Is(err, store.ErrFailStop) {
		t.Fatalf("PutNodes with a failing commit = %v, want ErrFailStop", err)
	}
	if _, err := b.GetNodes(ctx, []store.Hash{good[0].Hash}); !errors.Is(err, store.ErrFailStop) {
		t.Fatalf("GetNodes after fail-stop = %v, want ErrFailStop", err)
	}
	if _, err := b.PutNodes(ctx, testNodes(3, 1, 10)); !errors.Is(err, store.ErrFailStop) {
		t.Fatalf("PutNodes after fail-stop = %v, want ErrFailStop", err)
	}
	if _, err := b.PutNodes(ctx, nil); !errors.Is(err, store.ErrFailStop) {
		t.Fatalf("empty PutNodes after fail-stop = %v, want ErrFailStop", err)
	}
	if _, err := b.Stats(); !errors.Is(err, store.ErrFailStop) {
		t.Fatalf("Stats after fail-stop = %v, want ErrFailStop", err)
	}
	_ = b.Close() // bbolt cannot unlock a closed file; the lock went with the descriptor

	b = openBolt(t, path, nil)
	mustGet(t, b, good)
	mustMiss(t, b, lost)
	putAll(t, b, lost)
	mustGet(t, b, lost)
}

// Random damage to the file's data pages (not its meta pages): flipped bytes, zeroed pages, garbage pages, pages
// copied over others. Each round is either refused at open, or its reads report nodes as missing, corrupt or
// fail-stop; it never crashes the process (bbolt, left alone, panics in a goroutine of its own on most of these) or
// returns wrong bytes.
func TestBoltDamagedPages(t *testing.T) {
	path, batches := makeDB(t, &store.BoltOptions{InitialMmapSize: 1})
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, ps := metaTxids(t, path)
	npages := len(orig) / ps
	var all []store.Node
	for _, b := range batches {
		all = append(all, b...)
	}
	rounds := 300
	if testing.Short() {
		rounds = 60
	}
	r := rand.New(rand.NewPCG(3, 3))
	outcomes := map[string]int{}
	for round := range rounds {
		data := bytes.Clone(orig)
		page := func() []byte { p := 2 + r.IntN(npages-2); return data[p*ps : (p+1)*ps] }
		switch round % 5 {
		case 0, 1: // flipped bytes, anywhere or in page headers
			for range 1 + round%3 {
				p := page()
				i := r.IntN(len(p))
				if round%5 == 1 {
					i = r.IntN(64)
				}
				p[i] ^= byte(1 + r.IntN(255))
			}
		case 2:
			clear(page())
		case 3:
			p := page()
			for i := 16; i < len(p); i++ {
				p[i] = byte(r.Uint32())
			}
		case 4:
			o := 2 + r.IntN(npages-2)
			copy(page(), orig[o*ps:(o+1)*ps])
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := store.OpenBolt(path, nil)
		if err != nil {
			if !errors.Is(err, store.ErrBadFile) {
				t.Fatalf("round %d: open: %v", round, err)
			}
			outcomes["refused at open"]++
			continue
		}
		for _, n := range all {
			got, err := b.GetNodes(context.Background(), []store.Hash{n.Hash})
			switch {
			case err == nil:
				if !bytes.Equal(got[0], n.Data) {
					t.Fatalf("round %d: node %s read back wrong", round, n.Hash.Short())
				}
				outcomes["node ok"]++
			case errors.Is(err, store.ErrNodeMissing):
				outcomes["node missing"]++
			case errors.Is(err, store.ErrCorruptNode):
				outcomes["node corrupt"]++
			case errors.Is(err, store.ErrFailStop):
				outcomes["fail-stop"]++
			default:
				t.Fatalf("round %d: GetNodes: %v", round, err)
			}
		}
		if _, err := b.PutNodes(context.Background(), testNodes(1000+round, 3, 3000)); err != nil {
			outcomes["put failed"]++
		}
		b.Close()
	}
	t.Logf("%d rounds: %v", rounds, outcomes)
}

func BenchmarkBoltPutNodes(b *testing.B) {
	s := openBolt(b, filepath.Join(b.TempDir(), "db"), nil)
	ctx := context.Background()
	batches := make([][]store.Node, b.N)
	for i := range batches {
		batches[i] = testNodes(1000+i, 4, 4096)
	}
	b.SetBytes(4 * 4096)
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.PutNodes(ctx, batches[i]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBoltGetNodes(b *testing.B) {
	s := openBolt(b, filepath.Join(b.TempDir(), "db"), nil)
	ctx := context.Background()
	var hs []store.Hash
	for i := range 250 {
		nodes := testNodes(i, 4, 4096)
		putAll(b, s, nodes)
		for _, n := range nodes {
			hs = append(hs, n.Hash)
		}
	}
	r := rand.New(rand.NewPCG(1, 1))
	for _, h := range hs { // warm the page cache
		if _, err := s.GetNodes(ctx, []store.Hash{h}); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(4 * 4096)
	b.ResetTimer()
	for range b.N {
		batch := []store.Hash{hs[r.IntN(len(hs))], hs[r.IntN(len(hs))], hs[r.IntN(len(hs))], hs[r.IntN(len(hs))]}
		if _, err := s.GetNodes(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBoltRevisionCache: revision records are served from a cache of decoded records only while the stored bytes are
// the ones they were decoded from, and callers get copies.
func TestBoltRevisionCache(t *testing.T) {
	ctx := context.Background()
	b := openBolt(t, filepath.Join(t.TempDir(), "revs.strata"), nil)
	defer b.Close()
	add := func(rec store.RevisionRecord) {
		t.Helper()
		if err := b.Update(ctx, func(tx store.CatalogTx) error { return tx.AddRevision(rec) }); err != nil {
			t.Fatal(err)
		}
	}
	read := func(n uint64) (store.RevisionRecord, error) {
		var rec store.RevisionRecord
		err := b.View(ctx, func(c store.CatalogReader) error {
			var err error
			rec, err = c.Revision(n)
			return err
		})
		return rec, err
	}
	add(store.RevisionRecord{Number: 1, Root: []byte{1}, Branch: "main", Message: "one"})
	add(store.RevisionRecord{Number: 2, Root: []byte{2}, Parents: []uint64{1}, Branch: "main", Message: "two", Resources: []string{"a"}})
	for i := 0; i < 2; i++ { // a miss, then a hit
		got, err := read(2)
		if err != nil || got.Message != "two" || got.Parents[0] != 1 || got.Resources[0] != "a" || got.Root[0] != 2 {
			t.Fatalf("read %d: %+v, %v", i, got, err)
		}
		got.Parents[0], got.Resources[0], got.Root[0] = 9, "changed by the caller", 9 // must not reach the cache
	}
	// A record read inside a transaction that rolls back is cached, and must not answer for the one committed later.
	errRollback := errors.New("roll back")
	err := b.Update(ctx, func(tx store.CatalogTx) error {
		if err := tx.AddRevision(store.RevisionRecord{Number: 3, Root: []byte{3}, Branch: "main", Message: "rolled back"}); err != nil {
			return err
		}
		if got, err := tx.Revision(3); err != nil || got.Message != "rolled back" {
			t.Fatalf("revision 3 inside its transaction: %+v, %v", got, err)
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatal(err)
	}
	add(store.RevisionRecord{Number: 3, Root: []byte{4}, Branch: "main", Message: "three"})
	if got, err := read(3); err != nil || got.Message != "three" || got.Root[0] != 4 {
		t.Fatalf("revision 3 read as %+v, %v", got, err)
	}
	// A revision garbage collection removed is gone, though it was cached.
	if err := b.Update(ctx, func(tx store.CatalogTx) error { return tx.DeleteRevision(2) }); err != nil {
		t.Fatal(err)
	}
	if got, err := read(2); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted revision 2 read as %+v, %v", got, err)
	}
}

package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func indexTestNodes(seed, n int) []Node {
	out := make([]Node, n)
	for i := range out {
		data := fmt.Appendf(nil, `{"seed":%d,"i":%d,"pad":"%0400d"}`, seed, i, i)
		out[i] = Node{Hash: HashOf(data), Data: data}
	}
	return out
}

// Two Shared handles on one file take turns, as two processes do. Each keeps its node index across reopens: it
// loads only the chunks the other added, and reloads the whole index once the other has removed nodes, so that it
// never finds a removed node nor misses an added one.
func TestSharedIndexFollowsOtherWriters(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.strata")
	open := func() *Shared {
		s, err := OpenShared(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	one, two := open(), open()
	put := func(s *Shared, nodes []Node) {
		t.Helper()
		if err := s.Update(ctx, func(tx CatalogTx) error { _, err := tx.PutNodes(nodes); return err }); err != nil {
			t.Fatal(err)
		}
	}
	has := func(s *Shared, nodes []Node, want bool) {
		t.Helper()
		for _, n := range nodes {
			got, err := s.GetNodes(ctx, []Hash{n.Hash})
			var miss *MissingError
			switch {
			case want && (err != nil || string(got[0]) != string(n.Data)):
				t.Fatalf("node %s: %v, want its data", n.Hash.Short(), err)
			case !want && !errors.As(err, &miss):
				t.Fatalf("node %s: %v, want missing", n.Hash.Short(), err)
			}
		}
	}
	a, b, c := indexTestNodes(1, 50), indexTestNodes(2, 50), indexTestNodes(3, 50)
	put(one, a)
	has(two, a, true)
	put(two, b)
	m := one.index.m
	has(one, b, true)
	if one.index.m == nil || fmt.Sprintf("%p", one.index.m) != fmt.Sprintf("%p", m) {
		t.Fatal("a reopen without removals reloaded the whole index")
	}
	// two removes half of a and all of b, then adds c.
	err := two.Update(ctx, func(tx CatalogTx) error {
		var hs []Hash
		for _, n := range append(a[:25:25], b...) {
			hs = append(hs, n.Hash)
		}
		k, _, err := tx.DeleteNodes(hs)
		if err == nil && k != 75 {
			err = fmt.Errorf("DeleteNodes removed %d, want 75", k)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	put(two, c)
	has(one, a[:25], false)
	has(one, b, false)
	has(one, a[25:], true)
	has(one, c, true)
	list, err := one.NodeHashes(ctx, nil, 1000)
	if err != nil || len(list) != 75 {
		t.Fatalf("NodeHashes = %d hashes, %v; want 75", len(list), err)
	}
	// Putting a removed node again stores it again.
	put(one, b[:1])
	has(two, b[:1], true)
}

// After a failed commit the store stops and Shared reopens the file. The node index it keeps across reopens must
// not keep the failed transaction's nodes: their chunk numbers are handed out again, so a later put of the same
// nodes would be taken for present, and a read would find another node's bytes.
func TestSharedIndexAfterFailedCommit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "fail.strata")
	var mu sync.Mutex
	var file *os.File
	var o SharedOptions
	o.Bolt.openFile = func(name string, flag int, mode os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, mode)
		mu.Lock()
		file = f
		mu.Unlock()
		return f, err
	}
	s, err := OpenShared(path, &o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put := func(nodes []Node) error {
		return s.Update(ctx, func(tx CatalogTx) error { _, err := tx.PutNodes(nodes); return err })
	}
	good, lost, other := indexTestNodes(1, 20), indexTestNodes(2, 20), indexTestNodes(3, 20)
	if err := put(good); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	file.Close()
	mu.Unlock()
	if err := put(lost); !errors.Is(err, ErrFailStop) {
		t.Fatalf("put with a failing commit = %v, want ErrFailStop", err)
	}
	for _, nodes := range [][]Node{other, lost} {
		// The first call after the failure may still meet the stopped store; the next reopens the file.
		if err := put(nodes); errors.Is(err, ErrFailStop) {
			err = put(nodes)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, nodes := range [][]Node{good, other, lost} {
		for _, n := range nodes {
			got, err := s.GetNodes(ctx, []Hash{n.Hash})
			if err != nil || string(got[0]) != string(n.Data) {
				t.Fatalf("node %s after the failed commit and a reopen: %v", n.Hash.Short(), err)
			}
		}
	}
}

// Shared's NodeCodec, the hint writers compress with, follows the file it reopens: a format-2 file says S2, and once
// a format-3 file has replaced it (a restore, say), zstd.
func TestSharedCodecFollowsTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "db.strata")
	s, err := OpenShared(path, &SharedOptions{Bolt: BoltOptions{format: boltFormat2}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if c := s.NodeCodec(); c != CodecS2 {
		t.Fatalf("format-2 file: NodeCodec %d, want S2", c)
	}
	newer := filepath.Join(dir, "newer.strata")
	b, err := OpenBolt(newer, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	// Shared closes the file once its linger passes; the next call opens what is at the path then.
	s.mu.Lock()
	for s.b != nil {
		s.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		s.mu.Lock()
	}
	s.mu.Unlock()
	if err := os.Rename(newer, path); err != nil {
		t.Fatal(err)
	}
	if _, err := s.NodeHashes(context.Background(), nil, 1); err != nil {
		t.Fatal(err)
	}
	if c := s.NodeCodec(); c != CodecZstd {
		t.Fatalf("after a format-%s file replaced it: NodeCodec %d, want zstd", BoltFormat, c)
	}
	// The layout follows the file too: a chunk written now is a bucket of its own, as format 4 wants.
	nodes := indexTestNodes(9, 2)
	if _, err := s.PutNodes(context.Background(), nodes); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetNodes(context.Background(), []Hash{nodes[1].Hash}); err != nil || string(got[0]) != string(nodes[1].Data) {
		t.Fatalf("GetNodes after the swap: %v", err)
	}
	s.Close()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_ = db.View(func(tx *bolt.Tx) error {
		chunks := tx.Bucket(bucketChunks)
		if chunks.Bucket(be64(chunks.Sequence())) == nil {
			t.Errorf("chunk %d, written after the swap, is not a bucket: the layout of the format-2 file was kept",
				chunks.Sequence())
		}
		return nil
	})
}

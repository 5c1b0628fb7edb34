package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func indexOf(n int) *nodeIndex {
	x := &nodeIndex{m: map[Hash]loc{}}
	for i := range n {
		x.m[Hash(sha256.Sum256(binary.BigEndian.AppendUint64(nil, uint64(i))))] = loc{chunk: 1}
	}
	return x
}

// Paging through the index lists every hash once, in order, leaves out those removed meanwhile, and a listing from
// the start sees those added since the last one.
func TestNodeIndexHashes(t *testing.T) {
	x := indexOf(1000)
	var all []Hash
	var after *Hash
	for page := 0; ; page++ {
		hs := x.hashes(after, 64)
		if len(hs) == 0 {
			break
		}
		all = append(all, hs...)
		after = &hs[len(hs)-1]
		if page == 3 {
			// Remove the next page's first hash and the very last one, as garbage collection would.
			next := x.hashes(after, 1)
			delete(x.m, next[0])
			delete(x.m, x.sorted[len(x.sorted)-1])
		}
	}
	if len(all) != 998 || !slices.IsSortedFunc(all, func(a, b Hash) int { return bytes.Compare(a[:], b[:]) }) {
		t.Fatalf("paging listed %d hashes (want 998, in order)", len(all))
	}
	for _, h := range all {
		if _, ok := x.m[h]; !ok {
			t.Fatalf("a removed hash was listed")
		}
	}
	h := Hash{0xff, 0xff}
	x.m[h] = loc{}
	if hs := x.hashes(nil, 2000); len(hs) != 999 || hs[len(hs)-1] != h {
		t.Fatalf("a listing from the start after an addition: %d hashes, want 999 ending with the new one", len(hs))
	}
}

// BenchmarkNodeHashesPages lists a 1,000,000-node index in garbage collection's pages of 4,000: one sort, then a
// binary search per page (it sorted everything again for every page: 41 s).
func BenchmarkNodeHashesPages(b *testing.B) {
	x := indexOf(1_000_000)
	for b.Loop() {
		x.sorted = nil
		var after *Hash
		for {
			hs := x.hashes(after, 4000)
			if len(hs) == 0 {
				break
			}
			after = &hs[len(hs)-1]
		}
	}
}

// A node whose chunk is gone (a damaged file) is stored again by the next write that brings it, as format 1 would.
func TestChunkGoneIsStoredAgain(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gone.strata")
	b, err := OpenBolt(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	nodes := indexTestNodes(4, 3)
	if _, err := b.PutNodes(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	b.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketChunks).DeleteBucket(be64(1)) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if b, err = OpenBolt(path, nil); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.GetNodes(ctx, []Hash{nodes[0].Hash}); err == nil {
		t.Fatal("a node whose chunk was deleted was read")
	}
	st, err := b.PutNodes(ctx, nodes)
	if err != nil || st.Nodes != 3 {
		t.Fatalf("PutNodes again = %+v, %v; want the 3 nodes stored again", st, err)
	}
	got, err := b.GetNodes(ctx, []Hash{nodes[0].Hash, nodes[2].Hash})
	if err != nil || string(got[0]) != string(nodes[0].Data) || string(got[1]) != string(nodes[2].Data) {
		t.Fatalf("GetNodes after storing again: %v", err)
	}
}

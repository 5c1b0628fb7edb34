// Package storetest checks that a store.NodeStore keeps the contract documented on store.NodeReader and
// store.NodeWriter, in the style of testing/fstest.TestFS. Every implementation runs the same suite:
//
//	func TestMyStore(t *testing.T) {
//		storetest.TestNodeStore(t, func(t *testing.T) store.NodeStore { return openMyStore(t) })
//	}
//
// open is called once per subtest and must return an empty store; it should register its own cleanup (t.Cleanup).
// Run the suite under -race: one subtest drives the store from 8 goroutines at once.
package storetest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/strata-db/strata/store"
)

// TestNodeStore runs the conformance suite against stores returned by open.
func TestNodeStore(t *testing.T, open func(t *testing.T) store.NodeStore) {
	t.Helper()
	t.Run("PutGetMany", func(t *testing.T) { testPutGetMany(t, open(t)) })
	t.Run("PutIfAbsent", func(t *testing.T) { testPutIfAbsent(t, open(t)) })
	t.Run("Missing", func(t *testing.T) { testMissing(t, open(t)) })
	t.Run("CallerOwnsSlices", func(t *testing.T) { testCallerOwnsSlices(t, open(t)) })
	t.Run("Empty", func(t *testing.T) { testEmpty(t, open(t)) })
	t.Run("LargeAndIncompressible", func(t *testing.T) { testLarge(t, open(t)) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, open(t)) })
	t.Run("ContextCanceled", func(t *testing.T) { testContextCanceled(t, open(t)) })
}

// jsonNode returns a compressible, JSON-like node of about size bytes, distinct for each (seed, i).
func jsonNode(seed uint64, i, size int) store.Node {
	b := fmt.Appendf(make([]byte, 0, size+64), `{"seed":%d,"node":%d,"items":[`, seed, i)
	for k := 0; len(b) < size; k++ {
		b = append(b, `{"id":`...)
		b = strconv.AppendInt(b, int64(k), 10)
		b = append(b, `,"name":"item-`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, '-')
		b = strconv.AppendInt(b, int64(k), 10)
		b = append(b, `","tags":["a","b"],"ok":true},`...)
	}
	b = append(b, `null]}`...)
	return node(b)
}

// randomNode returns size incompressible bytes, so that a compressing store must fall back to storing them raw.
func randomNode(r *rand.Rand, size int) store.Node {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], r.Uint64())
	data := make([]byte, size)
	_, _ = rand.NewChaCha8(seed).Read(data)
	return node(data)
}

func node(data []byte) store.Node { return store.Node{Hash: store.HashOf(data), Data: data} }

func hashes(nodes []store.Node) []store.Hash {
	out := make([]store.Hash, len(nodes))
	for i, n := range nodes {
		out[i] = n.Hash
	}
	return out
}

func rawBytes(nodes []store.Node) int64 {
	var n int64
	for _, nd := range nodes {
		n += int64(len(nd.Data))
	}
	return n
}

func put(t *testing.T, s store.NodeStore, nodes []store.Node) store.PutStats {
	t.Helper()
	st, err := s.PutNodes(context.Background(), nodes)
	if err != nil {
		t.Fatalf("PutNodes(%d nodes): %v", len(nodes), err)
	}
	return st
}

// checkGet reads hashes back and compares each with want (by hash).
func checkGet(t *testing.T, s store.NodeStore, hs []store.Hash, want map[store.Hash][]byte) {
	t.Helper()
	got, err := s.GetNodes(context.Background(), hs)
	if err != nil {
		t.Fatalf("GetNodes(%d hashes): %v", len(hs), err)
	}
	if len(got) != len(hs) {
		t.Fatalf("GetNodes(%d hashes) returned %d slices", len(hs), len(got))
	}
	for i, h := range hs {
		if !bytes.Equal(got[i], want[h]) {
			t.Fatalf("GetNodes: result %d (node %s): got %d bytes, want %d bytes (order not preserved or data changed)",
				i, h.Short(), len(got[i]), len(want[h]))
		}
	}
}

// checkStats checks a PutStats against the nodes it claims to have added. The stored size is bounded rather than
// computed, so that a store may use another codec: at most one codec byte over raw per node, and smaller than raw for
// compressible data when compressible is set.
func checkStats(t *testing.T, what string, st store.PutStats, added []store.Node, compressible bool) {
	t.Helper()
	raw := rawBytes(added)
	if st.Nodes != len(added) || st.RawBytes != raw {
		t.Fatalf("%s: PutStats = %+v, want Nodes=%d RawBytes=%d", what, st, len(added), raw)
	}
	if len(added) == 0 {
		if st.StoredBytes != 0 {
			t.Fatalf("%s: PutStats = %+v: stored bytes for no new node", what, st)
		}
		return
	}
	if st.StoredBytes <= 0 || st.StoredBytes > raw+int64(len(added)) {
		t.Fatalf("%s: PutStats = %+v: StoredBytes outside (0, raw+1 per node]", what, st)
	}
	if compressible && st.StoredBytes >= raw {
		t.Fatalf("%s: PutStats = %+v: compressible nodes were not stored smaller than raw", what, st)
	}
}

func testPutGetMany(t *testing.T, s store.NodeStore) {
	var nodes []store.Node
	want := map[store.Hash][]byte{}
	for i := range 300 {
		n := jsonNode(1, i, 200+i*37%6000)
		nodes = append(nodes, n)
		want[n.Hash] = n.Data
	}
	// One call holding duplicates: each distinct node is added, and counted, once.
	batch := append(append([]store.Node{}, nodes...), nodes[0], nodes[17], nodes[17], nodes[299])
	checkStats(t, "first put", put(t, s, batch), nodes, true)

	// Read back in a shuffled order with duplicates, in one call.
	r := rand.New(rand.NewPCG(1, 2))
	hs := hashes(nodes)
	r.Shuffle(len(hs), func(i, j int) { hs[i], hs[j] = hs[j], hs[i] })
	hs = append(hs, hs[3], hs[3], hs[100], hs[0])
	checkGet(t, s, hs, want)

	// And one at a time.
	for _, h := range hs[:20] {
		checkGet(t, s, []store.Hash{h}, want)
	}
}

func testPutIfAbsent(t *testing.T, s store.NodeStore) {
	var a, b []store.Node
	for i := range 50 {
		a = append(a, jsonNode(2, i, 3000))
		b = append(b, jsonNode(3, i, 3000))
	}
	checkStats(t, "put A", put(t, s, a), a, true)
	checkStats(t, "put A again", put(t, s, a), nil, true)
	checkStats(t, "put A+B", put(t, s, append(append([]store.Node{}, a...), b...)), b, true)
	checkStats(t, "put B again, one at a time", put(t, s, b[:1]), nil, true)

	// The stats of a put are independent of earlier puts: adding up single puts gives the batch's total.
	var total store.PutStats
	for i := range 10 {
		total.Add(put(t, s, []store.Node{jsonNode(4, i, 1000)}))
	}
	var ten []store.Node
	for i := range 10 {
		ten = append(ten, jsonNode(4, i, 1000))
	}
	checkStats(t, "ten single puts", total, ten, true)

	want := map[store.Hash][]byte{}
	for _, n := range append(append(a, b...), ten...) {
		want[n.Hash] = n.Data
	}
	checkGet(t, s, hashes(append(append(a, b...), ten...)), want)
}

func checkMissing(t *testing.T, err error, missing store.Hash) {
	t.Helper()
	if err == nil {
		t.Fatalf("GetNodes with missing node %s: no error", missing.Short())
	}
	if !errors.Is(err, store.ErrNodeMissing) {
		t.Fatalf("GetNodes with missing node: error %q (%T) does not match store.ErrNodeMissing", err, err)
	}
	var me *store.MissingError
	if !errors.As(err, &me) {
		t.Fatalf("GetNodes with missing node: error %q (%T) is not a *store.MissingError", err, err)
	}
	if me.Hash != missing {
		t.Fatalf("GetNodes: MissingError names %s, want %s", me.Hash.Short(), missing.Short())
	}
}

func testMissing(t *testing.T, s store.NodeStore) {
	ctx := context.Background()
	ghost := jsonNode(5, 0, 100).Hash

	_, err := s.GetNodes(ctx, []store.Hash{ghost})
	checkMissing(t, err, ghost)

	present := []store.Node{jsonNode(5, 1, 100), jsonNode(5, 2, 100)}
	put(t, s, present)
	_, err = s.GetNodes(ctx, []store.Hash{present[0].Hash, ghost, present[1].Hash})
	checkMissing(t, err, ghost)
	_, err = s.GetNodes(ctx, []store.Hash{present[0].Hash, present[1].Hash, ghost})
	checkMissing(t, err, ghost)
	var zero store.Hash
	_, err = s.GetNodes(ctx, []store.Hash{zero})
	checkMissing(t, err, zero)

	// A failed read changes nothing.
	checkGet(t, s, hashes(present), map[store.Hash][]byte{present[0].Hash: present[0].Data, present[1].Hash: present[1].Data})
}

func testCallerOwnsSlices(t *testing.T, s store.NodeStore) {
	ctx := context.Background()
	n := jsonNode(6, 0, 2000)
	orig := bytes.Clone(n.Data)
	put(t, s, []store.Node{n})
	// The store must not keep the caller's Data slice.
	for i := range n.Data {
		n.Data[i] = 'X'
	}
	want := map[store.Hash][]byte{n.Hash: orig}
	checkGet(t, s, []store.Hash{n.Hash}, want)

	got, err := s.GetNodes(ctx, []store.Hash{n.Hash, n.Hash})
	if err != nil {
		t.Fatal(err)
	}
	for i := range got[0] {
		got[0][i] = 'Y'
	}
	if !bytes.Equal(got[1], orig) {
		t.Fatal("GetNodes: two results for the same hash share memory")
	}
	got[1] = append(got[1][:0], "overwritten"...)
	checkGet(t, s, []store.Hash{n.Hash}, want)

	// Random (raw-stored) nodes too: a raw codec must copy, not alias what it keeps.
	rn := randomNode(rand.New(rand.NewPCG(6, 6)), 3000)
	put(t, s, []store.Node{rn})
	got, err = s.GetNodes(ctx, []store.Hash{rn.Hash})
	if err != nil {
		t.Fatal(err)
	}
	clear(got[0])
	rorig := bytes.Clone(rn.Data)
	clear(rn.Data)
	checkGet(t, s, []store.Hash{rn.Hash}, map[store.Hash][]byte{rn.Hash: rorig})
}

func testEmpty(t *testing.T, s store.NodeStore) {
	ctx := context.Background()
	for _, hs := range [][]store.Hash{nil, {}} {
		got, err := s.GetNodes(ctx, hs)
		if err != nil || len(got) != 0 {
			t.Fatalf("GetNodes(%#v) = %d results, %v; want none and no error", hs, len(got), err)
		}
	}
	for _, ns := range [][]store.Node{nil, {}} {
		st, err := s.PutNodes(ctx, ns)
		if err != nil || st != (store.PutStats{}) {
			t.Fatalf("PutNodes(%#v) = %+v, %v; want zero stats and no error", ns, st, err)
		}
	}
	// A node with no bytes is still a node, with the hash of the empty string.
	e := node(nil)
	checkStats(t, "empty node", put(t, s, []store.Node{e}), []store.Node{e}, false)
	got, err := s.GetNodes(ctx, []store.Hash{e.Hash})
	if err != nil || len(got) != 1 || len(got[0]) != 0 {
		t.Fatalf("GetNodes(empty node) = %q, %v", got, err)
	}
}

func testLarge(t *testing.T, s store.NodeStore) {
	r := rand.New(rand.NewPCG(7, 7))
	big := jsonNode(7, 0, 1<<20)
	bigRandom := randomNode(r, 1<<20)
	small := []store.Node{randomNode(r, 1), randomNode(r, 17), randomNode(r, 300), randomNode(r, 4096)}

	checkStats(t, "1 MiB JSON", put(t, s, []store.Node{big}), []store.Node{big}, true)
	st := put(t, s, []store.Node{bigRandom})
	checkStats(t, "1 MiB random", st, []store.Node{bigRandom}, false)
	if st.StoredBytes < st.RawBytes {
		t.Fatalf("1 MiB of random bytes compressed to %d bytes: the test data is not random", st.StoredBytes)
	}
	checkStats(t, "small random", put(t, s, small), small, false)

	want := map[store.Hash][]byte{big.Hash: big.Data, bigRandom.Hash: bigRandom.Data}
	for _, n := range small {
		want[n.Hash] = n.Data
	}
	checkGet(t, s, []store.Hash{bigRandom.Hash, small[0].Hash, big.Hash, small[1].Hash, small[2].Hash, small[3].Hash}, want)
}

// testConcurrent runs 8 goroutines that put overlapping batches and read each other's nodes. Put-if-absent must be
// atomic: however the puts interleave, each distinct node is reported as new by exactly one of them.
func testConcurrent(t *testing.T, s store.NodeStore) {
	const workers, rounds, perRound = 8, 12, 6
	shared := make([]store.Node, 40)
	for i := range shared {
		shared[i] = jsonNode(8, i, 1500)
	}
	own := func(w, round, k int) store.Node { return jsonNode(uint64(100+w), round*perRound+k, 800+k*300) }
	want := map[store.Hash][]byte{}
	for _, n := range shared {
		want[n.Hash] = n.Data
	}
	for w := range workers {
		for round := range rounds {
			for k := range perRound {
				n := own(w, round, k)
				want[n.Hash] = n.Data
			}
		}
	}

	ctx := context.Background()
	var mu sync.Mutex
	var total store.PutStats
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 8))
			var mine store.PutStats
			for round := range rounds {
				batch := []store.Node{shared[r.IntN(len(shared))], shared[r.IntN(len(shared))]}
				for k := range perRound {
					batch = append(batch, own(w, round, k))
				}
				st, err := s.PutNodes(ctx, batch)
				if err != nil {
					errs <- fmt.Errorf("worker %d put: %w", w, err)
					return
				}
				mine.Add(st)
				// Read back what this worker wrote, plus a node another worker may be writing right now.
				hs := hashes(batch)
				got, err := s.GetNodes(ctx, hs)
				if err != nil {
					errs <- fmt.Errorf("worker %d get: %w", w, err)
					return
				}
				for i, h := range hs {
					if !bytes.Equal(got[i], want[h]) {
						errs <- fmt.Errorf("worker %d: node %s read back wrong", w, h.Short())
						return
					}
				}
				other := own((w+1)%workers, round, 0)
				if got, err := s.GetNodes(ctx, []store.Hash{other.Hash}); err == nil {
					if !bytes.Equal(got[0], other.Data) {
						errs <- fmt.Errorf("worker %d: another worker's node %s read back wrong", w, other.Hash.Short())
						return
					}
				} else if !errors.Is(err, store.ErrNodeMissing) {
					errs <- fmt.Errorf("worker %d get other: %w", w, err)
					return
				}
			}
			mu.Lock()
			total.Add(mine)
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	// Every shared node that some worker put was counted once, and every own node once.
	used := map[store.Hash]bool{}
	var added []store.Node
	for h, d := range want {
		if _, err := s.GetNodes(ctx, []store.Hash{h}); err == nil {
			used[h] = true
			added = append(added, node(d))
		}
	}
	if total.Nodes != len(added) || total.RawBytes != rawBytes(added) {
		t.Fatalf("concurrent puts reported %d new nodes (%d raw bytes), but %d distinct nodes (%d raw bytes) are stored: "+
			"put-if-absent is not atomic", total.Nodes, total.RawBytes, len(added), rawBytes(added))
	}
	all := make([]store.Hash, 0, len(used))
	for h := range used {
		all = append(all, h)
	}
	checkGet(t, s, all, want)
}

// testContextCanceled checks cancellation. A store that honours the context returns ctx.Err() and has no partial
// effect; a store that cannot block (an in-memory map) may ignore the context, but then must complete the whole
// call. What no store may do is report cancellation after writing some of the batch, or return some of the nodes.
func testContextCanceled(t *testing.T, s store.NodeStore) {
	var nodes []store.Node
	want := map[store.Hash][]byte{}
	for i := range 64 {
		n := jsonNode(9, i, 2000)
		nodes = append(nodes, n)
		want[n.Hash] = n.Data
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()

	st, err := s.PutNodes(canceled, nodes)
	checkAllOrNothing(t, s, "PutNodes(canceled)", st, err, nodes, canceled)

	// Reads of present nodes with a canceled context: all results or ctx.Err().
	put(t, s, nodes)
	got, err := s.GetNodes(canceled, hashes(nodes))
	switch {
	case err == nil:
		t.Logf("GetNodes ignores a canceled context")
		if len(got) != len(nodes) {
			t.Fatalf("GetNodes(canceled) returned %d of %d nodes and no error", len(got), len(nodes))
		}
	case !errors.Is(err, context.Canceled):
		t.Fatalf("GetNodes(canceled) = %v, want context.Canceled", err)
	}

	// Cancel while a put is running: whatever the timing, all or nothing.
	for round := range 5 {
		var batch []store.Node
		for i := range 200 {
			batch = append(batch, jsonNode(uint64(10+round), i, 3000))
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			st, err = s.PutNodes(ctx, batch)
		}()
		if round > 0 {
			for range round * 1000 {
				_ = ctx.Err() // spin a little, so the cancel lands at different points
			}
		}
		cancel()
		<-done
		checkAllOrNothing(t, s, fmt.Sprintf("PutNodes canceled midway (round %d)", round), st, err, batch, ctx)
	}
}

func checkAllOrNothing(t *testing.T, s store.NodeStore, what string, st store.PutStats, err error, batch []store.Node, ctx context.Context) {
	t.Helper()
	present := 0
	for _, n := range batch {
		if _, gerr := s.GetNodes(context.Background(), []store.Hash{n.Hash}); gerr == nil {
			present++
		} else if !errors.Is(gerr, store.ErrNodeMissing) {
			t.Fatalf("%s: reading back: %v", what, gerr)
		}
	}
	switch {
	case err == nil:
		if present != len(batch) {
			t.Fatalf("%s: no error, but only %d of %d nodes are stored", what, present, len(batch))
		}
		checkStats(t, what, st, batch, true)
	case errors.Is(err, ctx.Err()):
		if present != 0 {
			t.Fatalf("%s: returned %v, but %d of %d nodes were stored (partial effect)", what, err, present, len(batch))
		}
		if st != (store.PutStats{}) {
			t.Fatalf("%s: returned %v with non-zero stats %+v", what, err, st)
		}
	default:
		t.Fatalf("%s: error %v, want nil or %v", what, err, ctx.Err())
	}
}

package revision

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/strata-db/strata/revision/internal/codec"
	"github.com/strata-db/strata/store"
)

// Micro-benchmarks on the docs/benchmarks.md workload (an array of n small objects, see userDoc). Run them with, e.g.:
//
//	go test -run='^$' -bench=. -benchtime=20x ./revision/
//
// The documents and their imported trees are built once per process and shared by every benchmark (the 1M-element
// document is ~96 MB of JSON and takes seconds to import). n = 1,000,000 is skipped under -short.

// benchSizes are the document sizes every benchmark runs on.
var benchSizes = []int{1_000, 100_000, 1_000_000}

// benchFixture is one workload document and what the benchmarks derive from it, each computed at most once.
type benchFixture struct {
	n int

	docOnce sync.Once
	doc     []byte

	treeOnce sync.Once
	f        *Forest
	ms       *store.Mem
	root     Value
	treeErr  error

	warmOnce sync.Once
	warmErr  error

	anyOnce sync.Once
	anyV    any
	anyErr  error
}

var (
	benchMu       sync.Mutex
	benchFixtures = map[int]*benchFixture{}
)

// fixture returns the shared fixture for n (not yet built).
func fixture(n int) *benchFixture {
	benchMu.Lock()
	defer benchMu.Unlock()
	fx := benchFixtures[n]
	if fx == nil {
		fx = &benchFixture{n: n}
		benchFixtures[n] = fx
	}
	return fx
}

// Doc returns the JSON text of the workload document.
func (fx *benchFixture) Doc() []byte {
	fx.docOnce.Do(func() { fx.doc = userDoc(fx.n) })
	return fx.doc
}

// Tree returns a forest holding the imported document and its root. The forest's cache starts cold.
func (fx *benchFixture) Tree(tb testing.TB) (*Forest, Value) {
	tb.Helper()
	fx.treeOnce.Do(func() {
		fx.f, fx.ms = newForest(tb)
		fx.root, _, fx.treeErr = fx.f.ImportBytes(context.Background(), fx.Doc())
	})
	if fx.treeErr != nil {
		tb.Fatalf("import userDoc(%d): %v", fx.n, fx.treeErr)
	}
	return fx.f, fx.root
}

// WarmTree is Tree with every node of the document decoded into the forest's cache.
func (fx *benchFixture) WarmTree(tb testing.TB) (*Forest, Value) {
	tb.Helper()
	f, root := fx.Tree(tb)
	fx.warmOnce.Do(func() { fx.warmErr = f.WriteJSON(context.Background(), io.Discard, root) })
	if fx.warmErr != nil {
		tb.Fatalf("warm userDoc(%d): %v", fx.n, fx.warmErr)
	}
	return f, root
}

// Any returns the document decoded by encoding/json into Go values.
func (fx *benchFixture) Any(tb testing.TB) any {
	tb.Helper()
	fx.anyOnce.Do(func() { fx.anyErr = json.Unmarshal(fx.Doc(), &fx.anyV) })
	if fx.anyErr != nil {
		tb.Fatalf("unmarshal userDoc(%d): %v", fx.n, fx.anyErr)
	}
	return fx.anyV
}

// forSizes runs fn as a sub-benchmark "n=N" for every benchmark size.
func forSizes(b *testing.B, fn func(b *testing.B, fx *benchFixture)) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			if n >= 1_000_000 && testing.Short() {
				b.Skip("n=1,000,000 skipped in -short mode")
			}
			fn(b, fixture(n))
		})
	}
}

func BenchmarkImport(b *testing.B) {
	ctx := context.Background()
	forSizes(b, func(b *testing.B, fx *benchFixture) {
		doc := fx.Doc()
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		var st Stats
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			f := New(store.NewMem(), nil)
			var err error
			if _, st, err = f.Import(ctx, bytes.NewReader(doc)); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(st.Nodes), "nodes")
		b.ReportMetric(float64(st.StoredBytes)/float64(len(doc)), "stored/json")
	})
}

// replaceScore is a single-field commit's patch on the benchmark document: a random element's score. Scores in the
// document are i%100; 100+ always differs, so the replace is never a no-op.
func replaceScore(rng *rand.Rand, n int) string {
	return fmt.Sprintf(`[{"op":"replace","path":"/%d/score","value":%d}]`, rng.Intn(n), 100+rng.Intn(1000))
}

// distinctPatches is how many patches a point-edit benchmark cycles through.
const distinctPatches = 1024

// parsePatches makes distinctPatches patches with gen on a document of n elements and parses them, up front:
// ParsePatch goes through encoding/json and is not what is measured.
func parsePatches(b *testing.B, n int, gen func(rng *rand.Rand, n int) string) [][]Operation {
	rng := rand.New(rand.NewSource(1))
	patches := make([][]Operation, distinctPatches)
	for i := range patches {
		ops, err := ParsePatch([]byte(gen(rng, n)))
		if err != nil {
			b.Fatal(err)
		}
		patches[i] = ops
	}
	return patches
}

// BenchmarkPointEdit measures one patch (not saved) on the imported document, and what it would write: nodes,
// canonical bytes, and bytes as stored (S2-compressed, with the codec byte).
func BenchmarkPointEdit(b *testing.B) {
	cases := []struct {
		name  string
		patch func(rng *rand.Rand, n int) string
	}{
		{"replace-score", replaceScore},
		{"insert-at-5", func(rng *rand.Rand, n int) string {
			k := rng.Intn(1 << 30)
			return fmt.Sprintf(`[{"op":"add","path":"/5","value":{"id":%d,"name":"new-%d","email":"new%d@example.com","tags":["x"],"score":1,"active":false}}]`, k, k, k)
		}},
		{"remove-2-adjacent", func(rng *rand.Rand, n int) string {
			i := rng.Intn(n - 1)
			return fmt.Sprintf(`[{"op":"remove","path":"/%d"},{"op":"remove","path":"/%d"}]`, i, i)
		}},
		{"remove-2-random", func(rng *rand.Rand, n int) string {
			i, j := rng.Intn(n), rng.Intn(n-1)
			// Remove the later one first, so that both indices refer to the original document.
			if j >= i {
				j++
			}
			if i < j {
				i, j = j, i
			}
			return fmt.Sprintf(`[{"op":"remove","path":"/%d"},{"op":"remove","path":"/%d"}]`, i, j)
		}},
	}
	ctx := context.Background()
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			forSizes(b, func(b *testing.B, fx *benchFixture) {
				f, root := fx.WarmTree(b)
				patches := parsePatches(b, fx.n, c.patch)
				// What each patch writes, counted before the clock starts (stopping the clock per op costs more than
				// the op: StopTimer reads the memory statistics, stopping the world).
				var nodes, raw, stored int64
				for _, p := range patches {
					ch, err := f.Patch(ctx, root, p)
					if err != nil {
						b.Fatal(err)
					}
					nodes += int64(len(ch.Nodes))
					st, err := store.NewMem().PutNodes(ctx, ch.Nodes)
					if err != nil {
						b.Fatal(err)
					}
					raw += st.RawBytes
					stored += st.StoredBytes
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := f.Patch(ctx, root, patches[i%distinctPatches]); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(nodes)/distinctPatches, "nodes/op")
				b.ReportMetric(float64(raw)/distinctPatches, "rawB/op")
				b.ReportMetric(float64(stored)/distinctPatches, "storedB/op")
			})
		})
	}
}

// BenchmarkPointEditPrepared is BenchmarkPointEdit's replace-score followed by what the database's writer does next
// with the change before its transaction: every new node hashed and compressed as for a zstd file (store.PrepareNodes).
// Together they are a single-field commit's planning, without the commit.
func BenchmarkPointEditPrepared(b *testing.B) {
	ctx := context.Background()
	forSizes(b, func(b *testing.B, fx *benchFixture) {
		f, root := fx.WarmTree(b)
		patches := parsePatches(b, fx.n, replaceScore)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			ch, err := f.Patch(ctx, root, patches[i%distinctPatches])
			if err != nil {
				b.Fatal(err)
			}
			store.PrepareNodes(ch.Nodes, store.CodecZstd)
		}
	})
}

func BenchmarkPointerRead(b *testing.B) {
	ctx := context.Background()
	forSizes(b, func(b *testing.B, fx *benchFixture) {
		f, root := fx.WarmTree(b)
		rng := rand.New(rand.NewSource(2))
		ptrs := make([]Pointer, 4096)
		for i := range ptrs {
			ptrs[i] = MustPointer(fmt.Sprintf("/%d/name", rng.Intn(fx.n)))
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			v, err := f.Get(ctx, root, ptrs[i%len(ptrs)])
			if err != nil {
				b.Fatal(err)
			}
			if v.Kind() != String {
				b.Fatalf("%s is a %s", ptrs[i%len(ptrs)], v.Kind())
			}
		}
	})
}

func BenchmarkMaterialize(b *testing.B) {
	ctx := context.Background()
	forSizes(b, func(b *testing.B, fx *benchFixture) {
		f, root := fx.WarmTree(b)
		b.SetBytes(int64(len(fx.Doc())))
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := f.Materialize(ctx, root); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkMaterializeCold reads every node from the store (S2 decode, SHA-256 check, parse) on every iteration.
func BenchmarkMaterializeCold(b *testing.B) {
	ctx := context.Background()
	forSizes(b, func(b *testing.B, fx *benchFixture) {
		_, root := fx.Tree(b)
		b.SetBytes(int64(len(fx.Doc())))
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := New(fx.ms, nil).Materialize(ctx, root); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkStdlibUnmarshal(b *testing.B) {
	forSizes(b, func(b *testing.B, fx *benchFixture) {
		doc := fx.Doc()
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			var v any
			if err := json.Unmarshal(doc, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkStream(b *testing.B) {
	ctx := context.Background()
	forSizes(b, func(b *testing.B, fx *benchFixture) {
		f, root := fx.WarmTree(b)
		b.SetBytes(int64(len(fx.Doc())))
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := f.WriteJSON(ctx, io.Discard, root); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStreamCold is BenchmarkStream through a fresh, empty cache every iteration.
func BenchmarkStreamCold(b *testing.B) {
	ctx := context.Background()
	forSizes(b, func(b *testing.B, fx *benchFixture) {
		_, root := fx.Tree(b)
		b.SetBytes(int64(len(fx.Doc())))
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := New(fx.ms, nil).WriteJSON(ctx, io.Discard, root); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkStdlibMarshal(b *testing.B) {
	forSizes(b, func(b *testing.B, fx *benchFixture) {
		v := fx.Any(b)
		b.SetBytes(int64(len(fx.Doc())))
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestChunkSizes checks the prolly-tree chunking of docs/storage.md §3 on the 100,000-element workload: nodes average
// close to the 4 KiB target, and none is larger than the 16 KiB hard maximum plus the entry that crossed it.
func TestChunkSizes(t *testing.T) {
	ctx := context.Background()
	f, ms := newForest(t)
	doc := userDoc(100_000)
	root := mustImport(t, f, string(doc))
	if !root.IsTree() {
		t.Fatal("the document was inlined")
	}
	hashes := ms.Hashes()
	raws, err := ms.GetNodes(ctx, hashes)
	if err != nil {
		t.Fatal(err)
	}
	const kib = 1 << 10
	var total, maxSize, maxEntry int
	minSize := 1 << 30
	hist := map[int]int{}     // node size in KiB (floor) → nodes
	levels := map[int][]int{} // level → sizes
	for i, raw := range raws {
		n, err := codec.ParseNode(string(raw))
		if err != nil {
			t.Fatalf("node %s: %v", hashes[i].Short(), err)
		}
		size := len(raw)
		total += size
		maxSize = max(maxSize, size)
		minSize = min(minSize, size)
		hist[size/kib]++
		levels[n.Level] = append(levels[n.Level], size)
		// The largest single entry: a cut is drawn at the first entry that takes a node to maxChunk or beyond.
		for _, e := range n.Entries {
			maxEntry = max(maxEntry, len(codec.AppendEntry(nil, n.Kind, e.Key, e.Val)))
		}
		for _, c := range n.Children {
			maxEntry = max(maxEntry, len(codec.AppendChild(nil, n.Kind, c)))
		}
	}
	mean := float64(total) / float64(len(raws))
	var b strings.Builder
	fmt.Fprintf(&b, "userDoc(100000): %d bytes of JSON, %d nodes, %d raw bytes (%.2f%% of the JSON), %d stored\n",
		len(doc), len(raws), total, 100*float64(total)/float64(len(doc)), ms.Bytes())
	fmt.Fprintf(&b, "node size: mean %.0f B, min %d B, max %d B; largest entry %d B\n", mean, minSize, maxSize, maxEntry)
	var lv []int
	for l := range levels {
		lv = append(lv, l)
	}
	sort.Ints(lv)
	for _, l := range lv {
		s := levels[l]
		sum := 0
		for _, x := range s {
			sum += x
		}
		fmt.Fprintf(&b, "level %d: %d nodes, mean %.0f B\n", l, len(s), float64(sum)/float64(len(s)))
	}
	var ks []int
	for k := range hist {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	for _, k := range ks {
		fmt.Fprintf(&b, "%3d-%3d KiB %6d %s\n", k, k+1, hist[k], strings.Repeat("#", (hist[k]*60+len(raws)-1)/len(raws)))
	}
	t.Log("\n" + b.String())
	if mean < 2*kib || mean > 6*kib {
		t.Errorf("mean node size %.0f B is outside [2 KiB, 6 KiB]", mean)
	}
	if limit := 17*kib + maxEntry; maxSize > limit {
		t.Errorf("largest node is %d B, over 17 KiB + one entry (%d B)", maxSize, limit)
	}
	if limit := maxChunk + maxEntry; maxSize > limit {
		t.Errorf("largest node is %d B, over maxChunk + one entry (%d B)", maxSize, limit)
	}
}

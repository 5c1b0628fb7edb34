package snapshots

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/workload"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// TestPutLarge: a Put of a large value is built as an import is (putImport), and is the same Put as one built in the
// write's overlay: the same tree, record and result, the same errors word for word, the same refusals, and no
// lease left behind. Both ways run here on the same documents, the overlay's with the size limit out of reach.
func TestPutLarge(t *testing.T) {
	defer func(n int) { putImportBytes = n }(putImportBytes)
	doc := workload.JSON(20000) // ~2 MB: several batches of 1 MiB
	small := []byte(`{"a":[1,2,3],"b":"x"}`)
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			run := func(limit int) (*DB, []*Result) {
				putImportBytes = limit
				db, _ := openTest(t, open(t))
				var out []*Result
				for i, v := range [][]byte{doc, small, doc} {
					before := nodeCount(t, db)
					res := must(db.Put(ctx, "users", v, WriteOptions{Author: "a", Message: fmt.Sprint("m", i), Tool: "t"}))
					if added := nodeCount(t, db) - before; res.NewNodes != added {
						t.Fatalf("limit %d, put %d: %d nodes added, the result says %d", limit, i, added, res.NewNodes)
					}
					out = append(out, res)
				}
				again := must(db.Put(ctx, "users", doc, WriteOptions{}))
				if !again.Unchanged || again.Revision != out[2].Revision {
					t.Fatalf("limit %d: the same document again: %+v", limit, again)
				}
				out = append(out, again)
				noImportsLeft(t, db)
				return db, out
			}
			big, bigRes := run(1)
			plain, plainRes := run(1 << 40)
			for i := range bigRes {
				b, p := *bigRes[i], *plainRes[i]
				b.Time, p.Time = time.Time{}, time.Time{} // each DB has its own fake clock
				if fmt.Sprint(b) != fmt.Sprint(p) {
					t.Errorf("result %d: %+v as an import, %+v in the overlay", i, b, p)
				}
			}
			for _, db := range []*DB{big, plain} {
				if chk := must(db.Check(ctx, nil)); len(chk.Problems) != 0 {
					t.Fatal(chk.Problems)
				}
			}
			for rev := range bigRes[2].Revision + 1 {
				a, b := must(big.Resolve(ctx, Ref{Revision: rev})), must(plain.Resolve(ctx, Ref{Revision: rev}))
				if a.Root != b.Root || a.Rev.Author != b.Rev.Author || a.Rev.Message != b.Rev.Message || a.Rev.Tool != b.Rev.Tool {
					t.Fatalf("revision %d: %+v as an import, %+v in the overlay", rev, a.Rev, b.Rev)
				}
			}

			// Refusals and errors, word for word.
			deep := strings.Repeat("[", revision.MaxDepth+1) + strings.Repeat("]", revision.MaxDepth+1)
			must(big.SetSchema(ctx, "typed", []byte(`{"type":"array","items":{"type":"number"}}`), "op"))
			must(plain.SetSchema(ctx, "typed", []byte(`{"type":"array","items":{"type":"number"}}`), "op"))
			for _, c := range []struct {
				resource, doc string
				w             WriteOptions
			}{
				{"users", `[1,2,}`, WriteOptions{}},
				{"users", "{\"a\":1,\n\"a\":2}", WriteOptions{}},
				{"users", `[1] x`, WriteOptions{}},
				{"users", ``, WriteOptions{}},
				{"users", `{"a":"\u00zz"}`, WriteOptions{}},
				{"users", "\"\xff\"", WriteOptions{}},
				{"users", deep, WriteOptions{}},
				{"typed", `[1, "two"]`, WriteOptions{}},
				{"users", `[1]`, WriteOptions{ExpectedHead: 1}},
				{"users", `[1]`, WriteOptions{Branch: "nope"}},
				{"users", `[1]`, WriteOptions{Branch: "no pe"}},
				{"", `[1]`, WriteOptions{}},
			} {
				putImportBytes = 1
				_, errBig := big.Put(ctx, c.resource, []byte(c.doc), c.w)
				putImportBytes = 1 << 40
				_, errPlain := plain.Put(ctx, c.resource, []byte(c.doc), c.w)
				if errBig == nil || fmt.Sprint(errBig) != fmt.Sprint(errPlain) || fmt.Sprintf("%T", errBig) != fmt.Sprintf("%T", errPlain) {
					t.Errorf("put %.40q %+v:\n as an import: %T %v\n in the overlay: %T %v", c.doc, c.w, errBig, errBig, errPlain, errPlain)
				}
				var pe *revision.PatchError
				if errors.As(errPlain, &pe) != errors.As(errBig, &pe) {
					t.Errorf("put %.40q: a PatchError one way only", c.doc)
				}
			}
			noImportsLeft(t, big)

			// A replay by idempotency key commits nothing and leaves no lease; a dry run still previews.
			putImportBytes = 1
			first := must(big.Put(ctx, "keyed", doc, WriteOptions{IdempotencyKey: "k"}))
			replay := must(big.Put(ctx, "keyed", small, WriteOptions{IdempotencyKey: "k"}))
			if !replay.Replayed || replay.Revision != first.Revision {
				t.Fatalf("replay: %+v after %+v", replay, first)
			}
			// A retry is answered before its document is read, as the writer answers a small one: even one that would
			// not parse, and one of a write that changed nothing.
			putImportBytes = 1 << 40
			must(plain.Put(ctx, "keyed", doc, WriteOptions{IdempotencyKey: "k"}))
			must(plain.Put(ctx, "keyed", doc, WriteOptions{IdempotencyKey: "same"}))
			putImportBytes = 1
			must(big.Put(ctx, "keyed", doc, WriteOptions{IdempotencyKey: "same"}))
			for _, k := range []string{"k", "same"} {
				before := nodeCount(t, big)
				putImportBytes = 1
				b := must(big.Put(ctx, "keyed", []byte(`[1,2,}`), WriteOptions{IdempotencyKey: k}))
				putImportBytes = 1 << 40
				p := must(plain.Put(ctx, "keyed", []byte(`[1,2,}`), WriteOptions{IdempotencyKey: k}))
				if !b.Replayed || b.Unchanged != (k == "same") || b.Unchanged != p.Unchanged || !p.Replayed {
					t.Fatalf("retry of %q: %+v as an import, %+v in the overlay", k, b, p)
				}
				if after := nodeCount(t, big); after != before {
					t.Fatalf("retry of %q: %d nodes before, %d after", k, before, after)
				}
			}
			putImportBytes = 1
			dry := must(big.Put(ctx, "dry", doc, WriteOptions{DryRun: true}))
			if dry.Preview == nil || must(big.Resolve(ctx, Ref{})).Rev.Number != first.Revision {
				t.Fatalf("dry run: %+v", dry)
			}
			noImportsLeft(t, big)
		})
	}
}

// forPutPaths runs fn on every backend, twice: with every Put built as an import (putImportBytes 1), and with every
// Put built in the writer's overlay.
func forPutPaths(t *testing.T, fn func(t *testing.T, be store.Backend)) {
	defer func(n int) { putImportBytes = n }(putImportBytes)
	for name, open := range backends(t) {
		for _, limit := range []int{1, 1 << 40} {
			t.Run(fmt.Sprint(name, "/", limit), func(t *testing.T) {
				putImportBytes = limit
				fn(t, open(t))
			})
		}
	}
}

// A write to a closed database is refused with ErrClosed, however a Put is built, and leaves nothing behind.
func TestPutAfterClose(t *testing.T) {
	forPutPaths(t, func(t *testing.T, be store.Backend) {
		db, _ := openTest(t, be)
		must(db.Put(context.Background(), "doc", []byte(`[1]`), WriteOptions{}))
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Put(context.Background(), "doc", []byte(`[2]`), WriteOptions{}); !errors.Is(err, ErrClosed) {
			t.Fatalf("a put after Close: %v, want ErrClosed", err)
		}
		if _, err := db.Import(context.Background(), "doc", strings.NewReader(`[3]`), ImportOptions{}, WriteOptions{}); !errors.Is(err, ErrClosed) {
			t.Fatalf("an import after Close: %v, want ErrClosed", err)
		}
	})
}

// holdingBackend holds back one transaction, the hold-th Update after it is armed, until released: a write caught
// between two of its transactions.
type holdingBackend struct {
	store.Backend
	mu      sync.Mutex
	count   int
	hold    int           // 0: disarmed
	held    chan struct{} // closed when the held Update waits
	release chan struct{}
}

func (h *holdingBackend) Update(ctx context.Context, fn func(store.CatalogTx) error) error {
	h.mu.Lock()
	h.count++
	wait := h.hold != 0 && h.count == h.hold
	h.mu.Unlock()
	if wait {
		close(h.held)
		<-h.release
	}
	return h.Backend.Update(ctx, fn)
}

// TestPutLargeDoesNotHoldTheWriter: while a large Put is being built (caught with its nodes built, before the
// transaction that stores them: the second after its lease's), another write commits; then the Put commits too.
func TestPutLargeDoesNotHoldTheWriter(t *testing.T) {
	defer func(n int) { putImportBytes = n }(putImportBytes)
	putImportBytes = 1
	ctx := context.Background()
	be := &holdingBackend{Backend: store.NewMemBackend(), held: make(chan struct{}), release: make(chan struct{})}
	db, _ := openTest(t, be)
	must(db.Put(ctx, "other", []byte(`{"n":0}`), WriteOptions{}))
	be.mu.Lock()
	be.count, be.hold = 0, 2
	be.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		_, err := db.Put(ctx, "users", workload.JSON(2000), WriteOptions{})
		done <- err
	}()
	select {
	case <-be.held:
	case err := <-done:
		t.Fatalf("the put committed (%v) without storing its nodes in a transaction before its commit", err)
	case <-time.After(time.Minute):
		t.Fatal("the put never reached its second transaction")
	}
	other := make(chan error, 1)
	go func() {
		_, err := db.Patch(ctx, "other", ops(t, `[{"op":"replace","path":"/n","value":1}]`), WriteOptions{})
		other <- err
	}()
	select {
	case err := <-other:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("another write waited for the put's build")
	}
	close(be.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st := must(db.Resolve(ctx, Ref{}))
	if st.Rev.Resources[0] != "users" || must(db.forest.Get(ctx, st.Root, revision.Pointer{"other", "n"})).NumberText() != "1" {
		t.Fatalf("head %+v", st.Rev)
	}
	noImportsLeft(t, db)
}

// A document holding one object key of 300 MB of random letters and digits (a key is kept whole, in one node, which
// compresses to about its own size) is stored, and the file opens again in another process and reads it back:
// bbolt writes that node's chunk as a page of ~300 MB, which the check of a file's pages before bbolt sees it must
// take for data, not damage. Over 1 GB of memory and several seconds: STRATA_LONG=1 only.
func TestHugeNodeReopens(t *testing.T) {
	if os.Getenv("STRATA_LONG") != "1" {
		t.Skip("300 MB node: STRATA_LONG=1")
	}
	ctx := context.Background()
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	r := rand.New(rand.NewPCG(9, 9))
	doc := make([]byte, 0, 300<<20+8)
	doc = append(doc, `{"`...)
	for len(doc) < 300<<20+2 {
		doc = append(doc, alphabet[r.IntN(len(alphabet))])
	}
	doc = append(doc, `":1}`...)
	dir := t.TempDir()
	d := must(OpenDir(dir, nil))
	db := must(d.Create(ctx, "huge", "tester"))
	must(db.Put(ctx, "n", doc, WriteOptions{}))
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = must(OpenDir(dir, nil)) // a new handle walks the file's pages, as another process would
	defer d.Close()
	db = must(d.Open(ctx, "huge"))
	v, _, err := db.Get(ctx, Ref{}, "n", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := must(db.Forest().JSON(ctx, v))
	if !bytes.Equal(got, doc) {
		t.Fatalf("read back %d bytes, want the %d put", len(got), len(doc))
	}
}

package snapshots

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/workload"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// workloadLines is docs/benchmarks.md's document of n elements as JSON Lines.
func workloadLines(n int) []byte {
	var b []byte
	for i := range n {
		b = workload.AppendElement(b, i, i%100)
		b = append(b, '\n')
	}
	return b
}

func lastRevision(t *testing.T, db *DB) uint64 {
	t.Helper()
	var n uint64
	if err := db.be.View(context.Background(), func(c store.CatalogReader) error {
		var err error
		n, err = c.LastRevision()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func noImportsLeft(t *testing.T, db *DB) {
	t.Helper()
	leases, lists, err := db.importsInProgress(context.Background())
	if err != nil || leases != 0 || lists != 0 {
		t.Fatalf("after the import: %d leases, %d node lists (%v)", leases, lists, err)
	}
}

// TestImport: an import streams into the same value Put makes, as one revision, in JSON or JSON Lines, and leaves
// no lease behind (its lists are deleted two per transaction here, so that drop takes several).
func TestImport(t *testing.T) {
	defer func(n int) { importDropLists = n }(importDropLists)
	importDropLists = 2
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			db, _ := openTest(t, open(t))
			doc := workload.JSON(30000) // ~3 MB: several batches
			// The revision counts every node the import stored, in its batches and its commit.
			nodes := nodeCount(t, db)
			first := must(db.Import(ctx, "first", bytes.NewReader(doc), ImportOptions{}, WriteOptions{}))
			if added := nodeCount(t, db) - nodes; first.NewNodes != added || added < 100 || first.NewBytes <= 0 {
				t.Fatalf("the import added %d nodes, its revision says %d (%d bytes)", added, first.NewNodes, first.NewBytes)
			}
			if rec := must(db.Resolve(ctx, Ref{})).Rev; rec.NewNodes != first.NewNodes || rec.NewBytes != first.NewBytes {
				t.Fatalf("record %+v, result %+v", rec, first)
			}
			put := must(db.Put(ctx, "put", doc, WriteOptions{}))
			res, err := db.Import(ctx, "imp", bytes.NewReader(doc), ImportOptions{}, WriteOptions{Message: "m", Author: "a"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Revision != put.Revision+1 || len(res.Resources) != 1 || res.Resources[0] != "imp" {
				t.Fatalf("result %+v", res)
			}
			st := must(db.Resolve(ctx, Ref{}))
			a := must(db.forest.Get(ctx, st.Root, revision.Pointer{"put"}))
			b := must(db.forest.Get(ctx, st.Root, revision.Pointer{"imp"}))
			if a != b || st.Rev.Message != "m" || st.Rev.Author != "a" {
				t.Fatalf("the import differs from the put, or its record: %+v", st.Rev)
			}
			lines, err := db.Import(ctx, "lines", bytes.NewReader(workloadLines(30000)), ImportOptions{Lines: true}, WriteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			st = must(db.Resolve(ctx, Ref{Revision: lines.Revision}))
			if must(db.forest.Get(ctx, st.Root, revision.Pointer{"lines"})) != a {
				t.Fatal("JSON Lines differ from the array")
			}
			// The same again changes nothing, and says so.
			again := must(db.Import(ctx, "imp", bytes.NewReader(doc), ImportOptions{}, WriteOptions{}))
			if !again.Unchanged || again.Revision != lines.Revision {
				t.Fatalf("re-import: %+v", again)
			}
			noImportsLeft(t, db)
			if chk := must(db.Check(ctx, nil)); len(chk.Problems) != 0 {
				t.Fatal(chk.Problems)
			}
			// Refused before anything is read.
			if _, err := db.Import(ctx, "x", strings.NewReader("1"), ImportOptions{}, WriteOptions{Branch: "nope"}); !errors.Is(err, ErrNotFound) {
				t.Fatalf("missing branch: %v", err)
			}
			if _, err := db.Import(ctx, "x", strings.NewReader("1"), ImportOptions{}, WriteOptions{ExpectedHead: 1}); !errors.Is(err, ErrConflict) {
				t.Fatalf("expected head: %v", err)
			}
			if _, err := db.Import(ctx, "x", strings.NewReader("1"), ImportOptions{}, WriteOptions{DryRun: true}); !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("dry run: %v", err)
			}
			if _, err := db.Import(ctx, "", strings.NewReader("1"), ImportOptions{}, WriteOptions{}); !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("bad name: %v", err)
			}
			noImportsLeft(t, db)
		})
	}
}

// badTail is docs/benchmarks.md's document of n elements with a malformed byte where its last element's first key should be.
func badTail(n int) (doc []byte, off int) {
	doc = workload.JSON(n)
	doc = doc[:len(doc)-1] // drop ']'
	last := bytes.LastIndexByte(doc, '{')
	off = last + 1
	doc = append(doc[:off:off], '#')
	return append(doc, "...]"...), off
}

// TestImportFailsCleanly: a malformed byte deep in the input is reported with its line, column and offset; no
// revision is made, no lease is left, and garbage collection removes every node the import had written.
func TestImportFailsCleanly(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			db, _ := openTest(t, open(t))
			before, nodes := lastRevision(t, db), nodeCount(t, db)
			doc, off := badTail(40000)
			_, err := db.Import(ctx, "doc", bytes.NewReader(doc), ImportOptions{}, WriteOptions{})
			var je *revision.JSONError
			if !errors.As(err, &je) || je.Offset != int64(off) || je.Line != 1 || je.Column != off+1 || !errors.Is(err, revision.ErrInvalidJSON) {
				t.Fatalf("got %v, want a JSON error at byte %d", err, off)
			}
			if !strings.Contains(err.Error(), "line 1, column") || !strings.Contains(err.Error(), `in "/39999"`) {
				t.Errorf("error %q", err)
			}
			if lastRevision(t, db) != before {
				t.Fatal("a failed import made a revision")
			}
			noImportsLeft(t, db)
			if nodeCount(t, db) == nodes {
				t.Fatal("the import wrote no batch before the bad byte: the test proves nothing")
			}
			rep := must(db.GC(ctx, nil))
			if got := nodeCount(t, db); got != nodes || rep.RemovedNodes == 0 {
				t.Fatalf("after gc %d nodes, before the import %d (%+v)", got, nodes, rep)
			}

			// Interrupted: the same.
			cctx, cancel := context.WithCancel(ctx)
			r := &pausingReader{r: bytes.NewReader(workload.JSON(40000)), at: 3 << 20, paused: make(chan struct{}), resume: make(chan struct{})}
			done := make(chan error)
			go func() { _, err := db.Import(cctx, "doc", r, ImportOptions{}, WriteOptions{}); done <- err }()
			<-r.paused
			waitForBatch(t, db)
			cancel()
			close(r.resume)
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled import: %v", err)
			}
			if lastRevision(t, db) != before {
				t.Fatal("an interrupted import made a revision")
			}
			noImportsLeft(t, db)
			must(db.GC(ctx, nil))
			if got := nodeCount(t, db); got != nodes {
				t.Fatalf("after gc %d nodes, before the import %d", got, nodes)
			}
		})
	}
}

// pausingReader stops once it has given at bytes, until resume is closed.
type pausingReader struct {
	r      io.Reader
	at, n  int
	once   sync.Once
	paused chan struct{}
	resume chan struct{}
}

func (p *pausingReader) Read(b []byte) (int, error) {
	if p.n >= p.at {
		p.once.Do(func() { close(p.paused) })
		<-p.resume
	}
	if len(b) > 64<<10 {
		b = b[:64<<10]
	}
	k, err := p.r.Read(b)
	p.n += k
	return k, err
}

// waitForBatch waits until an import in progress has written a batch.
func waitForBatch(t *testing.T, db *DB) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, lists, err := db.importsInProgress(context.Background()); err != nil {
			t.Fatal(err)
		} else if lists > 0 {
			return
		}
	}
	t.Fatal("the import wrote no batch")
}

// TestImportSurvivesGC: garbage collection while an import is in progress keeps every node it has written (they
// are unreachable until its commit), and the import commits a whole tree.
func TestImportSurvivesGC(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			db, _ := openTest(t, open(t))
			doc := workload.JSON(40000)
			r := &pausingReader{r: bytes.NewReader(doc), at: 3 << 20, paused: make(chan struct{}), resume: make(chan struct{})}
			done := make(chan error)
			go func() { _, err := db.Import(ctx, "doc", r, ImportOptions{}, WriteOptions{}); done <- err }()
			<-r.paused
			waitForBatch(t, db)
			rep := must(db.GC(ctx, &GCOptions{Grace: time.Minute}))
			if rep.RemovedNodes != 0 {
				t.Fatalf("gc removed %d nodes of the import in progress", rep.RemovedNodes)
			}
			close(r.resume)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if chk := must(db.Check(ctx, nil)); len(chk.Problems) != 0 {
				t.Fatal(chk.Problems)
			}
			if got := get(t, db, Ref{}, "doc", "/39999/name"); got != `"user-39999"` {
				t.Fatal(got)
			}
			noImportsLeft(t, db)
		})
	}
}

// TestImportLeaseEnds: an import that stops renewing its lease for longer than the grace window (its process
// died, or its input stalled) loses its nodes to garbage collection, and then fails rather than commit a tree with
// nodes missing.
func TestImportLeaseEnds(t *testing.T) {
	ctx := context.Background()
	db, clk := openTest(t, store.NewMemBackend())
	nodes := nodeCount(t, db)
	r := &pausingReader{r: bytes.NewReader(workload.JSON(40000)), at: 3 << 20, paused: make(chan struct{}), resume: make(chan struct{})}
	done := make(chan error)
	go func() { _, err := db.Import(ctx, "doc", r, ImportOptions{}, WriteOptions{}); done <- err }()
	<-r.paused
	waitForBatch(t, db)
	clk.mu.Lock()
	clk.t = clk.t.Add(2 * time.Hour)
	clk.mu.Unlock()
	rep := must(db.GC(ctx, nil))
	if rep.RemovedNodes == 0 || nodeCount(t, db) != nodes {
		t.Fatalf("a dead import's nodes were kept: %+v", rep)
	}
	noImportsLeft(t, db)
	close(r.resume)
	err := <-done
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "lease") {
		t.Fatalf("got %v, want the lease's end", err)
	}
	if lastRevision(t, db) != 1 {
		t.Fatal("the import committed")
	}
	if chk := must(db.Check(ctx, nil)); len(chk.Problems) != 0 {
		t.Fatal(chk.Problems)
	}
}

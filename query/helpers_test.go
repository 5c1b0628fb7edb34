package query

import (
	"context"
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/store"
)

// newEngine returns an engine closed at the end of the test.
func newEngine(t testing.TB, o Options) *Engine {
	t.Helper()
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// newDB opens an in-memory database closed at the end of the test.
func newDB(t testing.TB) *snapshots.DB {
	t.Helper()
	db, err := snapshots.Open(context.Background(), store.NewMemBackend(), &snapshots.Options{Creator: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// put writes a resource and returns the new revision.
func put(t testing.TB, db *snapshots.DB, resource, doc string) uint64 {
	t.Helper()
	res, err := db.Put(context.Background(), resource, []byte(doc), snapshots.WriteOptions{Author: "tester"})
	if err != nil {
		t.Fatalf("put %s: %v", resource, err)
	}
	return res.Revision
}

// tree imports a document into a fresh forest and returns a root {"doc": document}.
func tree(t testing.TB, doc string) (*revision.Forest, revision.Value) {
	t.Helper()
	f := revision.New(store.NewMem(), nil)
	v, _, err := f.ImportBytes(context.Background(), []byte(`{"doc":`+doc+`}`))
	if err != nil {
		t.Fatal(err)
	}
	return f, v
}

// joined renders a page of results one per line.
func joined(rs []json.RawMessage) string {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.Write(r)
	}
	return b.String()
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func newRand(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed)) }

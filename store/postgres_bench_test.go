package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/pgtest"
	"github.com/strata-db/strata/store"
)

// BenchmarkPostgresCommit is one small revision as the snapshots writer commits it, on loopback with fsync on: in
// one transaction, the reads the writer makes (GC epoch, branch head, idempotency key), four new nodes of 1-3 KiB,
// the revision record, the head move, the head log entry and the key.
//
//	go test ./store -run '^$' -bench Postgres -benchtime 2000x
func BenchmarkPostgresCommit(b *testing.B) {
	ctx := context.Background()
	p, err := store.OpenPostgres(ctx, pgtest.URL(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	d, err := p.Create(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	if err := d.Update(ctx, func(tx store.CatalogTx) error {
		if err := tx.AddRevision(store.RevisionRecord{Number: 1, Root: []byte{6, 0}, Branch: "main", Time: time.Now()}); err != nil {
			return err
		}
		return tx.PutBranch(store.BranchRecord{Name: "main", ID: 1, Head: 1})
	}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		nodes := make([]store.Node, 4)
		for k := range nodes {
			data := []byte(fmt.Sprintf(`{"i":%d,"k":%d,"pad":"%0*d"}`, i, k, 1000+k*600, 0))
			nodes[k] = store.Node{Hash: store.HashOf(data), Data: data}
		}
		store.PrepareNodes(nodes, d.NodeCodec())
		key := fmt.Sprint("key-", i)
		err := d.Update(ctx, func(tx store.CatalogTx) error {
			last, err := tx.LastRevision()
			if err != nil {
				return err
			}
			if _, _, err := tx.Get("gc", "epoch"); err != nil {
				return err
			}
			br, err := tx.Branch("main")
			if err != nil {
				return err
			}
			if _, ok, err := tx.Idempotent(key); err != nil || ok {
				return fmt.Errorf("key %s: %v %v", key, ok, err)
			}
			st, err := tx.PutNodes(nodes)
			if err != nil {
				return err
			}
			now := time.Now()
			rec := store.RevisionRecord{Number: last + 1, Root: []byte{6, 0}, Parents: []uint64{br.Head}, Branch: "main", Time: now,
				Author: "bench", Tool: "patch", Resources: []string{"doc"}, NewNodes: st.Nodes, NewBytes: st.StoredBytes}
			if err := tx.AddRevision(rec); err != nil {
				return err
			}
			br.Head = rec.Number
			if err := tx.PutBranch(br); err != nil {
				return err
			}
			if err := tx.LogHead(br.ID, now, rec.Number); err != nil {
				return err
			}
			return tx.SetIdempotent(key, rec.Number)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPostgresGetNode is a point read of one node by hash (no cache: every read goes to PostgreSQL).
func BenchmarkPostgresGetNode(b *testing.B) {
	ctx := context.Background()
	p, err := store.OpenPostgres(ctx, pgtest.URL(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	d, err := p.Create(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	var nodes []store.Node
	for i := range 1000 {
		data := []byte(fmt.Sprintf(`{"i":%d,"pad":"%04000d"}`, i, 0))
		nodes = append(nodes, store.Node{Hash: store.HashOf(data), Data: data})
	}
	if _, err := d.PutNodes(ctx, nodes); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		if _, err := d.GetNodes(ctx, []store.Hash{nodes[i%len(nodes)].Hash}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPostgresResolve is what a read does before it touches a node: resolve main's head to its revision record,
// in one consistent snapshot.
func BenchmarkPostgresResolve(b *testing.B) {
	ctx := context.Background()
	p, err := store.OpenPostgres(ctx, pgtest.URL(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	d, err := p.Create(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	if _, err := commitNext(ctx, d, 0, ""); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if err := d.View(ctx, func(c store.CatalogReader) error {
			br, err := c.Branch("main")
			if err != nil {
				return err
			}
			_, err = c.Revision(br.Head)
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
}

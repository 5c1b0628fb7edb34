package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/strata-db/strata/store"
)

// TestBackend runs the catalog conformance suite against backends returned by open (each new and empty), after the
// node-store suite. A second backend (PostgreSQL, say) runs exactly this to be a drop-in for bbolt.
func TestBackend(t *testing.T, open func(t *testing.T) store.Backend) {
	t.Helper()
	TestNodeStore(t, func(t *testing.T) store.NodeStore { return open(t) })
	t.Run("Revisions", func(t *testing.T) { testRevisions(t, open(t)) })
	t.Run("BranchesAndLabels", func(t *testing.T) { testBranchesAndLabels(t, open(t)) })
	t.Run("HeadLog", func(t *testing.T) { testHeadLog(t, open(t)) })
	t.Run("IdempotencyAndBuckets", func(t *testing.T) { testIdempotencyAndBuckets(t, open(t)) })
	t.Run("UpdateIsAtomic", func(t *testing.T) { testUpdateIsAtomic(t, open(t)) })
	t.Run("NodesInTransaction", func(t *testing.T) { testNodesInTransaction(t, open(t)) })
	t.Run("Collection", func(t *testing.T) { testCollection(t, open(t)) })
}

func update(t *testing.T, be store.Backend, fn func(tx store.CatalogTx) error) {
	t.Helper()
	if err := be.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

func view(t *testing.T, be store.Backend, fn func(c store.CatalogReader) error) {
	t.Helper()
	if err := be.View(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)

func rec(n uint64, parents ...uint64) store.RevisionRecord {
	return store.RevisionRecord{Number: n, Root: []byte{6, 0}, Parents: parents, Branch: "main", Time: t0.Add(time.Duration(n) * time.Second),
		Author: "a", Tool: "t", Message: fmt.Sprint("m", n), Resources: []string{"r"}, NewNodes: int(n), NewBytes: int64(n)}
}

func testRevisions(t *testing.T, be store.Backend) {
	view(t, be, func(c store.CatalogReader) error {
		if n, err := c.LastRevision(); err != nil || n != 0 {
			t.Errorf("empty: last %d, %v", n, err)
		}
		if _, err := c.Revision(1); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("missing revision: %v", err)
		}
		return nil
	})
	update(t, be, func(tx store.CatalogTx) error {
		for n := uint64(1); n <= 5; n++ {
			if err := tx.AddRevision(rec(n, n-1)); err != nil {
				return err
			}
		}
		if err := tx.AddRevision(rec(9)); err == nil {
			t.Error("a revision out of order was accepted")
		}
		return nil
	})
	view(t, be, func(c store.CatalogReader) error {
		if n, _ := c.LastRevision(); n != 5 {
			t.Errorf("last %d", n)
		}
		got, err := c.Revision(3)
		if want := rec(3, 2); err != nil || fmt.Sprint(got) != fmt.Sprint(want) || !got.Time.Equal(want.Time) {
			t.Errorf("revision 3: %+v %v", got, err)
		}
		var seen []uint64
		err = c.Revisions(4, func(r store.RevisionRecord) bool { seen = append(seen, r.Number); return r.Number > 2 })
		if err != nil || fmt.Sprint(seen) != "[4 3 2]" {
			t.Errorf("Revisions from 4: %v %v", seen, err)
		}
		return nil
	})
}

func testBranchesAndLabels(t *testing.T, be store.Backend) {
	update(t, be, func(tx store.CatalogTx) error {
		id1, _ := tx.NextID()
		id2, _ := tx.NextID()
		if id1 == id2 || id1 == 0 {
			t.Errorf("ids %d and %d", id1, id2)
		}
		for _, b := range []store.BranchRecord{{Name: "main", ID: id1, Head: 3, Base: 1, Created: t0}, {Name: "b/x", ID: id2, Head: 2, Base: 2, Created: t0}} {
			if err := tx.PutBranch(b); err != nil {
				return err
			}
		}
		if err := tx.PutLabel(store.LabelRecord{Name: "v1", Revision: 2, Note: "n", Created: t0}); err != nil {
			return err
		}
		return tx.PutLabel(store.LabelRecord{Name: "a", Revision: 1, Created: t0})
	})
	view(t, be, func(c store.CatalogReader) error {
		bs, err := c.Branches()
		if err != nil || len(bs) != 2 || bs[0].Name != "b/x" || bs[1].Name != "main" || bs[1].Head != 3 {
			t.Errorf("branches %+v %v", bs, err)
		}
		ls, err := c.Labels()
		if err != nil || len(ls) != 2 || ls[0].Name != "a" || ls[1].Note != "n" {
			t.Errorf("labels %+v %v", ls, err)
		}
		if _, err := c.Branch("nope"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("missing branch: %v", err)
		}
		return nil
	})
	update(t, be, func(tx store.CatalogTx) error {
		if err := tx.DeleteBranch("b/x"); err != nil {
			return err
		}
		return tx.DeleteLabel("a")
	})
	view(t, be, func(c store.CatalogReader) error {
		if _, err := c.Branch("b/x"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("deleted branch: %v", err)
		}
		if _, err := c.Label("a"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("deleted label: %v", err)
		}
		return nil
	})
}

func testHeadLog(t *testing.T, be store.Backend) {
	update(t, be, func(tx store.CatalogTx) error {
		for i, rev := range []uint64{1, 4, 9} {
			if err := tx.LogHead(7, t0.Add(time.Duration(i)*time.Minute), rev); err != nil {
				return err
			}
		}
		return tx.LogHead(8, t0, 100) // another branch's log must not leak into branch 7's
	})
	view(t, be, func(c store.CatalogReader) error {
		for _, q := range []struct {
			at   time.Duration
			want uint64
			ok   bool
		}{{-time.Nanosecond, 0, false}, {0, 1, true}, {time.Minute - 1, 1, true}, {time.Minute, 4, true}, {time.Hour, 9, true}} {
			got, ok, err := c.HeadAt(7, t0.Add(q.at))
			if err != nil || ok != q.ok || got != q.want {
				t.Errorf("HeadAt(+%v) = %d %v %v, want %d %v", q.at, got, ok, err, q.want, q.ok)
			}
		}
		if _, ok, _ := c.HeadAt(6, t0.Add(time.Hour)); ok {
			t.Error("a branch with no log has a head")
		}
		// Times before 1970 sort before later ones too.
		return nil
	})
	old := time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)
	update(t, be, func(tx store.CatalogTx) error { return tx.LogHead(9, old, 5) })
	view(t, be, func(c store.CatalogReader) error {
		if got, ok, _ := c.HeadAt(9, old.Add(time.Second)); !ok || got != 5 {
			t.Errorf("pre-1970 head: %d %v", got, ok)
		}
		return nil
	})
}

func testIdempotencyAndBuckets(t *testing.T, be store.Backend) {
	update(t, be, func(tx store.CatalogTx) error {
		if err := tx.SetIdempotent("k", 12); err != nil {
			return err
		}
		for _, k := range []string{"b", "a", "c"} {
			if err := tx.Put("plans", k, []byte("v"+k)); err != nil {
				return err
			}
		}
		return tx.Delete("plans", "c")
	})
	view(t, be, func(c store.CatalogReader) error {
		if n, ok, err := c.Idempotent("k"); err != nil || !ok || n != 12 {
			t.Errorf("key: %d %v %v", n, ok, err)
		}
		if _, ok, _ := c.Idempotent("other"); ok {
			t.Error("unknown key found")
		}
		if v, ok, err := c.Get("plans", "a"); err != nil || !ok || string(v) != "va" {
			t.Errorf("get: %q %v %v", v, ok, err)
		}
		if _, ok, _ := c.Get("nothing", "a"); ok {
			t.Error("a missing bucket has keys")
		}
		var keys string
		err := c.Scan("plans", func(k string, v []byte) bool { keys += k + "=" + string(v) + ";"; return true })
		if err != nil || keys != "a=va;b=vb;" {
			t.Errorf("scan %q %v", keys, err)
		}
		return nil
	})
}

func testUpdateIsAtomic(t *testing.T, be store.Backend) {
	boom := errors.New("boom")
	err := be.Update(context.Background(), func(tx store.CatalogTx) error {
		if err := tx.AddRevision(rec(1)); err != nil {
			return err
		}
		if _, err := tx.PutNodes([]store.Node{jsonNode(1, 1, 200)}); err != nil {
			return err
		}
		if err := tx.Put("plans", "p", []byte("x")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update returned %v", err)
	}
	view(t, be, func(c store.CatalogReader) error {
		if n, _ := c.LastRevision(); n != 0 {
			t.Error("a failed update left a revision")
		}
		if _, ok, _ := c.Get("plans", "p"); ok {
			t.Error("a failed update left a bucket entry")
		}
		return nil
	})
	if _, err := be.GetNodes(context.Background(), []store.Hash{jsonNode(1, 1, 200).Hash}); !errors.Is(err, store.ErrNodeMissing) {
		t.Errorf("a failed update left a node: %v", err)
	}
}

func testNodesInTransaction(t *testing.T, be store.Backend) {
	n := jsonNode(2, 1, 3000)
	update(t, be, func(tx store.CatalogTx) error {
		st, err := tx.PutNodes([]store.Node{n, n})
		if err != nil || st.Nodes != 1 {
			t.Errorf("put in tx: %+v %v", st, err)
		}
		got, err := tx.GetNodes([]store.Hash{n.Hash})
		if err != nil || string(got[0]) != string(n.Data) {
			t.Errorf("a transaction must read its own nodes: %v", err)
		}
		return nil
	})
	got, err := be.GetNodes(context.Background(), []store.Hash{n.Hash})
	if err != nil || string(got[0]) != string(n.Data) {
		t.Fatalf("node after commit: %v", err)
	}
}

func testCollection(t *testing.T, be store.Backend) {
	lister, ok := be.(store.NodeLister)
	if !ok {
		t.Skip("backend does not list its nodes (no garbage collection)")
	}
	keep, drop := jsonNode(3, 1, 500), jsonNode(3, 2, 500)
	update(t, be, func(tx store.CatalogTx) error {
		if _, err := tx.PutNodes([]store.Node{keep, drop}); err != nil {
			return err
		}
		for n := uint64(1); n <= 3; n++ {
			if err := tx.AddRevision(rec(n)); err != nil {
				return err
			}
		}
		return nil
	})
	update(t, be, func(tx store.CatalogTx) error {
		if k, _, err := tx.DeleteNodes([]store.Hash{drop.Hash}); err != nil || k != 1 {
			t.Errorf("DeleteNodes: %d %v", k, err)
		}
		if err := tx.DeleteRevision(2); err != nil {
			return err
		}
		return tx.DeleteRevision(3) // the newest: kept, so numbers are never reused
	})
	hs, err := lister.NodeHashes(context.Background(), nil, 10)
	if err != nil || len(hs) != 1 || hs[0] != keep.Hash {
		t.Errorf("nodes after delete: %v %v", hs, err)
	}
	view(t, be, func(c store.CatalogReader) error {
		if _, err := c.Revision(2); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("deleted revision: %v", err)
		}
		if n, _ := c.LastRevision(); n != 3 {
			t.Errorf("last revision %d after deleting the newest: numbers would be reused", n)
		}
		return nil
	})
}

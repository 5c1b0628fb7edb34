package store_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/pgtest"
	"github.com/strata-db/strata/store"
)

// commits collects what a backend reports of its commits and round trips.
type commits struct {
	mu     sync.Mutex
	stats  []store.CommitStats
	trips  int
	tripNS time.Duration
}

func (c *commits) onCommit(s store.CommitStats) {
	c.mu.Lock()
	c.stats = append(c.stats, s)
	c.mu.Unlock()
}

func (c *commits) onRoundTrip(d time.Duration) {
	c.mu.Lock()
	c.trips++
	c.tripNS += d
	c.mu.Unlock()
}

func (c *commits) snapshot() ([]store.CommitStats, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]store.CommitStats(nil), c.stats...), c.trips
}

// TestBoltOnCommit: every committed write transaction is reported once, with bbolt's breakdown of its duration; a
// transaction that writes nothing (a read, or a put of nodes already stored) commits nothing and is not reported.
func TestBoltOnCommit(t *testing.T) {
	var c commits
	b := openBolt(t, filepath.Join(t.TempDir(), "db.strata"), &store.BoltOptions{OnCommit: c.onCommit})
	ctx := context.Background()
	if _, err := commitNext(ctx, b, 0, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := commitNext(ctx, b, 0, ""); err != nil {
		t.Fatal(err)
	}
	node := store.Node{Hash: store.HashOf([]byte("x")), Data: []byte("x")}
	if _, err := b.PutNodes(ctx, []store.Node{node}); err != nil {
		t.Fatal(err)
	}
	if err := b.View(ctx, func(store.CatalogReader) error { return nil }); err != nil {
		t.Fatal(err)
	}
	before, _ := c.snapshot()
	if _, err := b.PutNodes(ctx, []store.Node{node}); err != nil { // already there: nothing to commit
		t.Fatal(err)
	}
	got, _ := c.snapshot()
	if len(got) != len(before) {
		t.Fatalf("a put of a node already stored reported a commit: %d then %d", len(before), len(got))
	}
	if len(got) < 3 {
		t.Fatalf("reported %d commits, want at least the 3 made", len(got))
	}
	for i, s := range got {
		if s.Failed || s.Duration <= 0 || s.Write <= 0 || s.Write > s.Duration {
			t.Errorf("commit %d: %+v: want a successful commit whose write time (with fdatasync) is within its duration", i, s)
		}
	}
}

// TestPostgresOnCommitAndRoundTrips: with PostgreSQL each commit is one round trip, reported with its duration, and
// every round trip (the reads around it too) is timed.
func TestPostgresOnCommitAndRoundTrips(t *testing.T) {
	var c commits
	p := openPG(t, pgtest.URL(t), &store.PostgresOptions{OnCommit: c.onCommit, OnRoundTrip: c.onRoundTrip})
	d := createPG(t, p, "observed")
	ctx := context.Background()
	before, trips0 := c.snapshot()
	if _, err := commitNext(ctx, d, 0, ""); err != nil {
		t.Fatal(err)
	}
	got, trips := c.snapshot()
	if len(got) != len(before)+1 {
		t.Fatalf("one commit reported %d times", len(got)-len(before))
	}
	if s := got[len(got)-1]; s.Failed || s.Duration <= 0 {
		t.Errorf("commit: %+v", s)
	}
	if trips <= trips0 {
		t.Errorf("no round trip timed for a commit (%d before, %d after)", trips0, trips)
	}
}

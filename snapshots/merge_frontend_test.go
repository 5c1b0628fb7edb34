package snapshots

import (
	"context"
	"testing"

	"github.com/strata-db/strata/store"
)

// TestPromoteReplayFastForward: a promote retried with the same idempotency key answers what the first call
// did. A fast-forward's retry answered FastForward false (MCP: "fast_forward": false, the CLI "three-way merge"),
// though the revision it names holds the branch's head as it is; a merge's retry must stay a merge.
func TestPromoteReplayFastForward(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t, store.NewMemBackend())
	must(db.Put(ctx, "cat", []byte(`{"items":[1,2]}`), WriteOptions{}))
	must(db.CreateBranch(ctx, "work", Ref{}, ""))
	must(db.Put(ctx, "cat", []byte(`{"items":[1,2,3]}`), WriteOptions{Branch: "work"}))
	first := must(db.Promote(ctx, "work", "", WriteOptions{IdempotencyKey: "k1"}))
	if !first.FastForward {
		t.Fatal("want a fast-forward")
	}
	again := must(db.Promote(ctx, "work", "", WriteOptions{IdempotencyKey: "k1"}))
	if !again.Replayed || again.Revision != first.Revision {
		t.Fatalf("retry %+v, want a replay of revision %d", again.Result, first.Revision)
	}
	if !again.FastForward {
		t.Errorf("the retry of fast-forward revision %d answers FastForward false", first.Revision)
	}

	// A merge's retry stays a merge.
	must(db.CreateBranch(ctx, "w2", Ref{}, ""))
	must(db.Put(ctx, "cat", []byte(`{"items":[1,2,3,4]}`), WriteOptions{Branch: "w2"}))
	must(db.Put(ctx, "other", []byte(`1`), WriteOptions{}))
	m := must(db.Promote(ctx, "w2", "", WriteOptions{IdempotencyKey: "k2"}))
	if m.FastForward {
		t.Fatal("want a merge")
	}
	m2 := must(db.Promote(ctx, "w2", "", WriteOptions{IdempotencyKey: "k2"}))
	if !m2.Replayed || m2.FastForward {
		t.Errorf("the retry of merge revision %d: %+v fast-forward %v", m.Revision, m2.Result, m2.FastForward)
	}
}

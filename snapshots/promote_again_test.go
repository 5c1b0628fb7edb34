package snapshots

import (
	"context"
	"testing"

	"github.com/strata-db/strata/store"
)

// TestPromoteReplayNoopNotFastForward: a promote that brought nothing (the branch is already part of main)
// answers Unchanged and FastForward false; retried with the same idempotency key, it must answer the same. The
// replay looks at the parents of the revision the key names, which for a no-op is main's head: when that head
// is itself an earlier fast-forward, the retry claimed a fast-forward that never happened.
func TestPromoteReplayNoopNotFastForward(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t, store.NewMemBackend())
	must(db.Put(ctx, "cat", []byte(`{"items":[1,2]}`), WriteOptions{}))
	must(db.CreateBranch(ctx, "work", Ref{}, ""))
	must(db.Put(ctx, "cat", []byte(`{"items":[1,2,3]}`), WriteOptions{Branch: "work"}))
	if ff := must(db.Promote(ctx, "work", "", WriteOptions{})); !ff.FastForward {
		t.Fatal("want a fast-forward")
	}
	first := must(db.Promote(ctx, "work", "", WriteOptions{IdempotencyKey: "k"}))
	if first.FastForward || !first.Unchanged {
		t.Fatalf("a promote with nothing to bring: %+v fast-forward %v", first.Result, first.FastForward)
	}
	again := must(db.Promote(ctx, "work", "", WriteOptions{IdempotencyKey: "k"}))
	if !again.Replayed || !again.Unchanged {
		t.Fatalf("retry %+v, want a replay of the no-op", again.Result)
	}
	if again.FastForward {
		t.Errorf("the retry of a promote that brought nothing answers FastForward true (revision %d)", again.Revision)
	}
}

package snapshots

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/store"
)

// TestAtBeforeBranchHintTimes: a read at an instant before a branch was created says so, with both instants.
// Revisions and branches keep sub-second times; a hint that shows both to the second reads "did not exist yet at
// 14:00:00Z (it was created 14:00:00Z)" when they fall in one second, which contradicts itself.
func TestAtBeforeBranchHintTimes(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	clock := func() time.Time { now = now.Add(100 * time.Millisecond); return now }
	db, err := Open(ctx, store.NewMemBackend(), &Options{Now: clock, Creator: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b, err := db.CreateBranch(ctx, "feat", Ref{}, "tester")
	if err != nil {
		t.Fatal(err)
	}
	at := b.Created.Truncate(time.Second) // before the branch, in its second
	if !at.Before(b.Created) {
		t.Fatalf("created on a whole second: %v", b.Created)
	}
	_, err = db.Resolve(ctx, Ref{Branch: "feat", At: &at})
	var nf *NotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("got %v", err)
	}
	if strings.Count(nf.Hint, at.Format(time.RFC3339)) > 1 {
		t.Errorf("the hint shows the instant asked and the creation as the same time: %s", nf.Hint)
	}
}

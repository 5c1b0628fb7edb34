package snapshots

import (
	"context"
	"strings"
	"testing"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

func TestCheck(t *testing.T) {
	ctx := context.Background()
	be := store.NewMemBackend()
	db, _ := openTest(t, be)
	doc := `[` + strings.Repeat(`{"k":"some value to fill nodes","n":12345},`, 3000) + `0]`
	must(db.Put(ctx, "big", []byte(doc), WriteOptions{}))
	must(db.CreateSnapshot(ctx, "s", Ref{}, "", ""))
	must(db.CreateBranch(ctx, "b", Ref{}, ""))
	must(db.Patch(ctx, "big", ops(t, `[{"op":"replace","path":"/5/n","value":1}]`), WriteOptions{Branch: "b"}))
	must(db.Revert(ctx, Ref{Revision: 1}, WriteOptions{}))
	calls := 0
	rep := must(db.Check(ctx, func(done, total uint64) { calls++ }))
	if len(rep.Problems) != 0 || rep.Revisions != 4 || rep.Nodes < 3 || rep.Branches != 2 || rep.Snapshots != 1 || calls != 4 {
		t.Fatalf("sound database: %+v (progress calls %d)", rep, calls)
	}
	// Damage a node that revision 3 reaches: check names the revision and the fault.
	st := must(db.Resolve(ctx, Ref{Revision: 3}))
	v := must(db.Forest().Get(ctx, st.Root, revision.Pointer{"big"}))
	be.Corrupt(v.Hash(), []byte{9, 9, 9})
	rep = must(db.Check(ctx, nil))
	if len(rep.Problems) == 0 || !strings.Contains(rep.Problems[0], "revision 3") || !strings.Contains(rep.Problems[0], "corrupt") {
		t.Fatalf("damaged database: %+v", rep.Problems)
	}
}

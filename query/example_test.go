package query_test

import (
	"context"
	"fmt"

	"github.com/strata-db/strata/query"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/store"
)

// Query a resource at a revision, a page at a time.
func ExampleEngine_Query() {
	ctx := context.Background()
	db, _ := snapshots.Open(ctx, store.NewMemBackend(), nil)
	defer db.Close()
	first, _ := db.Put(ctx, "users", []byte(`[{"id":1,"name":"ada","score":91},{"id":2,"name":"bob","score":12},{"id":3,"name":"cy","score":97.50}]`), snapshots.WriteOptions{})
	db.Put(ctx, "users", []byte(`[]`), snapshots.WriteOptions{}) // the branch moves on

	e, _ := query.New(query.Options{})
	defer e.Close()
	req := query.Request{Resource: "users", Program: `.[] | select(.score > $min) | {name, score}`,
		Params: map[string]any{"min": 50}, Limit: 1, Caller: "agent"}
	res, err := e.Query(ctx, db, snapshots.Ref{Revision: first.Revision}, req)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(res.Results[0]), res.More, res.Plan.Route)
	req.Cursor = res.NextCursor // continues at the same revision
	res, _ = e.Query(ctx, db, snapshots.Ref{}, req)
	fmt.Println(string(res.Results[0]), res.More)

	_, err = e.Query(ctx, db, snapshots.Ref{Revision: first.Revision}, query.Request{Resource: "users", Program: `.[0] | nmae`})
	fmt.Println(err)
	// Output:
	// {"name":"ada","score":91} true in-process
	// {"name":"cy","score":97.50} false
	// the program does not compile: function not defined: nmae/0
	//   .[0] | nmae
	//          ^
}

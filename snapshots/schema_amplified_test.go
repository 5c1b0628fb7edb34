package snapshots

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// TestSchemaCheckOfAmplifiedValue: copies share nodes, so a patch of a few copies makes a value of gigabytes; under
// a schema whose keywords need the whole value (anyOf), the check read each copy whole into the validator and held
// the writer for minutes (found in review). A value over what a check reads whole is refused, LIMIT_EXCEEDED, and
// the database goes on taking writes.
func TestSchemaCheckOfAmplifiedValue(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t, store.NewMemBackend())
	if _, err := db.Put(ctx, "doc", []byte(`{"a":{"x":"`+strings.Repeat("y", 1<<20)+`"}}`), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SetSchema(ctx, "doc", []byte(`{"type":"object","additionalProperties":{"anyOf":[{"type":"string"},{"$ref":"#"}]}}`), "op"); err != nil {
		t.Fatal(err)
	}
	var ops []revision.Operation
	for i := 0; i < 12; i++ { // 1 MiB doubled twelve times: 4 GiB
		ops = append(ops, revision.Operation{Op: "copy", From: "", Path: fmt.Sprintf("/c%d", i)})
	}
	_, err := db.Patch(ctx, "doc", ops, WriteOptions{})
	if !errors.Is(err, revision.ErrLimit) || !strings.Contains(err.Error(), "can be checked on whole") {
		t.Fatalf("a patch making 4 GiB under a schema: %v", err)
	}
	if _, err := db.Patch(ctx, "doc", []revision.Operation{{Op: "copy", From: "/a", Path: "/b"}}, WriteOptions{}); err != nil {
		t.Fatalf("an ordinary write after it: %v", err)
	}
}

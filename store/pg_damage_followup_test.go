package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/strata-db/strata/internal/pgtest"
	"github.com/strata-db/strata/store"
)

// TestPGMissingNodeNamesDatabase: front ends tell an agent "the server's log names the file and says why"
// (gate.FileFaultHint) and log only the error; damage in a bbolt file now names its file (store.Bolt.missing,
// damage). The PostgreSQL backend names the database for a node that does not decode, but not for one that is
// missing: an operator with many databases cannot tell which one is damaged.
func TestPGMissingNodeNamesDatabase(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	p := openPG(t, url, nil)
	createPG(t, p, "other")
	d := createPG(t, p, "shopdamaged")
	data := []byte(`{"a":1}`)
	h := store.HashOf(data)
	if _, err := d.PutNodes(ctx, []store.Node{{Hash: h, Data: data}}); err != nil {
		t.Fatal(err)
	}
	sqlExec(t, url, "DELETE FROM strata_nodes")
	_, err := d.GetNodes(ctx, []store.Hash{h})
	if !errors.Is(err, store.ErrNodeMissing) {
		t.Fatalf("GetNodes of a deleted node: %v, want ErrNodeMissing", err)
	}
	if !strings.Contains(err.Error(), "shopdamaged") {
		t.Errorf("a missing node's error names no database: %q", err)
	}
}

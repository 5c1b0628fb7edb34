package mcp

import (
	"context"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/internal/pgtest"
	"github.com/strata-db/strata/snapshots"
)

// TestPGSubscriptionAfterDropElsewhere: a client subscribed to a resource through one server on PostgreSQL
// is notified when another server drops the database and makes it again with new content, and reads the new one.
func TestPGSubscriptionAfterDropElsewhere(t *testing.T) {
	url := pgtest.URL(t)
	h := newHarnessAt(t, url, Config{Writes: gate.WritesOn, Protected: []string{}})
	h.ok("create_database", `{"database":"shop"}`)
	h.ok("put", `{"database":"shop","resource":"catalog","value":{"n":1}}`)
	updates := make(chan string, 100)
	cs := resourceClient(t, h, Config{}, &mcpsdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcpsdk.ResourceUpdatedNotificationRequest) {
			updates <- req.Params.URI
		},
	})
	ctx := context.Background()
	if err := cs.Subscribe(ctx, &mcpsdk.SubscribeParams{URI: "strata://shop/catalog"}); err != nil {
		t.Fatal(err)
	}
	if got := readText(t, cs, "strata://shop/catalog"); !strings.Contains(got, `"n":1`) {
		t.Fatalf("before: %s", got)
	}

	other, err := snapshots.OpenDir(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Drop(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	db, err := other.Create(ctx, "shop", "op")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Put(ctx, "catalog", []byte(`{"n":9}`), snapshots.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-updates:
	case <-time.After(5 * time.Second):
		t.Fatal("the subscriber was not told that another server dropped and re-created the database")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := readText(t, cs, "strata://shop/catalog")
		if strings.Contains(got, `"n":9`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the re-create elsewhere, the resource reads %s", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

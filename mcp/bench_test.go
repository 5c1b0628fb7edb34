package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/internal/workload"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/strata-db/strata/snapshots"
)

// BenchmarkReadTool is docs/benchmarks.md's (i) without a process boundary: one read of a single element of a 10,000-element
// array through a go-sdk client connected to the server over the SDK's in-memory transport (both ends' JSON-RPC
// work included).
func BenchmarkReadTool(b *testing.B) {
	ctx := context.Background()
	dir, err := snapshots.OpenDir(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer dir.Close()
	db, err := dir.Create(ctx, "bench", "bench")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.Put(ctx, "users", workload.JSON(10_000), snapshots.WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	srv, err := NewServer(dir, Config{Writes: gate.WritesOff, Principal: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	st, ct := mcpsdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Wait()
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "bench", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	args := make([]json.RawMessage, 1024)
	for i := range args {
		args[i] = json.RawMessage(fmt.Sprintf(`{"database":"bench","resource":"users","path":"/%d","revision":2}`, i*9))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "read", Arguments: args[i%len(args)]})
		if err != nil || res.IsError {
			b.Fatalf("read: %v %+v", err, res)
		}
	}
}

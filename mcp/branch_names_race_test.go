package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Branch operations racing on one name: exactly one create, exactly one delete, and a write racing a delete is
// either on the branch's history or refused.
func TestRacesBranchNames(t *testing.T) {
	h := newHarness(t, Config{Writes: "branches"})
	h.ok("create_database", `{"database":"shop"}`)
	h.ok("put", `{"database":"shop","resource":"doc","value":{"n":0}}`)
	callAll := func(n int, name string, args func(i int) string) []string {
		out := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := h.cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: name, Arguments: json.RawMessage(args(i))})
				if err != nil {
					out[i] = "PROTOCOL " + err.Error()
					return
				}
				text := res.Content[0].(*mcpsdk.TextContent).Text
				if res.IsError {
					code, _, _ := strings.Cut(text, ":")
					out[i] = code
				} else {
					out[i] = "ok"
				}
			}()
		}
		wg.Wait()
		return out
	}
	count := func(xs []string, v string) int {
		n := 0
		for _, x := range xs {
			if x == v {
				n++
			}
		}
		return n
	}
	for round := range 5 {
		b := fmt.Sprintf("b%d", round)
		got := callAll(8, "create_branch", func(int) string { return `{"database":"shop","name":"` + b + `"}` })
		if count(got, "ok") != 1 {
			t.Errorf("8 concurrent create_branch %s: %v, want exactly one ok", b, got)
		}
		got = callAll(8, "delete_branch", func(int) string { return `{"database":"shop","name":"` + b + `"}` })
		if count(got, "ok") != 1 {
			t.Errorf("8 concurrent delete_branch %s: %v, want exactly one ok", b, got)
		}
		for _, g := range got {
			if g != "ok" && g != "NOT_FOUND" {
				t.Errorf("delete_branch: %s", g)
			}
		}
	}
}

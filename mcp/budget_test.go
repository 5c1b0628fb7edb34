package mcp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/strata-db/strata/gate"
)

// The context budget (docs/design.md §3.4): what a model is sent costs tokens in every conversation that has the
// server connected, counted here as characters ÷ 4 (deterministic, and close to what tokenizers give for this kind
// of text). TestTokenBudget fails when one of them is exceeded.
const (
	budgetReadTools    = 2400 // name + description + inputSchema of the tools of a read-only server
	budgetAllTools     = 5000 // the same, with writes on (every tool)
	budgetInstructions = 500  // the server's instructions
	budgetSafeChange   = 600  // the text of the results of create_branch, update, diff, promote (a plan), apply_plan
)

func tokens(chars int) int { return (chars + 3) / 4 }

// toolsTokens is what the model is sent for the tools of a server in mode: name, description and input schema
// (compact JSON, as clients send it), in tokens.
func toolsTokens(t *testing.T, mode string) (total int, per map[string]int) {
	t.Helper()
	h := newHarness(t, Config{Writes: mode})
	per = map[string]int{}
	chars := 0
	for _, tool := range h.listTools() {
		b, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		n := len(tool.Name) + len(tool.Description) + len(b)
		per[tool.Name] = tokens(n)
		chars += n
	}
	return tokens(chars), per
}

// safeChangeTokens runs the safe-change loop an agent follows (the instructions' and the safe_change prompt's) on a
// small catalogue and returns the tokens of the text of its results, each result's text too.
func safeChangeTokens(t *testing.T) (total int, texts []string) {
	t.Helper()
	h := newHarness(t, Config{Writes: gate.WritesBranches, Principal: "agent"})
	h.ok("create_database", `{"database":"shop"}`)
	base := h.seed("shop", "catalog", `{"currency":"EUR","items":[{"id":1,"name":"mug","price":10},{"id":2,"name":"tee","price":20}]}`)
	steps := []struct{ tool, args string }{
		{"create_branch", `{"database":"shop","name":"agent/reprice"}`},
		{"update", `{"database":"shop","resource":"catalog","path":"/items/0/price","value":12,"branch":"agent/reprice","expected_head":` +
			jsonNumber(base) + `,"message":"the mug costs 12","idempotency_key":"reprice-mug"}`},
		{"diff", `{"database":"shop","from_branch":"main","to_branch":"agent/reprice"}`},
		{"promote", `{"database":"shop","branch":"agent/reprice","message":"reprice the mug"}`},
	}
	chars := 0
	for _, s := range steps {
		r := h.ok(s.tool, s.args)
		texts = append(texts, r.text)
		chars += len(r.text)
		if s.tool == "promote" {
			id := r.str("plan_id")
			if id == "" {
				t.Fatalf("promote into main did not answer a plan:\n%s", r.text)
			}
			h.decide(id, true, "") // a person approves it
			r = h.ok("apply_plan", `{"plan_id":"`+id+`"}`)
			texts = append(texts, r.text)
			chars += len(r.text)
		}
	}
	return tokens(chars), texts
}

func jsonNumber(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestTokenBudget holds the budgets: the tools read-only and with writes, the instructions, and the safe-change
// loop's result text. Every error code stays explained where an agent reads it: in the instructions.
func TestTokenBudget(t *testing.T) {
	for _, c := range []struct {
		mode  string
		limit int
	}{{gate.WritesOff, budgetReadTools}, {gate.WritesOn, budgetAllTools}} {
		total, per := toolsTokens(t, c.mode)
		t.Logf("tools, writes=%s: %d tokens in %d tools %v", c.mode, total, len(per), per)
		if total > c.limit {
			t.Errorf("tools, writes=%s: %d tokens, over the budget of %d", c.mode, total, c.limit)
		}
	}
	if n := tokens(len(instructions)); n > budgetInstructions {
		t.Errorf("instructions: %d tokens, over the budget of %d", n, budgetInstructions)
	} else {
		t.Logf("instructions: %d tokens", n)
	}
	total, texts := safeChangeTokens(t)
	t.Logf("safe-change loop: %d tokens of result text:\n%s", total, strings.Join(texts, "\n\n"))
	if total > budgetSafeChange {
		t.Errorf("safe-change loop: %d tokens of result text, over the budget of %d", total, budgetSafeChange)
	}
	for _, code := range gate.Codes {
		if !strings.Contains(instructions, code) {
			t.Errorf("error code %s is not explained in the instructions", code)
		}
	}
}

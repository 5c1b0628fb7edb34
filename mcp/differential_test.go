package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/jqdiff"
)

// The query tool answers exactly what plain gojq answers on the same document (internal/jqdiff is the
// reference): the corpus on every document as the resource, and programs generated around the documents' literal
// paths on the object of all resources, each through an MCP client, paging with cursors to the end.

// queryAll runs a query through the tool, page after page, and returns every result and the error text it ended
// with ("" for none: else its code, message and detail).
func (h *harness) queryAll(db, resource string, c jqdiff.Case) ([][]byte, string) {
	h.t.Helper()
	args := map[string]any{"database": db, "query": c.Program, "limit": 1000}
	if resource != "" {
		args["resource"] = resource
	}
	if c.Params != "" {
		args["params"] = json.RawMessage(c.Params)
	}
	var out [][]byte
	for len(out) < 5000 {
		b, err := json.Marshal(args)
		if err != nil {
			h.t.Fatal(err)
		}
		r := h.call("query", string(b))
		if r.res.IsError {
			return out, r.str("code") + ": " + r.str("message") + ": " + r.str("detail")
		}
		var page []json.RawMessage
		if err := json.Unmarshal([]byte(r.raw("results")), &page); err != nil {
			h.t.Fatalf("results: %v\n%s", err, r.data)
		}
		for _, x := range page {
			out = append(out, x)
		}
		if more, _ := r.m["more"].(bool); !more {
			break
		}
		args["cursor"] = r.str("next_cursor")
	}
	return out, ""
}

func TestQueryToolDifferential(t *testing.T) {
	// The output cap is a deliberate refusal (LIMIT_EXCEEDED, a cursor to continue): raised here above the largest
	// answer of the corpus, so that every answer is compared.
	h := newHarness(t, Config{MaxOutputChars: 1 << 20})
	if _, err := h.dir.Create(context.Background(), "corpus", "operator"); err != nil {
		t.Fatal(err)
	}
	docs := map[string]any{}
	var documents []jqdiff.Document
	for _, d := range jqdiff.Documents() {
		// go-sdk's client decodes structured content with encoding/json into float64s, and a number beyond
		// float64's range (1E400) fails the whole call on such a client; the engine's differential test covers
		// those documents.
		var probe any
		if json.Unmarshal([]byte(d.Text), &probe) != nil {
			continue
		}
		documents = append(documents, d)
		h.seed("corpus", d.Name, d.Text)
		v, err := jqdiff.Decode(d.Text)
		if err != nil {
			t.Fatal(err)
		}
		docs[d.Name] = v
	}
	var fails []string
	n := 0
	check := func(resource string, c jqdiff.Case) {
		input := any(docs)
		if resource != "" {
			input = docs[resource]
		}
		params, err := c.ParamValues()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ref := jqdiff.Run(ctx, input, c.Program, params, 5000)
		cancel()
		if ref.Timeout {
			return
		}
		n++
		results, errText := h.queryAll("corpus", resource, c)
		if err := jqdiff.Compare(ref, results, errText); err != nil {
			fails = append(fails, fmt.Sprintf("%s (params %s) on %q: %v", c.Program, c.Params, resource, err))
		}
	}
	corpus := jqdiff.Corpus()
	for _, d := range documents {
		for _, c := range corpus {
			check(d.Name, c)
		}
		around, err := jqdiff.AroundPrefixes(d.Text, d.Name)
		if err != nil {
			t.Fatal(err)
		}
		// Every third of the generated programs: the engine's own differential test runs them all.
		for i := 0; i < len(around); i += 3 {
			check("", around[i])
		}
	}
	t.Logf("%d cases compared through the query tool", n)
	if len(fails) > 0 {
		if len(fails) > 30 {
			fails = fails[:30]
		}
		t.Errorf("the query tool answers differently from gojq:\n%s", strings.Join(fails, "\n"))
	}
}

// TestBisectDifferential: bisect's predicates are jq programs too, and every evaluation it reports must be jq's
// truth of the predicate on that revision's document, computed indexes after literal prefixes included.
func TestBisectDifferential(t *testing.T) {
	h := newHarness(t, Config{})
	if _, err := h.dir.Create(context.Background(), "hist", "operator"); err != nil {
		t.Fatal(err)
	}
	// Revision j holds k = j and users u0…uj with n = j: predicates over .users[.k] read both.
	var docs []string
	revs := []uint64{}
	for j := 0; j < 12; j++ {
		var users []string
		for i := 0; i <= j; i++ {
			users = append(users, fmt.Sprintf(`{"name":"u%d","n":%d}`, i, i))
		}
		doc := fmt.Sprintf(`{"k":%d,"limit":5,"users":[%s]}`, j, strings.Join(users, ","))
		docs = append(docs, doc)
		revs = append(revs, h.seed("hist", "doc", doc))
	}
	for _, pred := range []string{
		`.users[.k].n >= .limit`,
		`.users[length - 1] != null`,
		`.users[.k - 1:] | length > 1`,
		`.users[.limit].name == "u5"`,
		`.users[keys[0] | length] != null`,
		`.k as $k | .users[$k].n > 7`,
	} {
		r := h.ok("bisect", fmt.Sprintf(`{"database":"hist","resource":"doc","predicate":%q,"from_revision":%d}`, pred, revs[0]))
		truth := func(rev uint64) bool {
			for i, n := range revs {
				if n == rev {
					v, _ := jqdiff.Decode(docs[i])
					out := jqdiff.Run(context.Background(), v, pred, nil, 1)
					if out.Err != nil {
						t.Fatalf("%s at revision %d: gojq: %v", pred, rev, out.Err)
					}
					return len(out.Results) > 0 && out.Results[0] != "false" && out.Results[0] != "null"
				}
			}
			t.Fatalf("%s: evaluation at revision %d, which is not in the history", pred, rev)
			return false
		}
		evals, _ := r.m["evaluations"].([]any)
		for _, e := range evals {
			ev := e.(map[string]any)
			rev, _ := ev["revision"].(json.Number).Int64()
			if got := ev["value"].(bool); got != truth(uint64(rev)) {
				t.Errorf("%s: bisect evaluated revision %d as %v; jq says %v", pred, rev, got, !got)
			}
		}
		first := uint64(0)
		for _, n := range revs {
			if truth(n) {
				first = n
				break
			}
		}
		if got := r.num("revision"); got != first {
			t.Errorf("%s: bisect found revision %d; the first where jq says true is %d\n%s", pred, got, first, r.data)
		}
	}
}

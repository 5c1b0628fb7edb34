package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/query"
	"github.com/strata-db/strata/revision"
)

// The jq tools: query and bisect (reads, docs/design.md §3.2) and transform (a write, §3.3). They run their programs in
// the server's query.Engine, under its deadline, isolation and limits; the engine's cursors are passed through as
// they are (opaque, signed, bound to the program, parameters, resource, revision and principal).

var (
	pQueryResource = param{name: "resource", kind: kString, desc: "omitted: the object of all resources"}
	pParams        = param{name: "params", kind: kParams, desc: `jq variables: {"min": 10} gives $min`}
)

func queryTools() []*toolSpec {
	return []*toolSpec{
		{
			name: "query", title: "Query with jq",
			desc: "Run a jq program on a resource at a state, a page of results at a time; numbers keep their exact text. A deadline and memory limit apply; no input, $ENV or modules.",
			params: params(one(pDatabase, pQueryResource,
				param{name: "query", kind: kString, required: true, desc: `e.g. ".items[] | select(.price > $min)"`},
				pParams),
				refParams(""),
				one(pLimit(1000), pCursor)),
			output: outputSchema([]string{"database", "revision", "results", "more"},
				oDatabase, oRevision, oBranch,
				prop{"resource", strS("the resource the program ran on, when one was given")},
				prop{"results", arrS("the results, in order", anyS("one result: any JSON value, numbers with their exact text"))},
				oMore, oNextCursor),
			handle: queryTool,
		},
		{
			name: "bisect", title: "Find when a predicate became true",
			desc: "The first revision of branch where a jq predicate became true, between from_revision and to_revision (default all), like git bisect: O(log n) evaluations. Its first output decides; false, null or none is false.",
			params: params(one(pDatabase, pQueryResource,
				param{name: "predicate", kind: kString, required: true, desc: `e.g. ".items | length > 100"`},
				pParams,
				param{name: "branch", kind: kString},
				param{name: "from_revision", kind: kInteger, min: 1},
				param{name: "to_revision", kind: kInteger, min: 1})),
			output: outputSchema([]string{"database", "branch", "found", "evaluations"},
				oDatabase,
				prop{"branch", strS("the branch searched")},
				prop{"resource", strS("the resource the predicate ran on, when one was given")},
				prop{"found", boolS("true when the predicate is true at the end of the range, so that a first revision exists")},
				prop{"revision", intS("when found: the first revision where the predicate is true")},
				prop{"last_false", intS("when found: the revision before it, where the predicate was false (absent when it was true from the start of the range)")},
				prop{"candidates", intS("how many revisions in the range could change the answer")},
				prop{"evaluations", arrS("every evaluation, in the order made", closedObject("one evaluation", []string{"revision", "value"},
					prop{"revision", intS("the revision evaluated")},
					prop{"value", boolS("the predicate's answer there")}))}),
			handle: bisectTool,
		},
	}
}

func transformTool() *toolSpec {
	return &toolSpec{
		name: "transform", title: "Transform a resource with jq", write: true, destructive: true,
		desc: "The resource becomes the one output of a jq program run on it at the branch head, as one revision. No output or several write nothing.",
		params: params(one(pDatabase, pResource,
			param{name: "query", kind: kString, required: true, desc: `e.g. ".users |= map(select(.dup | not))"`},
			pParams),
			writeParams()),
		output: writeOutSchema(),
		handle: transform,
	}
}

// queryParams are the call's params argument, each value kept as its exact JSON text.
func (c *call) queryParams() (map[string]any, error) {
	raw := c.a.raw("params")
	ps := map[string]any{}
	if len(raw) == 0 || string(raw) == "null" {
		return ps, nil
	}
	bad := func(format string, args ...any) error {
		return newError(codeInvalidArgument, "argument \"params\" "+format+"; nothing was done", args...).
			withHint(`give an object such as {"min": 100}: each member becomes a $name variable`)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, bad("must be an object, not %s", clip(string(raw)))
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, bad("is not valid JSON: %v", err)
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, bad("is not valid JSON: %v", err)
		}
		if _, dup := ps[name]; dup {
			return nil, bad("names %q twice", clip(name))
		}
		// A value holds to Strata's JSON rules as a put's does: no key twice in an object inside it, valid UTF-8,
		// bounded depth (found in review: {"x":{"a":1,"a":2}} was taken, as gojq's last one).
		if err := revision.CheckJSON(v); err != nil {
			return nil, bad("member %q is not valid JSON: %v", clip(name), err)
		}
		ps[name] = v
	}
	return ps, nil
}

// ---- query

type queryOut struct {
	Database   string            `json:"database"`
	Revision   uint64            `json:"revision"`
	Branch     string            `json:"branch,omitempty"`
	Resource   string            `json:"resource,omitempty"`
	Results    []json.RawMessage `json:"results"`
	More       bool              `json:"more"`
	NextCursor string            `json:"next_cursor,omitempty"`
}

func queryTool(ctx context.Context, c *call) (string, any, error) {
	ref, _, err := c.a.ref("")
	if err != nil {
		return "", nil, err
	}
	ps, err := c.queryParams()
	if err != nil {
		return "", nil, err
	}
	v, err := c.view(ctx)
	if err != nil {
		return "", nil, err
	}
	req := query.Request{Resource: c.a.str("resource"), Program: c.a.str("query"), Params: ps,
		Limit: c.limit(100), Cursor: c.a.str("cursor"), Bind: c.s.argsDigest(c.t, c.a)}
	res, err := v.Query(ctx, ref, req)
	if err != nil {
		return "", nil, err
	}
	// The engine bounds a page by its compact JSON; the answer escapes some characters, which can make it longer.
	// When the page does not fit the budget, ask again for the results that fit: the engine's cursor then continues
	// after them.
	if fit := fitting(res.Results, c.s.budget()); fit < len(res.Results) {
		if fit == 0 {
			return "", nil, newError(codeLimitExceeded, "one result of the program is larger than the %d-character output cap", c.s.cfg.MaxOutputChars).
				withHint("narrow the program to a smaller part of the value (a path, a slice, length or keys)")
		}
		req.Limit = fit
		if res, err = v.Query(ctx, ref, req); err != nil {
			return "", nil, err
		}
	}
	out := queryOut{Database: c.a.str("database"), Revision: res.Revision, Resource: req.Resource,
		Results: res.Results, More: res.More, NextCursor: res.NextCursor}
	// Every read names the state it answered, and the branch it read through (found in review: query did not). The
	// branch is the reference's; the revision is the engine's (pinned by the cursor on later pages).
	if b, ok := ref.ThroughBranch(); ok {
		out.Branch = b
	} else if ref.Name != "" { // a branch or a snapshot: only the catalog knows
		if st, err := v.Resolve(ctx, ref); err == nil {
			out.Branch = st.Branch
		}
	}
	if out.Results == nil {
		out.Results = []json.RawMessage{}
	}
	return fmt.Sprintf("%d result(s) at revision %d%s.", len(out.Results), out.Revision, moreText(out.More)), out, nil
}

// fitting is how many of the first results fit in budget characters of the answer's JSON.
func fitting(results []json.RawMessage, budget int) int {
	used := 0
	for i, r := range results {
		b, _, err := marshalData(r)
		if err != nil {
			return i
		}
		used += len(b) + 1
		if used > budget {
			return i
		}
	}
	return len(results)
}

// ---- bisect

type bisectOut struct {
	Database    string             `json:"database"`
	Branch      string             `json:"branch"`
	Resource    string             `json:"resource,omitempty"`
	Found       bool               `json:"found"`
	Revision    uint64             `json:"revision,omitempty"`
	LastFalse   uint64             `json:"last_false,omitempty"`
	Candidates  int                `json:"candidates"`
	Evaluations []query.Evaluation `json:"evaluations"`
}

func bisectTool(ctx context.Context, c *call) (string, any, error) {
	ps, err := c.queryParams()
	if err != nil {
		return "", nil, err
	}
	v, err := c.view(ctx)
	if err != nil {
		return "", nil, err
	}
	branch := branchOr(c.a.str("branch"))
	res, err := v.Bisect(ctx, query.BisectRequest{Branch: branch, Resource: c.a.str("resource"),
		Predicate: c.a.str("predicate"), Params: ps, From: c.a.uint("from_revision"), To: c.a.uint("to_revision")})
	if err != nil {
		return "", nil, err
	}
	out := bisectOut{Database: c.a.str("database"), Branch: branch, Resource: c.a.str("resource"), Found: res.Found,
		Candidates: res.Candidates, Evaluations: res.Evaluations}
	if out.Evaluations == nil {
		out.Evaluations = []query.Evaluation{}
	}
	n := len(out.Evaluations)
	if !res.Found {
		return fmt.Sprintf("the predicate is not true at the end of the range: nothing to find (%d evaluation(s)).", n), out, nil
	}
	out.Revision, out.LastFalse = res.First, res.Last
	if res.Last == 0 {
		return fmt.Sprintf("true from the start of the range: revision %d (%d evaluation(s)).", res.First, n), out, nil
	}
	return fmt.Sprintf("first true at revision %d; false at revision %d (%d evaluation(s)).", res.First, res.Last, n), out, nil
}

// ---- transform

func transform(ctx context.Context, c *call) (string, any, error) {
	if _, err := c.queryParams(); err != nil {
		return "", nil, err
	}
	ch := c.change(gate.OpTransform)
	ch.Program, ch.Params = c.a.str("query"), c.a.raw("params")
	return c.write(ctx, ch)
}

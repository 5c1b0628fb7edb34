package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/internal/safetext"
	"github.com/strata-db/strata/query"
	"github.com/strata-db/strata/snapshots"
)

// This file holds the jq commands: query and bisect (docs/design.md §5). Both run their programs in a query.Engine,
// whose workers are re-executions of this binary (main calls query.WorkerMain).

type queryOptions struct {
	at     string
	params []string
	limit  int
	json   bool
}

func newQueryCommand(g *globalOptions) *cobra.Command {
	o := &queryOptions{}
	cmd := &cobra.Command{
		Use:   "query DB RESOURCE JQ",
		Short: "Run a jq program over a resource, at any state",
		Long: `Run a jq program over a resource at a state (default: the head of main) and print each result on its own
line: indented on a terminal, otherwise compact JSON. Numbers keep their exact text.

--param name=JSON makes $name available to the program (repeat it for more). --limit stops after that many
results, with a note on stderr when there are more. Programs run under a deadline and memory limits; one that does
not parse shows where, with a caret. --json prints {"revision", "results", "more"} on one line.`,
		Example: `  strata query shop catalog '.products[] | select(.price > $min) | .id' --param min=100
  strata query shop catalog '.products | length' --at before-sale
  strata query shop catalog '[.products[].price] | add' --json`,
		Args: args(3, 3),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if o.limit < 0 {
				return usageErrorf("--limit must be 0 (all results) or more, not %d", o.limit)
			}
			return runQuery(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), g, o, args[0], args[1], args[2])
		}),
	}
	cmd.Flags().StringVar(&o.at, "at", "", "the state to read: a revision, snapshot, branch or BRANCH@TIME (default: the head of main)")
	cmd.Flags().StringArrayVar(&o.params, "param", nil, "name=JSON: the program sees $name as this JSON value (repeatable)")
	cmd.Flags().IntVar(&o.limit, "limit", 0, "print at most this many results; 0 prints all")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the results with the revision that answered, as one line of JSON")
	return cmd
}

// parseParams parses --param name=JSON flags. Values keep their exact text (json.RawMessage), so numbers do too.
func parseParams(flags []string) (map[string]any, error) {
	ps := map[string]any{}
	for _, f := range flags {
		name, val, ok := strings.Cut(f, "=")
		if !ok || name == "" {
			return nil, usageErrorf("--param %q: give name=JSON, such as min=100 or tag='\"sale\"'", f)
		}
		name = strings.TrimPrefix(name, "$")
		if !json.Valid([]byte(val)) {
			return nil, usageErrorf("--param %s: %q is not JSON (a string needs quotes: %s='\"%s\"')", name, val, name, val)
		}
		if _, dup := ps[name]; dup {
			return nil, usageErrorf("--param %s is given twice", name)
		}
		ps[name] = json.RawMessage(val)
	}
	return ps, nil
}

// newEngine returns a query engine with the default limits.
func newEngine() (*query.Engine, error) { return query.New(query.Options{}) }

// queryJSON is what `query --json` prints.
type queryJSON struct {
	Revision uint64            `json:"revision"`
	Branch   string            `json:"branch,omitempty"` // the branch read through, when one was (as get --json and MCP say)
	Results  []json.RawMessage `json:"results"`
	More     bool              `json:"more"`
}

func runQuery(ctx context.Context, w, stderr io.Writer, g *globalOptions, o *queryOptions, dbName, resource, program string) error {
	ref, err := parseRef(o.at)
	if err != nil {
		return err
	}
	ps, err := parseParams(o.params)
	if err != nil {
		return err
	}
	if err := snapshots.ValidResourceName(resource); err != nil {
		return err
	}
	e, err := newEngine()
	if err != nil {
		return err
	}
	defer e.Close()
	pretty := !o.json && g.env.terminal(w)
	return g.withDB(ctx, dbName, func(db *snapshots.DB) error {
		out := queryJSON{Results: []json.RawMessage{}}
		if b, ok := ref.ThroughBranch(); ok {
			out.Branch = b
		} else if ref.Name != "" { // a branch or a snapshot: only the catalog knows
			if st, err := db.Resolve(ctx, ref); err == nil {
				out.Branch = st.Branch
			}
		}
		req := query.Request{Resource: resource, Program: program, Params: ps, Caller: "cli"}
		printed := 0
		for {
			if o.limit > 0 {
				req.Limit = min(o.limit-printed, 1000)
			}
			res, err := e.Query(ctx, db, ref, req)
			if err != nil {
				return err
			}
			out.Revision = res.Revision
			for _, r := range res.Results {
				printed++
				if o.json {
					out.Results = append(out.Results, r)
					continue
				}
				text := []byte(r)
				if pretty {
					var buf bytes.Buffer
					if err := json.Indent(&buf, text, "", "  "); err != nil {
						return err
					}
					text = buf.Bytes()
				}
				if _, err := w.Write(append(safetext.JSON(text), '\n')); err != nil {
					return err
				}
			}
			if !res.More {
				break
			}
			if o.limit > 0 && printed >= o.limit {
				out.More = true
				if !o.json {
					fmt.Fprintf(stderr, "strata: printed the first %d result%s; there are more (raise --limit, or 0 for all)\n", printed, plural(printed))
				}
				break
			}
			req.Cursor = res.NextCursor
		}
		if o.json {
			return writeJSONLine(w, out)
		}
		return nil
	})
}

type bisectOptions struct {
	branch   string
	from, to uint64
	params   []string
	json     bool
}

func newBisectCommand(g *globalOptions) *cobra.Command {
	o := &bisectOptions{}
	cmd := &cobra.Command{
		Use:   "bisect DB RESOURCE PREDICATE",
		Short: "Find the first revision where a jq predicate on a resource became true",
		Long: `Find the first revision on a branch (following first parents) where a jq predicate on a resource became true,
like git bisect: it assumes the predicate is false up to some revision and true from then on, and evaluates it at
O(log n) of the revisions that changed the resource. Each evaluation is printed as it was made, then the answer.
The predicate's first output decides: false, null or no output is false.`,
		Example: `  strata bisect shop catalog '.products[0].price < 190'
  strata bisect shop config '.flags.beta' --branch main --from 2 --to 9`,
		Args: args(3, 3),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return runBisect(cmd.Context(), cmd.OutOrStdout(), g, o, args[0], args[1], args[2])
		}),
	}
	cmd.Flags().StringVarP(&o.branch, "branch", "b", snapshots.Main, "the branch whose history to search")
	cmd.Flags().Uint64Var(&o.from, "from", 0, "the first revision of the range (default: the branch's first)")
	cmd.Flags().Uint64Var(&o.to, "to", 0, "the last revision of the range (default: the branch head)")
	cmd.Flags().StringArrayVar(&o.params, "param", nil, "name=JSON: the predicate sees $name as this JSON value (repeatable)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the answer and its evaluations as one line of JSON")
	return cmd
}

func runBisect(ctx context.Context, w io.Writer, g *globalOptions, o *bisectOptions, dbName, resource, predicate string) error {
	ps, err := parseParams(o.params)
	if err != nil {
		return err
	}
	e, err := newEngine()
	if err != nil {
		return err
	}
	defer e.Close()
	return g.withDB(ctx, dbName, func(db *snapshots.DB) error {
		res, err := e.Bisect(ctx, db, query.BisectRequest{Branch: o.branch, Resource: resource, Predicate: predicate, Params: ps, From: o.from, To: o.to})
		if err != nil {
			return err
		}
		if o.json {
			if res.Evaluations == nil {
				res.Evaluations = []query.Evaluation{}
			}
			// The bisect tool's field names (README: --json has the MCP tools' names), plus "first", which
			// this command printed before it had them.
			out := struct {
				Database    string             `json:"database"`
				Branch      string             `json:"branch"`
				Resource    string             `json:"resource,omitempty"`
				Found       bool               `json:"found"`
				Revision    uint64             `json:"revision,omitempty"`
				First       uint64             `json:"first"`
				LastFalse   uint64             `json:"last_false"`
				Candidates  int                `json:"candidates"`
				Evaluations []query.Evaluation `json:"evaluations"`
			}{Database: dbName, Branch: o.branch, Resource: resource, Found: res.Found, First: res.First,
				LastFalse: res.Last, Candidates: res.Candidates, Evaluations: res.Evaluations}
			if res.Found {
				out.Revision = res.First
			}
			return writeJSONLine(w, out)
		}
		for _, ev := range res.Evaluations {
			fmt.Fprintf(w, "revision %d: %t\n", ev.Revision, ev.Value)
		}
		n := len(res.Evaluations)
		switch {
		case !res.Found:
			fmt.Fprintf(w, "not true at the end of the range: nothing to find (%d evaluation%s)\n", n, plural(n))
		case res.Last == 0:
			fmt.Fprintf(w, "first true at revision %d: true from the start of the range (%d evaluation%s)\n", res.First, n, plural(n))
		default:
			fmt.Fprintf(w, "first true at revision %d (false at revision %d; %d evaluation%s of %d candidate%s)\n",
				res.First, res.Last, n, plural(n), res.Candidates, plural(res.Candidates))
		}
		return nil
	})
}

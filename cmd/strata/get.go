package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/internal/safetext"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
)

type getOptions struct {
	at       string
	maxDepth int
	limit    uint64
	offset   uint64
	json     bool
}

func newGetCommand(g *globalOptions) *cobra.Command {
	o := &getOptions{}
	cmd := &cobra.Command{
		Use:   "get DB RESOURCE[/path]",
		Short: "Print the value at a JSON Pointer inside a resource",
		Long: `Print the value at a JSON Pointer inside a resource: RESOURCE alone is the whole document,
RESOURCE/products/0/price the value at /products/0/price (RFC 6901: "~1" stands for "/" in a key, "~0" for "~").

On a terminal the value is indented; otherwise it is compact JSON. --max-depth, --limit and --offset bound what
is shown: deeper containers become {"$elided":…} markers, and a window of members or elements is shown, with a
note on stderr saying how to continue. --json prints {"revision", "branch", "value", "truncated", …} on one line.`,
		Example: `  strata get shop catalog/products/0/price
  strata get shop catalog/products --limit 10 --offset 20 --max-depth 1
  strata get shop catalog/products/0 --at main@2026-03-14T09:00:00Z`,
		Args: args(2, 2),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if o.maxDepth < 0 {
				return usageErrorf("--max-depth must be 0 (no limit) or more, not %d", o.maxDepth)
			}
			return get(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), g, o, args[0], args[1])
		}),
	}
	cmd.Flags().StringVar(&o.at, "at", "", "the state to read: a revision, snapshot, branch or BRANCH@TIME (default: the head of main)")
	cmd.Flags().IntVar(&o.maxDepth, "max-depth", 0, "show at most this many levels of containers; 0 shows all")
	cmd.Flags().Uint64Var(&o.limit, "limit", 0, "show at most this many members or elements of the value; 0 shows all")
	cmd.Flags().Uint64Var(&o.offset, "offset", 0, "skip this many members (in key order) or elements first")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the value with the revision that answered, as one line of JSON")
	return cmd
}

// getResult is what `get --json` prints (docs/design.md §3.4, read).
type getResult struct {
	Revision   uint64          `json:"revision"`
	Branch     string          `json:"branch,omitempty"`
	Resource   string          `json:"resource"`
	Path       string          `json:"path"`
	Value      json.RawMessage `json:"value"`
	Truncated  bool            `json:"truncated"`
	Count      uint64          `json:"count,omitempty"`
	NextOffset *uint64         `json:"next_offset,omitempty"`
}

func get(ctx context.Context, w, stderr io.Writer, g *globalOptions, o *getOptions, dbName, arg string) error {
	resource, ptr, err := splitResourcePath(arg)
	if err != nil {
		return err
	}
	ref, err := parseRef(o.at)
	if err != nil {
		return err
	}
	return g.withDB(ctx, dbName, func(db *snapshots.DB) error {
		v, st, err := db.Get(ctx, ref, resource, nil)
		if err != nil {
			return err
		}
		rr, err := db.Forest().Read(ctx, v, ptr, revision.ReadOptions{MaxDepth: o.maxDepth, Limit: o.limit, Offset: o.offset})
		if err != nil {
			return fmt.Errorf("%s at revision %d: %w", resource, st.Rev.Number, err)
		}
		if o.json {
			res := getResult{Revision: st.Rev.Number, Branch: st.Branch, Resource: resource, Path: ptr.String(),
				Value: rr.JSON, Truncated: rr.Truncated || rr.HasNext, Count: rr.Count}
			if rr.HasNext {
				res.NextOffset = &rr.Next
			}
			return writeJSONLine(w, res)
		}
		text := rr.JSON
		if g.env.terminal(w) {
			var buf bytes.Buffer
			if err := json.Indent(&buf, text, "", "  "); err != nil {
				return err
			}
			text = buf.Bytes()
		}
		if _, err := w.Write(append(safetext.JSON(text), '\n')); err != nil {
			return err
		}
		if rr.HasNext {
			fmt.Fprintf(stderr, "strata: showed %d of %d from offset %d; continue with --offset %d\n",
				rr.Next-o.offset, rr.Count, o.offset, rr.Next)
		}
		if rr.Truncated && bytes.Contains(rr.JSON, []byte(`"`+revision.ElisionKey+`"`)) {
			fmt.Fprintf(stderr, "strata: deeper levels were left out (see the %q markers); get them by their path\n", revision.ElisionKey)
		}
		return nil
	})
}

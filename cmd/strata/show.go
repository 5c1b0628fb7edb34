package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/internal/safetext"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
)

type showOptions struct {
	limit int
	json  bool
}

func newShowCommand(g *globalOptions) *cobra.Command {
	o := &showOptions{}
	cmd := &cobra.Command{
		Use:   "show DB REV",
		Short: "Show a revision: who made it, when, with what, and what it changed",
		Long: `Show a revision's record (branch, parents, time, author, tool, message, resources changed, what it added
to storage) and what it changed against its first parent: counts and the first operations, as RFC 6902 paths
from the database root (/RESOURCE/…). REV is a revision number, or any ref: a snapshot or branch name, or
BRANCH@TIME.`,
		Example: `  strata show shop 4
  strata show shop before-sale --limit 50`,
		Args: args(2, 2),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if o.limit < 1 {
				return usageErrorf("--limit must be at least 1, not %d", o.limit)
			}
			return showRevision(cmd.Context(), cmd.OutOrStdout(), g, o, args[0], args[1])
		}),
	}
	cmd.Flags().IntVar(&o.limit, "limit", 10, "show at most this many operations of the change")
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

// showResult is what `show --json` prints (docs/design.md §3.4, show_revision).
type showResult struct {
	revisionJSON
	NewNodes   int               `json:"new_nodes"`
	NewBytes   int64             `json:"new_bytes"`
	Counts     revision.Counts   `json:"counts"`
	Operations []revision.DiffOp `json:"operations"`
	Truncated  bool              `json:"truncated"`
}

func showRevision(ctx context.Context, w io.Writer, g *globalOptions, o *showOptions, dbName, arg string) error {
	ref, err := parseRef(arg)
	if err != nil {
		return err
	}
	return g.withDB(ctx, dbName, func(db *snapshots.DB) error {
		st, err := db.Resolve(ctx, ref)
		if err != nil {
			return err
		}
		d, err := db.ShowRevision(ctx, st.Rev.Number, o.limit)
		if err != nil {
			return err
		}
		r := d.Rev
		if o.json {
			return writeJSON(w, showResult{revisionOf(r), r.NewNodes, r.NewBytes, d.Diff.Counts, d.Diff.Operations, d.Diff.Truncated})
		}
		j := revisionOf(r)
		tw := table(w)
		fmt.Fprintf(tw, "revision\t%d on %s\n", j.Revision, safetext.Text(j.Branch))
		switch {
		case j.Merged != 0:
			fmt.Fprintf(tw, "parents\t%d, %d (merged)\n", j.Parent, j.Merged)
		case j.Parent != 0:
			fmt.Fprintf(tw, "parent\t%d\n", j.Parent)
		}
		fmt.Fprintf(tw, "time\t%s\n", g.timeText(j.Time))
		fmt.Fprintf(tw, "author\t%s\n", orDash(j.Author))
		fmt.Fprintf(tw, "tool\t%s\n", orDash(j.Tool))
		fmt.Fprintf(tw, "message\t%s\n", orDash(j.Message)) // orDash escapes a newline too: the message stays on its row
		fmt.Fprintf(tw, "changed\t%s\n", resourceList(j.Resources))
		fmt.Fprintf(tw, "stored\t%d new node%s, %s\n", r.NewNodes, plural(r.NewNodes), byteSize(r.NewBytes))
		fmt.Fprintf(tw, "change\t%s\n", countsText(d.Diff))
		if err := tw.Flush(); err != nil {
			return err
		}
		more := ""
		if d.Diff.Truncated {
			n := len(d.Diff.Operations)
			more = fmt.Sprintf("… the first %d operation%s; all of them: strata diff %s %d %d", n, plural(n), dbName, j.Parent, j.Revision)
		}
		return printDiff(w, g.painter(w), d.Diff, more)
	})
}

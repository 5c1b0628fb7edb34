package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/internal/safetext"
	"github.com/strata-db/strata/snapshots"
)

type logOptions struct {
	path   string
	branch string
	limit  int
	json   bool
}

func newLogCommand(g *globalOptions) *cobra.Command {
	o := &logOptions{}
	cmd := &cobra.Command{
		Use:   "log DB [RESOURCE[/path]]",
		Short: "List revisions, newest first: all of them, or those that changed a resource or a path",
		Long: `List the revisions of a branch (default main), newest first, following first parents, one per line:

  REVISION  TIME  AUTHOR  TOOL  MESSAGE  [RESOURCES CHANGED]

Changes of schemas (strata schema) are listed among them, as "schema" lines. With RESOURCE, only the revisions that changed it; with --path (or RESOURCE/path), only those that changed
the value at that JSON Pointer inside it. Times are RFC 3339, ready for --at BRANCH@TIME.`,
		Example: `  strata log shop
  strata log shop catalog --path /products/0/price
  strata log shop --branch try-sale -n 5`,
		Args: args(1, 2),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if o.limit <= 0 {
				return usageErrorf("-n must be at least 1, not %d", o.limit)
			}
			q := snapshots.HistoryQuery{Branch: o.branch, Limit: o.limit}
			if len(args) == 2 {
				var err error
				if q.Resource, q.Path, err = splitResourcePath(args[1]); err != nil {
					return err
				}
			}
			if o.path != "" {
				if q.Resource == "" {
					return usageErrorf("--path needs a RESOURCE: strata log DB RESOURCE --path %s", o.path)
				}
				if len(q.Path) > 0 {
					return usageErrorf("give the path once: as RESOURCE/path or as --path, not both")
				}
				p, err := pointerFlag(o.path)
				if err != nil {
					return err
				}
				q.Path = p
			}
			return showLog(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), g, o, args[0], q)
		}),
	}
	cmd.Flags().StringVarP(&o.path, "path", "p", "", "only revisions that changed the value at this JSON Pointer inside RESOURCE")
	cmd.Flags().StringVarP(&o.branch, "branch", "b", snapshots.Main, "the branch whose history to list")
	cmd.Flags().IntVarP(&o.limit, "max-count", "n", 50, "list at most this many revisions")
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

func showLog(ctx context.Context, w, stderr io.Writer, g *globalOptions, o *logOptions, dbName string, q snapshots.HistoryQuery) error {
	return g.withDB(ctx, dbName, func(db *snapshots.DB) error {
		if q.Resource != "" {
			if err := snapshots.ValidResourceName(q.Resource); err != nil {
				return err
			}
		}
		page, err := db.History(ctx, q)
		if err != nil {
			return err
		}
		for limit := q.Limit; page.Next != 0 && len(page.Revisions) < limit; {
			// A filtered walk stops at its scan limit with a cursor: the command line walks on to fill its page.
			more := q
			more.Before, more.Limit, more.Head = page.Next, limit-len(page.Revisions), page.Head // the chain read so far
			p, err := db.History(ctx, more)
			if err != nil {
				return err
			}
			page.Revisions, page.Next = append(page.Revisions, p.Revisions...), p.Next
		}
		changes, err := schemaChanges(ctx, db, q.Resource, page)
		if err != nil {
			return err
		}
		if o.json {
			revs := make([]revisionJSON, len(page.Revisions))
			for i, r := range page.Revisions {
				revs[i] = revisionOf(r)
			}
			return writeJSON(w, struct {
				Branch    string         `json:"branch"`
				Resource  string         `json:"resource,omitempty"`
				Path      string         `json:"path,omitempty"`
				Revisions []revisionJSON `json:"revisions"`
				More      bool           `json:"more"`
				// SchemaChanges are the changes of schemas (set, removed) made while the revisions listed were,
				// newest first: schemas are configuration, on no branch.
				SchemaChanges []snapshots.SchemaEvent `json:"schema_changes"`
			}{q.Branch, q.Resource, q.Path.String(), revs, page.Next != 0, changes})
		}
		if len(page.Revisions) == 0 && q.Resource != "" {
			// Nothing changed it: say so, unless the name is wrong.
			if _, _, err := db.Get(ctx, snapshots.Ref{Branch: q.Branch}, q.Resource, nil); errors.Is(err, snapshots.ErrNotFound) {
				return err
			}
		}
		if len(page.Revisions) == 0 && len(changes) == 0 {
			_, err := fmt.Fprintf(w, "no revision on %s changed %s%s\n", q.Branch, q.Resource, q.Path)
			return err
		}
		tw := table(w)
		for _, r := range page.Revisions {
			for len(changes) > 0 && changes[0].Time.After(r.Time) {
				printSchemaChange(tw, g, changes[0])
				changes = changes[1:]
			}
			j := revisionOf(r)
			msg := orDash(j.Message)
			if j.Merged != 0 {
				msg += fmt.Sprintf(" (merged %d)", j.Merged)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", j.Revision, g.timeText(j.Time), orDash(j.Author), orDash(j.Tool),
				oneLine(msg), resourceList(j.Resources))
		}
		for _, ev := range changes {
			printSchemaChange(tw, g, ev)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if page.Next != 0 {
			fmt.Fprintf(stderr, "strata: older revisions not shown; raise -n (now %d)\n", o.limit)
		}
		return nil
	})
}

// schemaChanges are the schema changes to show with a page of history (of resource, if given), newest first: those
// made since the oldest revision listed, or all of them when the history was listed to its start.
func schemaChanges(ctx context.Context, db *snapshots.DB, resource string, page *snapshots.HistoryPage) ([]snapshots.SchemaEvent, error) {
	evs, err := db.SchemaLog(ctx)
	if err != nil {
		return nil, err
	}
	out := []snapshots.SchemaEvent{}
	for i := len(evs) - 1; i >= 0; i-- {
		ev := evs[i]
		if resource != "" && ev.Resource != resource {
			continue
		}
		if page.Next != 0 && len(page.Revisions) > 0 && ev.Time.Before(page.Revisions[len(page.Revisions)-1].Time) {
			break
		}
		out = append(out, ev)
	}
	return out, nil
}

// printSchemaChange shows a schema change as a line of the log: "schema TIME BY schema set|rm WHAT [RESOURCE]".
func printSchemaChange(w io.Writer, g *globalOptions, ev snapshots.SchemaEvent) {
	what, tool := "set the schema ("+shortDigest(ev.Digest)+")", "schema set"
	if ev.Action == snapshots.SchemaRemove {
		what, tool = "removed the schema", "schema rm"
	}
	fmt.Fprintf(w, "schema\t%s\t%s\t%s\t%s\t[%s]\n", g.timeText(ev.Time), orDash(ev.By), tool, what, ev.Resource)
}

// resourceList writes the resources a revision changed: "[catalog, config]".
func resourceList(rs []string) string {
	if len(rs) == 0 {
		return "[]"
	}
	return "[" + safetext.Text(strings.Join(rs, ", ")) + "]"
}

// oneLine keeps a message on one line of a listing, with its control characters made visible (safetext).
func oneLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return safetext.Text(s[:i]) + " …"
	}
	return safetext.Text(s)
}

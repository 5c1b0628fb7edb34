package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/internal/safetext"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/store"
)

type snapshotOptions struct {
	at     string
	note   string
	delete bool
	json   bool
}

func newSnapshotCommand(g *globalOptions) *cobra.Command {
	o := &snapshotOptions{}
	cmd := &cobra.Command{
		Use:   "snapshot DB [NAME]",
		Short: "List, create or delete snapshots: names for revisions",
		Long: `With DB alone, list the snapshots. With NAME, name the revision --at names (a ref; default the head of
main): O(1), and the name can be used wherever a ref is taken. With -d NAME, delete a snapshot (the revision
stays). Snapshot and branch names share one namespace.`,
		Example: `  strata snapshot shop before-sale --note "prices as the supplier sent them"
  strata snapshot shop
  strata diff shop before-sale main`,
		Args: args(1, 2),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			switch {
			case len(args) == 1 && (o.delete || o.at != "" || o.note != ""):
				return usageErrorf("name the snapshot: strata snapshot %s NAME", args[0])
			case len(args) == 1:
				return listSnapshots(cmd.Context(), w, g, o, args[0])
			case o.delete && (o.at != "" || o.note != ""):
				return usageErrorf("-d deletes a snapshot; --at and --note are for creating one")
			case o.delete:
				return deleteSnapshot(cmd.Context(), w, g, o, args[0], args[1])
			}
			return createSnapshot(cmd.Context(), w, g, o, args[0], args[1])
		}),
	}
	cmd.Flags().StringVar(&o.at, "at", "", "the revision to name: a revision, snapshot, branch or BRANCH@TIME (default: the head of main)")
	cmd.Flags().StringVar(&o.note, "note", "", "a note kept with the snapshot")
	cmd.Flags().BoolVarP(&o.delete, "delete", "d", false, "delete the snapshot NAME")
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

// snapshotJSON is a snapshot as list_snapshots shows it (docs/design.md §3.4).
type snapshotJSON struct {
	Name     string    `json:"name"`
	Revision uint64    `json:"revision"`
	Note     string    `json:"note"`
	Creator  string    `json:"creator"`
	Created  time.Time `json:"created"`
}

func snapshotOf(l store.LabelRecord) snapshotJSON {
	return snapshotJSON{Name: l.Name, Revision: l.Revision, Note: l.Note, Creator: l.Creator, Created: l.Created}
}

func listSnapshots(ctx context.Context, w io.Writer, g *globalOptions, o *snapshotOptions, dbName string) error {
	return g.withDB(ctx, dbName, func(db *snapshots.DB) error {
		ls, err := db.Snapshots(ctx)
		if err != nil {
			return err
		}
		if o.json {
			out := make([]snapshotJSON, len(ls))
			for i, l := range ls {
				out[i] = snapshotOf(l)
			}
			return writeJSON(w, struct {
				Snapshots []snapshotJSON `json:"snapshots"`
			}{out})
		}
		if len(ls) == 0 {
			_, err := fmt.Fprintf(w, "no snapshots in %s; name a revision with: strata snapshot %s NAME [--at REF]\n", dbName, dbName)
			return err
		}
		tw := table(w)
		fmt.Fprintln(tw, "SNAPSHOT\tREVISION\tCREATED\tBY\tNOTE")
		for _, l := range ls {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", safetext.Field(l.Name), l.Revision, g.timeText(l.Created), orDash(l.Creator), oneLine(orDash(l.Note)))
		}
		return tw.Flush()
	})
}

func createSnapshot(ctx context.Context, w io.Writer, g *globalOptions, o *snapshotOptions, dbName, name string) error {
	at, err := parseRef(o.at)
	if err != nil {
		return err
	}
	return g.asOperatorIn(ctx, dbName, "snapshot", []string{dbName, name}, func(ctx context.Context, db *gate.View) error {
		l, err := db.CreateSnapshot(ctx, name, at, o.note)
		if err != nil {
			return err
		}
		if o.json {
			return writeJSON(w, snapshotOf(l))
		}
		where := o.at
		if where == "" {
			where = snapshots.Main
		}
		_, err = fmt.Fprintf(w, "snapshot %s names %s\n", l.Name, refText(where, l.Revision))
		return err
	})
}

func deleteSnapshot(ctx context.Context, w io.Writer, g *globalOptions, o *snapshotOptions, dbName, name string) error {
	return g.asOperatorIn(ctx, dbName, "snapshot -d", []string{dbName, name}, func(ctx context.Context, db *gate.View) error {
		out, err := db.Write(ctx, gate.Change{Op: gate.OpDeleteSnapshot, Name: name, Tool: "cli snapshot -d"})
		if err != nil {
			return err
		}
		l := out.Label
		if o.json {
			return writeJSON(w, struct {
				Deleted  string `json:"deleted"`
				Revision uint64 `json:"revision"`
			}{l.Name, l.Revision})
		}
		_, err = fmt.Fprintf(w, "deleted snapshot %s (revision %d stays in the history)\n", l.Name, l.Revision)
		return err
	})
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/store"
)

type dbDropOptions struct {
	yes  bool
	json bool
}

func newDBDropCommand(g *globalOptions) *cobra.Command {
	o := &dbDropOptions{}
	cmd := &cobra.Command{
		Use:   "drop NAME --yes",
		Short: "Delete a database and all its history",
		Long: `Delete a database file, with every revision, branch and snapshot in it. This cannot be undone, so it
asks for --yes.`,
		Args: args(1, 1),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if !o.yes {
				return invalidf("dropping database %s deletes it with all its history and cannot be undone; run again with --yes to confirm", args[0])
			}
			return dropDB(cmd.Context(), cmd.OutOrStdout(), g, o, args[0])
		}),
	}
	cmd.Flags().BoolVar(&o.yes, "yes", false, "confirm: delete the database and its history")
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

func dropDB(ctx context.Context, w io.Writer, g *globalOptions, o *dbDropOptions, name string) error {
	if err := snapshots.ValidDatabaseName(name); err != nil {
		return err
	}
	return g.asOperator(ctx, false, "db drop", []string{name}, func(ctx context.Context, a *gate.Actor) error {
		info, err := a.DatabaseInfo(ctx, name)
		damaged := errors.Is(err, store.ErrBadFile) || errors.Is(err, store.ErrFormat) || errors.Is(err, store.ErrCorruptNode)
		if err != nil && !damaged {
			return err
		}
		// A damaged file is dropped all the same: that is what its error tells the user to do (found in review:
		// drop refused the one database it is most needed for).
		if err := a.DropDatabase(ctx, name); err != nil {
			return err
		}
		if o.json {
			return writeJSON(w, struct {
				Dropped   string `json:"dropped"`
				Revisions uint64 `json:"revisions"`
				Damaged   bool   `json:"damaged,omitempty"`
			}{name, info.Revisions, damaged})
		}
		if damaged {
			_, err = fmt.Fprintf(w, "dropped database %s (its file was damaged: its revisions could not be counted)\n", name)
			return err
		}
		_, err = fmt.Fprintf(w, "dropped database %s (%d revisions)\n", name, info.Revisions)
		return err
	})
}

package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/snapshots"
)

type dbCreateOptions struct {
	json bool
}

func newDBCreateCommand(g *globalOptions) *cobra.Command {
	o := &dbCreateOptions{}
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create an empty database with branch main",
		Long: `Create an empty database: revision 1, an empty object, on branch main. NAME is 1 to 64 lower-case
letters, digits, '_' or '-', starting with a letter or digit. The directory is created if missing.`,
		Args: args(1, 1),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return createDB(cmd.Context(), cmd.OutOrStdout(), g, o, args[0])
		}),
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

func createDB(ctx context.Context, w io.Writer, g *globalOptions, o *dbCreateOptions, name string) error {
	if err := snapshots.ValidDatabaseName(name); err != nil {
		return err
	}
	return g.asOperator(ctx, true, "db create", []string{name}, func(ctx context.Context, a *gate.Actor) error {
		db, err := a.CreateDatabase(ctx, name)
		if err != nil {
			return err
		}
		st, err := db.Resolve(ctx, snapshots.Ref{})
		if err != nil {
			return err
		}
		if o.json {
			return writeJSON(w, struct {
				Name     string `json:"name"`
				Revision uint64 `json:"revision"`
				Branch   string `json:"branch"`
			}{name, st.Rev.Number, snapshots.Main})
		}
		_, err = fmt.Fprintf(w, "created database %s in %s (revision %d on %s)\n", name, locationText(g.dataDir), st.Rev.Number, snapshots.Main)
		return err
	})
}

package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/gate"
)

type schemaRmOptions struct{ json bool }

func newSchemaRmCommand(g *globalOptions) *cobra.Command {
	o := &schemaRmOptions{}
	cmd := &cobra.Command{
		Use:     "rm DB RESOURCE",
		Short:   "Remove a resource's JSON Schema: its writes are no longer checked",
		Long:    `Remove RESOURCE's schema (exit 3 if it has none). The removal is recorded, like every change of a schema.`,
		Example: `  strata schema rm shop catalog`,
		Args:    args(2, 2),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return rmSchema(cmd.Context(), cmd.OutOrStdout(), g, o, args[0], args[1])
		}),
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

func rmSchema(ctx context.Context, w io.Writer, g *globalOptions, o *schemaRmOptions, dbName, resource string) error {
	return g.asOperatorIn(ctx, dbName, "schema rm", []string{dbName, resource}, func(ctx context.Context, db *gate.View) error {
		rec, err := db.RemoveSchema(ctx, resource)
		if err != nil {
			return err
		}
		if o.json {
			return writeJSON(w, struct {
				Removed string `json:"removed"`
				Digest  string `json:"digest"`
			}{resource, rec.Digest})
		}
		_, err = fmt.Fprintf(w, "removed the schema of %s (%s, set by %s)\n", resource, shortDigest(rec.Digest), orDash(rec.SetBy))
		return err
	})
}

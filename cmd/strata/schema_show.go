package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/snapshots"
)

type schemaShowOptions struct{ json bool }

func newSchemaShowCommand(g *globalOptions) *cobra.Command {
	o := &schemaShowOptions{}
	cmd := &cobra.Command{
		Use:   "show DB [RESOURCE]",
		Short: "Print a resource's JSON Schema, or list the resources that have one",
		Long: `With RESOURCE, print its schema as it was set (exit 3 if it has none). With DB alone, list the
resources that have a schema, with who set it and when.`,
		Example: `  strata schema show shop catalog
  strata schema show shop`,
		Args: args(1, 2),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				return listSchemas(cmd.Context(), cmd.OutOrStdout(), g, o, args[0])
			}
			return showSchema(cmd.Context(), cmd.OutOrStdout(), g, o, args[0], args[1])
		}),
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

func showSchema(ctx context.Context, w io.Writer, g *globalOptions, o *schemaShowOptions, dbName, resource string) error {
	return g.withDB(ctx, dbName, func(db *snapshots.DB) error {
		rec, ok, err := db.Schema(ctx, resource)
		if err != nil {
			return err
		}
		if !ok {
			return &snapshots.NotFoundError{What: "schema of resource", Name: resource,
				Hint: "give it one with: strata schema set " + dbName + " " + resource + " FILE"}
		}
		if o.json {
			return writeJSON(w, schemaOf(rec))
		}
		var buf bytes.Buffer
		if err := json.Indent(&buf, rec.Schema, "", "  "); err != nil {
			buf.Reset()
			buf.Write(rec.Schema)
		}
		_, err = fmt.Fprintf(w, "%s\n", buf.Bytes())
		return err
	})
}

func listSchemas(ctx context.Context, w io.Writer, g *globalOptions, o *schemaShowOptions, dbName string) error {
	return g.withDB(ctx, dbName, func(db *snapshots.DB) error {
		recs, err := db.Schemas(ctx)
		if err != nil {
			return err
		}
		if o.json {
			out := make([]schemaJSON, len(recs))
			for i, r := range recs {
				out[i] = schemaOf(r)
			}
			return writeJSON(w, struct {
				Schemas []schemaJSON `json:"schemas"`
			}{out})
		}
		if len(recs) == 0 {
			_, err := fmt.Fprintf(w, "no resource of %s has a schema; give one with: strata schema set %s RESOURCE FILE\n", dbName, dbName)
			return err
		}
		tw := table(w)
		fmt.Fprintln(tw, "RESOURCE\tSET\tBY\tDIGEST")
		for _, r := range recs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Resource, g.timeText(r.SetAt), orDash(r.SetBy), shortDigest(r.Digest))
		}
		return tw.Flush()
	})
}

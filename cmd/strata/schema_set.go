package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/snapshots"
)

type schemaSetOptions struct{ json bool }

func newSchemaSetCommand(g *globalOptions) *cobra.Command {
	o := &schemaSetOptions{}
	cmd := &cobra.Command{
		Use:   "set DB RESOURCE FILE|-",
		Short: "Give a resource a JSON Schema (draft 2020-12), checked against every branch head first",
		Long: `Give RESOURCE the JSON Schema in FILE (or stdin, with -), replacing the one it had. The schema is
first checked against the resource's value at the head of every branch: if any does not satisfy it, it
is not set, and the violations are listed with their branches (exit 2). From then on every write that
would leave the resource invalid is refused. A resource that does not exist yet may be given a schema:
it applies once the resource is created.`,
		Example: `  strata schema set shop catalog catalog.schema.json
  strata schema set shop config - < config.schema.json`,
		Args: args(3, 3),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return setSchema(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), g, o, args[0], args[1], args[2])
		}),
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

func setSchema(ctx context.Context, stdin io.Reader, w io.Writer, g *globalOptions, o *schemaSetOptions, dbName, resource, file string) error {
	var text []byte
	var err error
	if file == "-" {
		text, err = io.ReadAll(io.LimitReader(stdin, snapshots.MaxSchemaBytes+1))
	} else {
		text, err = os.ReadFile(file)
	}
	if err != nil {
		return invalidf("reading the schema: %v", err)
	}
	return g.asOperatorIn(ctx, dbName, "schema set", []string{dbName, resource, file}, func(ctx context.Context, db *gate.View) error {
		rec, err := db.SetSchema(ctx, resource, text)
		if err != nil {
			return err
		}
		if o.json {
			return writeJSON(w, schemaOf(rec))
		}
		_, err = fmt.Fprintf(w, "set the schema of %s (%s); every branch head satisfies it\n", resource, shortDigest(rec.Digest))
		return err
	})
}

// shortDigest is a schema digest for people: "sha256:" and 12 hex digits.
func shortDigest(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}

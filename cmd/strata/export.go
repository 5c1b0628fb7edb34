package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/snapshots"
)

type exportOptions struct {
	at     string
	pretty bool
	json   bool
}

func newExportCommand(g *globalOptions) *cobra.Command {
	o := &exportOptions{}
	cmd := &cobra.Command{
		Use:   "export DB RESOURCE",
		Short: "Write a resource as JSON to stdout, as it is now or at any ref",
		Long: `Write a whole resource as compact JSON (keys in byte order) to stdout, streamed straight from storage.
--at reads it as it was at a ref: a revision number, a snapshot or branch name, or BRANCH@TIME.`,
		Example: `  strata export shop catalog > catalog.json
  strata export shop catalog --at before-sale --pretty`,
		Args: args(2, 2),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return exportResource(cmd.Context(), cmd.OutOrStdout(), g, o, args[0], args[1])
		}),
	}
	cmd.Flags().StringVar(&o.at, "at", "", "the state to read: a revision, snapshot, branch or BRANCH@TIME (default: the head of main)")
	cmd.Flags().BoolVar(&o.pretty, "pretty", false, "indent the JSON (holds the document in memory)")
	cmd.Flags().BoolVar(&o.json, "json", false, "compact JSON, the default (accepted, as by every command)")
	return cmd
}

func exportResource(ctx context.Context, w io.Writer, g *globalOptions, o *exportOptions, dbName, resource string) error {
	ref, err := parseRef(o.at)
	if err != nil {
		return err
	}
	return g.withDB(ctx, dbName, func(db *snapshots.DB) error {
		v, _, err := db.Get(ctx, ref, resource, nil)
		if err != nil {
			return err
		}
		if o.pretty && !o.json {
			text, err := db.Forest().JSON(ctx, v)
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			if err := json.Indent(&buf, text, "", "  "); err != nil {
				return err
			}
			buf.WriteByte('\n')
			_, err = buf.WriteTo(w)
			return err
		}
		if err := db.Forest().WriteJSON(ctx, w, v); err != nil {
			return err
		}
		_, err = io.WriteString(w, "\n")
		return err
	})
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/formats"
	"github.com/strata-db/strata/internal/safetext"
	"github.com/strata-db/strata/snapshots"
)

type exportOptions struct {
	at     string
	pretty bool
	json   bool
	format string
}

func newExportCommand(g *globalOptions) *cobra.Command {
	o := &exportOptions{}
	cmd := &cobra.Command{
		Use:   "export DB RESOURCE",
		Short: "Write a resource as JSON (or JSON Lines, or CSV) to stdout, as it is now or at any ref",
		Long: `Write a whole resource as compact JSON (keys in byte order) to stdout, streamed straight from storage.
--at reads it as it was at a ref: a revision number, a snapshot or branch name, or BRANCH@TIME.

--format writes it otherwise:
  jsonl  JSON Lines: each element of an array resource, as compact JSON, on a line of its own
  csv    an array of flat objects: a header row of the first element's keys (in key order), then a row per
         element; every element must have the same keys, holding strings, numbers, booleans or null (an empty
         field). A nested value stops the export with an error naming it.`,
		Example: `  strata export shop catalog > catalog.json
  strata export shop catalog --at before-sale --pretty
  strata export shop events --format jsonl > events.jsonl
  strata export shop prices --format csv > prices.csv`,
		Args: args(2, 2),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(o.format); err != nil {
				return err
			}
			if o.pretty && o.format != "json" {
				return usageErrorf("--pretty is for --format json")
			}
			if o.json && o.format != "json" {
				return usageErrorf("--json asks for JSON, and --format %s for something else: give one", o.format)
			}
			if o.json && o.pretty {
				return usageErrorf("--json asks for compact JSON, and --pretty for indented JSON: give one")
			}
			return exportResource(cmd.Context(), cmd.OutOrStdout(), g, o, args[0], args[1])
		}),
	}
	cmd.Flags().StringVar(&o.at, "at", "", "the state to read: a revision, snapshot, branch or BRANCH@TIME (default: the head of main)")
	cmd.Flags().BoolVar(&o.pretty, "pretty", false, "indent the JSON (holds the document in memory)")
	cmd.Flags().BoolVar(&o.json, "json", false, "compact JSON, the default (accepted, as by every command)")
	cmd.Flags().StringVar(&o.format, "format", "json", "what to write: json, jsonl (JSON Lines, from an array) or csv (from an array of flat objects)")
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
		// Stored text must not drive a terminal (safetext). JSON is written with such characters as \u escapes
		// wherever it goes, which every JSON reader reads as the same characters; CSV has no escapes, so it is
		// changed only on a terminal, and a file or a pipe gets its cells as stored.
		if o.format != "csv" || g.env.terminal(w) {
			sw := safetext.NewWriter(w, o.format != "csv")
			defer sw.Close()
			w = sw
		}
		switch o.format {
		case "jsonl":
			if err := db.Forest().WriteJSONLines(ctx, w, v); err != nil {
				return fmt.Errorf("exporting %s as JSON Lines: %w", resource, err)
			}
			return nil
		case "csv":
			if err := formats.WriteCSV(ctx, db.Forest(), w, v); err != nil {
				err = fmt.Errorf("exporting %s as CSV: %w", resource, err)
				if errors.Is(err, formats.ErrNotTabular) {
					err = &cliError{code: exitUsage, err: err}
				}
				return err
			}
			return nil
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

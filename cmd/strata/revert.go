package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/snapshots"
)

type revertOptions struct {
	write writeFlags
	json  bool
}

func newRevertCommand(g *globalOptions) *cobra.Command {
	o := &revertOptions{}
	cmd := &cobra.Command{
		Use:   "revert DB TARGET_REF",
		Short: "Make a new revision whose whole state equals an earlier one",
		Long: `Make a new revision on --branch (default main) whose whole state (every resource) equals TARGET_REF's: a
revision number, a snapshot or branch name, or BRANCH@TIME. Nothing is rewritten: the revisions after
TARGET_REF stay in the history, and reverting the revert brings them back. To roll back one resource or one
value only, use strata restore.`,
		Example: `  strata revert shop before-sale
  strata revert shop main@2026-03-14T09:00:00Z -m "undo this morning's changes"`,
		Args: args(2, 2),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return revert(cmd.Context(), cmd.OutOrStdout(), g, o, args[0], args[1])
		}),
	}
	o.write.register(cmd, "the branch to revert")
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

func revert(ctx context.Context, w io.Writer, g *globalOptions, o *revertOptions, dbName, target string) error {
	ref, err := parseRef(target)
	if err != nil {
		return err
	}
	wo := g.writeOptions(&o.write, "revert")
	return g.asOperatorIn(ctx, dbName, "revert", []string{dbName, target}, func(ctx context.Context, db *gate.View) error {
		st, err := db.Resolve(ctx, ref)
		if err != nil {
			return err
		}
		// Revert the revision that was resolved, so the message and the state agree even if a branch moves.
		if wo.Message == "" {
			wo.Message = "revert to " + refText(target, st.Rev.Number)
		}
		ch := g.change(gate.OpRevert, &o.write, "revert")
		ch.Target, ch.Message = &snapshots.Ref{Revision: st.Rev.Number}, wo.Message
		out, err := db.Write(ctx, ch)
		if err != nil {
			return err
		}
		res := out.Result
		if o.json {
			return writeJSON(w, struct {
				writeResult
				Target uint64 `json:"target"`
			}{writeResult{res, wo.Author, wo.Tool}, st.Rev.Number})
		}
		return printWrite(w, res, fmt.Sprintf("reverted to %s", refText(target, st.Rev.Number)))
	})
}

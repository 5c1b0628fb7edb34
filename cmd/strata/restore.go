package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
)

type restoreOptions struct {
	from  string
	write writeFlags
	json  bool
}

func newRestoreCommand(g *globalOptions) *cobra.Command {
	o := &restoreOptions{}
	cmd := &cobra.Command{
		Use:   "restore DB RESOURCE[/path] --from REF",
		Short: "Set a resource, or one value in it, back to what it was at a ref",
		Long: `Make a new revision on --branch (default main) in which RESOURCE, or the value at RESOURCE/path, is what it
was at --from (a revision number, a snapshot or branch name, or BRANCH@TIME). If it did not exist there, it is
removed. Everything else stays as it is. This undeletes a resource, or rolls back one field.`,
		Example: `  strata restore shop catalog/products/0/price --from before-sale
  strata restore shop config --from 12`,
		Args: args(2, 2),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if o.from == "" {
				return usageErrorf("restore needs --from REF: the revision, snapshot, branch or BRANCH@TIME to take %s from", args[1])
			}
			return restore(cmd.Context(), cmd.OutOrStdout(), g, o, args[0], args[1])
		}),
	}
	cmd.Flags().StringVar(&o.from, "from", "", "the state to take the value from: a revision, snapshot, branch or BRANCH@TIME (required)")
	o.write.register(cmd, "the branch to write on")
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

func restore(ctx context.Context, w io.Writer, g *globalOptions, o *restoreOptions, dbName, arg string) error {
	resource, ptr, err := splitResourcePath(arg)
	if err != nil {
		return err
	}
	ref, err := parseRef(o.from)
	if err != nil {
		return err
	}
	wo := g.writeOptions(&o.write, "restore")
	return g.asOperatorIn(ctx, dbName, "restore", []string{dbName, arg}, func(ctx context.Context, db *gate.View) error {
		st, err := db.Resolve(ctx, ref)
		if err != nil {
			return err
		}
		head, err := db.Resolve(ctx, snapshots.Ref{Branch: wo.Branch})
		if err != nil {
			return err
		}
		// Restoring what exists in neither state would commit an empty revision: more likely a misspelt name.
		_, errFrom := db.Lookup(ctx, st, resource, ptr)
		_, errHead := db.Lookup(ctx, head, resource, ptr)
		if errors.Is(errFrom, snapshots.ErrNotFound) || errors.Is(errFrom, revision.ErrNotFound) {
			if errHead != nil {
				return fmt.Errorf("%s%s is neither in revision %d nor on %s: %w", resource, ptr, st.Rev.Number, wo.Branch, errFrom)
			}
		} else if errFrom != nil {
			return errFrom
		}
		from := refText(o.from, st.Rev.Number)
		if wo.Message == "" {
			wo.Message = fmt.Sprintf("restore %s%s from %s", resource, ptr, from)
		}
		ch := g.change(gate.OpRestore, &o.write, "restore")
		ch.Resource, ch.Path, ch.From, ch.Message = resource, ptr.String(), &snapshots.Ref{Revision: st.Rev.Number}, wo.Message
		out, err := db.Write(ctx, ch)
		if err != nil {
			return err
		}
		res := out.Result
		if o.json {
			return writeJSON(w, struct {
				writeResult
				From uint64 `json:"from"`
			}{writeResult{res, wo.Author, wo.Tool}, st.Rev.Number})
		}
		return printWrite(w, res, fmt.Sprintf("restored %s%s from %s", resource, ptr, from))
	})
}

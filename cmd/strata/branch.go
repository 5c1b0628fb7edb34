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

type branchOptions struct {
	from   string
	delete bool
	json   bool
}

func newBranchCommand(g *globalOptions) *cobra.Command {
	o := &branchOptions{}
	cmd := &cobra.Command{
		Use:   "branch DB [NAME]",
		Short: "List, create or delete branches",
		Long: `With DB alone, list the branches. With NAME, create a branch at --from (a ref; default the head of main):
O(1), nothing is copied. With -d NAME, delete a branch: the name goes, its revisions stay in the history.
Branch and snapshot names share one namespace.`,
		Example: `  strata branch shop
  strata branch shop try-sale --from before-sale
  strata branch shop -d try-sale`,
		Args: args(1, 2),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			switch {
			case len(args) == 1 && (o.delete || o.from != ""):
				return usageErrorf("name the branch: strata branch %s NAME", args[0])
			case len(args) == 1:
				return listBranches(cmd.Context(), w, g, o, args[0])
			case o.delete && o.from != "":
				return usageErrorf("-d deletes a branch; --from is for creating one")
			case o.delete:
				return deleteBranch(cmd.Context(), w, g, o, args[0], args[1])
			}
			return createBranch(cmd.Context(), w, g, o, args[0], args[1])
		}),
	}
	cmd.Flags().StringVar(&o.from, "from", "", "where the new branch starts: a revision, snapshot, branch or BRANCH@TIME (default: the head of main)")
	cmd.Flags().BoolVarP(&o.delete, "delete", "d", false, "delete the branch NAME")
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

// branchJSON is a branch as list_branches shows it (docs/design.md §3.4).
type branchJSON struct {
	Name    string    `json:"name"`
	Head    uint64    `json:"head"`
	Base    uint64    `json:"base"`
	Creator string    `json:"creator"`
	Created time.Time `json:"created"`
}

func branchOf(b store.BranchRecord) branchJSON {
	return branchJSON{Name: b.Name, Head: b.Head, Base: b.Base, Creator: b.Creator, Created: b.Created}
}

func listBranches(ctx context.Context, w io.Writer, g *globalOptions, o *branchOptions, dbName string) error {
	return g.withDB(ctx, dbName, func(db *snapshots.DB) error {
		bs, err := db.Branches(ctx)
		if err != nil {
			return err
		}
		if o.json {
			out := make([]branchJSON, len(bs))
			for i, b := range bs {
				out[i] = branchOf(b)
			}
			return writeJSON(w, struct {
				Branches []branchJSON `json:"branches"`
			}{out})
		}
		tw := table(w)
		fmt.Fprintln(tw, "BRANCH\tHEAD\tBASE\tCREATED\tBY")
		for _, b := range bs {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", safetext.Field(b.Name), b.Head, b.Base, g.timeText(b.Created), orDash(b.Creator))
		}
		return tw.Flush()
	})
}

func createBranch(ctx context.Context, w io.Writer, g *globalOptions, o *branchOptions, dbName, name string) error {
	from, err := parseRef(o.from)
	if err != nil {
		return err
	}
	return g.asOperatorIn(ctx, dbName, "branch", []string{dbName, name}, func(ctx context.Context, db *gate.View) error {
		b, err := db.CreateBranch(ctx, name, from)
		if err != nil {
			return err
		}
		if o.json {
			return writeJSON(w, branchOf(b))
		}
		fromText := refText(o.from, b.Head)
		if o.from == "" {
			fromText = refText(snapshots.Main, b.Head)
		}
		_, err = fmt.Fprintf(w, "created branch %s at %s\n", b.Name, fromText)
		return err
	})
}

func deleteBranch(ctx context.Context, w io.Writer, g *globalOptions, o *branchOptions, dbName, name string) error {
	return g.asOperatorIn(ctx, dbName, "branch -d", []string{dbName, name}, func(ctx context.Context, db *gate.View) error {
		out, err := db.Write(ctx, gate.Change{Op: gate.OpDeleteBranch, Name: name, Tool: "cli branch -d"})
		if err != nil {
			return err
		}
		b := out.Branch
		if o.json {
			return writeJSON(w, struct {
				Deleted string `json:"deleted"`
				Head    uint64 `json:"head"`
			}{b.Name, b.Head})
		}
		_, err = fmt.Fprintf(w, "deleted branch %s (it was at revision %d; its revisions stay in the history)\n", b.Name, b.Head)
		return err
	})
}

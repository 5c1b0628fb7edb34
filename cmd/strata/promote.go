package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/internal/safetext"
	"github.com/strata-db/strata/snapshots"
)

type promoteOptions struct {
	into  string
	write writeFlags
	json  bool
}

func newPromoteCommand(g *globalOptions) *cobra.Command {
	o := &promoteOptions{}
	cmd := &cobra.Command{
		Use:   "promote DB BRANCH",
		Short: "Bring a branch's changes into another branch (default main)",
		Long: `Bring BRANCH's changes into --into (default main) as one new revision: a fast-forward when --into has not
moved since BRANCH left it, else a three-way merge by path. When both changed the same path in different ways,
the conflicting paths are listed, nothing is written, and the exit code is 4. BRANCH stays; delete it with
strata branch DB -d BRANCH.`,
		Example: `  strata promote shop try-sale
  strata promote shop try-sale --into staging -m "sale prices, reviewed"`,
		Args: args(2, 2),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return promote(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), g, o, args[0], args[1])
		}),
	}
	cmd.Flags().StringVar(&o.into, "into", snapshots.Main, "the branch to bring the changes into")
	o.write.register(cmd, "")
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

func promote(ctx context.Context, w, stderr io.Writer, g *globalOptions, o *promoteOptions, dbName, branch string) error {
	wo := g.writeOptions(&o.write, "promote")
	if wo.Message == "" {
		wo.Message = fmt.Sprintf("promote %s into %s", branch, o.into)
	}
	return g.asOperatorIn(ctx, dbName, "promote", []string{dbName, branch}, func(ctx context.Context, db *gate.View) error {
		ch := g.change(gate.OpPromote, &o.write, "promote")
		ch.Source, ch.Branch, ch.Message = branch, o.into, wo.Message
		out, err := db.Write(ctx, ch)
		var res *snapshots.PromoteResult
		if out != nil {
			res = out.Promote
		}
		if err != nil {
			if res != nil && len(res.Conflicts) > 0 && errors.Is(err, snapshots.ErrConflict) {
				if o.json {
					// The conflicts are the useful output: print them before failing.
					type conflict struct {
						Path   string `json:"path"`
						Reason string `json:"reason"`
					}
					cs := make([]conflict, len(res.Conflicts))
					for i, c := range res.Conflicts {
						cs[i] = conflict{c.Path, c.Reason}
					}
					if werr := writeJSON(w, struct {
						Conflicts []conflict `json:"conflicts"`
					}{cs}); werr != nil {
						return werr
					}
				} else {
					for _, c := range res.Conflicts {
						fmt.Fprintf(stderr, "conflict: %s\n", safetext.Text(c.String()))
					}
				}
			}
			return err
		}
		if o.json {
			return writeJSON(w, struct {
				writeResult
				FastForward bool `json:"fast_forward"`
			}{writeResult{res.Result, wo.Author, wo.Tool}, res.FastForward})
		}
		how := "merged by path"
		if res.FastForward {
			how = "fast-forward"
		}
		return printWrite(w, res.Result, fmt.Sprintf("promoted %s into %s (%s)", branch, res.Branch, how))
	})
}

package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/snapshots"
)

func newCheckCommand(g *globalOptions) *cobra.Command {
	var asJSON, rollBack bool
	cmd := &cobra.Command{
		Use:   "check DB",
		Short: "Verify a database: every revision, node hash, branch and snapshot",
		Long: `Verify a whole database: revision records (parents that exist and come before, strictly increasing
times, roots that decode), every node any revision reaches (present, its SHA-256 matching its address, and
consistent with its parent's counts), every branch head and every snapshot. Exits 1 if anything is wrong,
listing what. Other processes keep working while it runs.

A file whose newest bbolt meta page is damaged while the one before it is intact (what a crash in the middle of
writing one leaves) is refused, naming the transaction the intact page holds. --allow-meta-rollback first rolls the
file back to that transaction, dropping whatever the damaged page recorded (a commit that was never acknowledged,
after a crash), writes a fresh meta page, and then checks it.`,
		Example: `  strata check shop
  strata check shop --allow-meta-rollback`,
		Args: args(1, 1),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if rollBack {
				if err := rollBackMeta(cmd.ErrOrStderr(), g, args[0]); err != nil {
					return err
				}
				args = append(args, "--allow-meta-rollback")
			}
			return check(cmd.Context(), cmd.OutOrStdout(), g, args[0], args, asJSON)
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&rollBack, "allow-meta-rollback", false,
		"roll a file whose newest meta page is damaged back to the transaction before it, then check it")
	return cmd
}

// rollBackMeta mends a damaged newest meta page (snapshots.Dir.RollBackMeta), saying what it did.
func rollBackMeta(w io.Writer, g *globalOptions, name string) error {
	return g.withDir(false, func(dir *snapshots.Dir) error {
		txid, rolled, err := dir.RollBackMeta(name)
		if err != nil {
			return err
		}
		if rolled {
			fmt.Fprintf(w, "rolled %s back to bbolt transaction %d: its damaged meta page was written anew\n", name, txid)
		} else {
			fmt.Fprintf(w, "%s: both meta pages are intact; nothing was rolled back\n", name)
		}
		return nil
	})
}

func check(ctx context.Context, w io.Writer, g *globalOptions, name string, args []string, asJSON bool) error {
	return g.asOperatorIn(ctx, name, "check", args, func(ctx context.Context, db *gate.View) error {
		start := time.Now()
		rep, err := db.Check(ctx, nil)
		if err != nil {
			return err
		}
		if asJSON {
			if err := writeJSON(w, rep); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(w, "checked %s: %d revisions, %d branches, %d snapshots, %d nodes (%s) in %s\n", name,
				rep.Revisions, rep.Branches, rep.Snapshots, rep.Nodes, byteSize(rep.NodeBytes), time.Since(start).Round(time.Millisecond))
			for _, p := range rep.Problems {
				fmt.Fprintf(w, "problem: %s\n", p)
			}
		}
		if len(rep.Problems) > 0 {
			return &cliError{code: exitFailure, err: fmt.Errorf("database %s has %d problem(s)", name, len(rep.Problems))}
		}
		if !asJSON {
			fmt.Fprintln(w, "ok")
		}
		return nil
	})
}

func newGCCommand(g *globalOptions) *cobra.Command {
	var asJSON bool
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "gc DB",
		Short: "Remove revisions and nodes nothing can reach any more",
		Long: `Garbage collection: keep every branch's and snapshot's history, every revision made within the grace
period and the newest revision; remove the rest (typically the work of deleted branches) and every node no kept
revision reaches. It works in small batches between commits, so servers keep writing while it runs. The file
does not shrink: freed pages are reused by later commits.`,
		Example: `  strata gc shop
  strata gc shop --grace 10m`,
		Args: args(1, 1),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if grace <= 0 {
				return usageErrorf("--grace must be positive, not %s", grace)
			}
			return gc(cmd.Context(), cmd.OutOrStdout(), g, args[0], grace, asJSON)
		}),
	}
	cmd.Flags().DurationVar(&grace, "grace", time.Hour, "keep every revision made, or last named by a branch or snapshot deleted, within this long (a running import is kept at least 30s)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func gc(ctx context.Context, w io.Writer, g *globalOptions, name string, grace time.Duration, asJSON bool) error {
	return g.asOperatorIn(ctx, name, "gc", []string{name}, func(ctx context.Context, db *gate.View) error {
		start := time.Now()
		rep, err := db.GC(ctx, &snapshots.GCOptions{Grace: grace})
		if err != nil {
			return err
		}
		if asJSON {
			return writeJSON(w, rep)
		}
		_, err = fmt.Fprintf(w, "gc %s: kept %d revisions and %d nodes; removed %d revisions and %d nodes (%s) in %s\n", name,
			rep.KeptRevisions, rep.MarkedNodes, rep.RemovedRevisions, rep.RemovedNodes, byteSize(rep.RemovedBytes),
			time.Since(start).Round(time.Millisecond))
		return err
	})
}

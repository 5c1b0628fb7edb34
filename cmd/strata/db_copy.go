package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/store"
)

type dbCopyOptions struct {
	dbs  []string
	json bool
}

func newDBCopyCommand(g *globalOptions) *cobra.Command {
	o := &dbCopyOptions{}
	cmd := &cobra.Command{
		Use:   "copy SRC DST",
		Short: "Copy databases between data locations: a directory and PostgreSQL, either way",
		Long: `Copy the databases of the data location SRC into DST, whole: every revision (with its number, time,
author and parents), branch, snapshot and head log (time travel reads the same), every node under the same
hash, idempotency keys and plans. SRC and DST are each a data directory or a postgres:// URL (as --data takes
them; --data itself is not used): migrate a directory to PostgreSQL, back a PostgreSQL location up to a
directory, restore it, or move between two of a kind.

It copies every database of SRC, or only those named with --db. It refuses, copying nothing, if any of them
exists in DST already: drop it there first. Each database takes its name in DST only once it is copied whole,
so an interrupted copy leaves no half database behind. SRC is not changed and may be in use meanwhile: each
copy is the state its database had when its copy began (make the copy while nothing writes, to have the same
state in both). Imports in progress in SRC are not copied; nor is SRC's audit log (the copy is recorded in
both logs).`,
		Example: `  strata db copy ./strata-data postgres://strata@db.internal:5432/strata
  strata db copy postgres://strata@db.internal/strata ./backup --db shop
  strata db copy ./backup postgres://strata@db.internal/strata --db shop --db users`,
		Args: args(2, 2),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return copyDBs(cmd.Context(), cmd.OutOrStdout(), g, o, args[0], args[1])
		}),
	}
	cmd.Flags().StringArrayVar(&o.dbs, "db", nil, "copy only this database (repeatable; default: every database of SRC)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

// sameDir reports whether two data directories (not URLs) are one directory, however they are spelt.
func sameDir(a, b string) bool {
	if store.LooksLikeURL(a) || store.LooksLikeURL(b) {
		return false
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

func copyDBs(ctx context.Context, w io.Writer, g *globalOptions, o *dbCopyOptions, srcLoc, dstLoc string) error {
	var dbs []string
	for _, n := range o.dbs {
		if err := snapshots.ValidDatabaseName(n); err != nil {
			return err
		}
		if !slices.Contains(dbs, n) {
			dbs = append(dbs, n)
		}
	}
	o.dbs = dbs
	if srcLoc == dstLoc || sameDir(srcLoc, dstLoc) {
		return usageErrorf("SRC and DST are the same location (%s): copy into another one", locationText(srcLoc))
	}
	src, err := g.openLocation(srcLoc, false, 0, nil)
	if err != nil {
		return fmt.Errorf("SRC: %w", err)
	}
	defer src.Close()
	names, err := src.Names()
	if err != nil {
		return err
	}
	if len(o.dbs) > 0 {
		for _, n := range o.dbs {
			if !slices.Contains(names, n) {
				return &snapshots.NotFoundError{What: "database", Name: n, Hint: "it is not in " + src.Path()}
			}
		}
		names = o.dbs
	}
	if len(names) == 0 {
		return &snapshots.NotFoundError{What: "database", Name: "any", Hint: "there are none in " + src.Path() + " to copy"}
	}
	dst, err := g.openLocation(dstLoc, true, 0, nil)
	if err != nil {
		return fmt.Errorf("DST: %w", err)
	}
	defer dst.Close()
	have, err := dst.Names()
	if err != nil {
		return err
	}
	for _, n := range names {
		if slices.Contains(have, n) {
			return &cliError{code: exitConflict, err: fmt.Errorf("database %s exists in %s already, so nothing was copied: drop it there first (strata --data %s db drop %s --yes), or leave it out (--db)",
				n, dst.Path(), dst.Path(), n)}
		}
	}

	var reports []*snapshots.CopyReport
	for _, n := range names {
		start := time.Now()
		args := []string{srcLoc, dstLoc, "--db", n}
		for i := range args[:2] {
			args[i] = locationText(args[i]) // the audit log keeps no password, not even as a digest's input
		}
		var rep *snapshots.CopyReport
		// One call in each location's audit log: the read of SRC, the write of DST.
		err := g.operatorCall(ctx, src, "db copy", n, args, func(ctx context.Context, _ *gate.Actor) error {
			return g.operatorCall(ctx, dst, "db copy", n, args, func(ctx context.Context, _ *gate.Actor) error {
				var err error
				rep, err = snapshots.CopyDatabase(ctx, src, dst, n, nil)
				return err
			})
		})
		if err != nil {
			if len(reports) > 0 {
				return fmt.Errorf("copying %s (after copying %d database(s) whole): %w", n, len(reports), err)
			}
			return fmt.Errorf("copying %s: %w", n, err)
		}
		reports = append(reports, rep)
		if !o.json {
			fmt.Fprintf(w, "copied %s from %s to %s: %d revisions (last %d), %d branches, %d snapshots, %d nodes (%s) %s\n",
				n, src.Path(), dst.Path(), rep.Revisions, rep.Last, rep.Branches, rep.Snapshots, rep.Nodes, byteSize(rep.NodeBytes),
				durationText(time.Since(start)))
		}
	}
	if o.json {
		return writeJSON(w, struct {
			From      string                  `json:"from"`
			To        string                  `json:"to"`
			Databases []*snapshots.CopyReport `json:"databases"`
		}{src.Path(), dst.Path(), reports})
	}
	return nil
}

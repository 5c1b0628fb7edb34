package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/store"
)

type dbListOptions struct {
	json bool
}

func newDBListCommand(g *globalOptions) *cobra.Command {
	o := &dbListOptions{}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the databases, with their revisions, branch heads and file sizes",
		Args:    args(0, 0),
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			return listDBs(cmd.Context(), cmd.OutOrStdout(), g, o)
		}),
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

func listDBs(ctx context.Context, w io.Writer, g *globalOptions, o *dbListOptions) (err error) {
	infos := []snapshots.DatabaseInfo{}
	if _, serr := os.Stat(g.dataDir); serr == nil || store.LooksLikeURL(g.dataDir) {
		err := g.withDir(false, func(dir *snapshots.Dir) error {
			names, err := dir.Names()
			if err != nil {
				return err
			}
			for _, n := range names {
				info, err := dir.Info(ctx, n)
				if err != nil {
					return fmt.Errorf("database %s: %w", n, err)
				}
				infos = append(infos, info)
			}
			return nil
		})
		if err != nil {
			return err
		}
	} else if !errors.Is(serr, fs.ErrNotExist) {
		return serr
	}
	if o.json {
		return writeJSON(w, struct {
			Data      string                   `json:"data"`
			Databases []snapshots.DatabaseInfo `json:"databases"`
		}{locationText(g.dataDir), infos})
	}
	if len(infos) == 0 {
		_, err := fmt.Fprintf(w, "no databases in %s; create one with: strata db create NAME\n", locationText(g.dataDir))
		return err
	}
	tw := table(w)
	fmt.Fprintln(tw, "NAME\tREVISIONS\tBRANCHES\tSIZE")
	for _, info := range infos {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", info.Name, info.Revisions, heads(info.Heads), byteSize(info.FileBytes))
	}
	return tw.Flush()
}

// heads writes branch heads as "main@7 try@5", main first.
func heads(m map[string]uint64) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if (names[i] == snapshots.Main) != (names[j] == snapshots.Main) {
			return names[i] == snapshots.Main
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s@%d", n, m[n])
	}
	return strings.Join(parts, " ")
}

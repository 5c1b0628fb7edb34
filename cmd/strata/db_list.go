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

// listedDB is a database as db list shows it: its summary, or why it could not be read.
type listedDB struct {
	snapshots.DatabaseInfo
	Error string `json:"error,omitempty"`
}

func listDBs(ctx context.Context, w io.Writer, g *globalOptions, o *dbListOptions) (err error) {
	infos := []listedDB{}
	var failed []string
	if _, serr := os.Stat(g.dataDir); serr == nil || store.LooksLikeURL(g.dataDir) {
		err := g.withDir(false, func(dir *snapshots.Dir) error {
			names, err := dir.Names()
			if err != nil {
				return err
			}
			for _, n := range names {
				info, err := dir.Info(ctx, n)
				var nf *snapshots.NotFoundError
				switch {
				case errors.As(err, &nf) && nf.What == "database":
					continue // dropped (by another process) since it was listed
				case err != nil:
					// One database that cannot be read does not hide the others (found in review: a damaged file
					// made db list show nothing); the command fails at the end.
					infos = append(infos, listedDB{DatabaseInfo: snapshots.DatabaseInfo{Name: n, Heads: map[string]uint64{}}, Error: err.Error()})
					failed = append(failed, n)
					continue
				}
				infos = append(infos, listedDB{DatabaseInfo: info})
			}
			return nil
		})
		if err != nil {
			return err
		}
	} else if !errors.Is(serr, fs.ErrNotExist) {
		return serr
	}
	defer func() {
		if err == nil && len(failed) > 0 {
			err = fmt.Errorf("%d database(s) could not be read: %s (each one's error is listed with it)", len(failed), strings.Join(failed, ", "))
		}
	}()
	if o.json {
		return writeJSON(w, struct {
			Data      string     `json:"data"`
			Databases []listedDB `json:"databases"`
		}{locationText(g.dataDir), infos})
	}
	if len(infos) == 0 {
		_, err := fmt.Fprintf(w, "no databases in %s; create one with: strata db create NAME\n", locationText(g.dataDir))
		return err
	}
	tw := table(w)
	fmt.Fprintln(tw, "NAME\tREVISIONS\tBRANCHES\tSIZE")
	for _, info := range infos {
		if info.Error != "" {
			fmt.Fprintf(tw, "%s\t?\t?\t%s\n", info.Name, oneLine(info.Error))
			continue
		}
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

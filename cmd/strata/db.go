package main

import "github.com/spf13/cobra"

// newDBCommand is `strata db`: create, list and drop databases.
func newDBCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "db",
		Short: "Create, list and drop databases",
		Long: `A database is one file, NAME.strata, in the data directory (--data, env STRATA_DATA, default
./strata-data), or, when the data location is a postgres:// URL, rows of that PostgreSQL database. Each has its
own history, branches and snapshots, starting with revision 1 on branch main. 'strata db copy' copies databases
between locations.`,
		Args: cobra.NoArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error { return cmd.Help() }),
	}
	cmd.AddCommand(newDBCreateCommand(g), newDBListCommand(g), newDBDropCommand(g), newDBCopyCommand(g))
	return cmd
}

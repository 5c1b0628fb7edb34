package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/bench"
)

type benchOptions struct {
	quick   bool
	n       []int
	systems []string
	runs    int
	k       int
	json    string
	plot    string
	tmp     string
	verbose bool
	from    []string
}

func newBenchCommand(g *globalOptions) *cobra.Command {
	o := &benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run the benchmark suite: Strata against a naive baseline, git, SQLite, PostgreSQL and Dolt",
		Long: `Run the benchmark workload (docs/benchmarks.md) — an array of N small objects, loaded, then K single-field revisions — on Strata and,
side by side, on a naive baseline (a full JSON copy per revision in bbolt), git, and SQLite, PostgreSQL and Dolt
when their binaries are on PATH (a missing one is skipped with a note). Every commit is durable.

Prints a markdown table per N: each figure is the median of several runs with the min–max, and each peer's
ratio to Strata. --json FILE writes every measurement as {workload, system, n, metric, value, unit};
--plot DIR writes an SVG chart per operation (cost against N, log axes). The stores live in a temporary
directory that is removed afterwards (not --data). A progress bar shows on stderr when it is a terminal.`,
		Example: `  strata bench --quick
  strata bench --n 10000,100000 --json results.json --plot charts/
  strata bench --n 1000000 --systems strata,baseline --runs 1
  strata bench --from small.json --from big.json --plot charts/`,
		Args: args(0, 0),
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), g, o)
		}),
	}
	f := cmd.Flags()
	f.BoolVar(&o.quick, "quick", false, "N = 10,000 with few repetitions: a smoke test of well under a minute")
	f.IntSliceVar(&o.n, "n", nil, "document sizes in elements, comma-separated (default 10000,100000; --quick: 10000)")
	f.StringSliceVar(&o.systems, "systems", nil, "systems to run, comma-separated: "+strings.Join(bench.Systems, ","))
	f.IntVar(&o.runs, "runs", 0, "runs per figure (default 3; --quick: 2)")
	f.IntVar(&o.k, "k", 0, "single-field revisions after the load (default 100; --quick: 40)")
	f.StringVar(&o.json, "json", "", "write every measurement to this file as JSON")
	f.StringVar(&o.plot, "plot", "", "write SVG charts into this directory")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "print a line per step on stderr (instead of the progress bar)")
	f.StringArrayVar(&o.from, "from", nil, "run nothing: render (and merge) the measurements of earlier --json files (repeatable)")
	f.StringVar(&o.tmp, "tmp", "", "make the stores under this directory (default: the system's temporary directory)")
	return cmd
}

func runBench(ctx context.Context, stdout, stderr io.Writer, g *globalOptions, o *benchOptions) error {
	if o.runs < 0 || o.k < 0 {
		return usageErrorf("--runs and --k must be positive")
	}
	if o.k == 1 {
		return usageErrorf("--k must be at least 2 (the suite reads and diffs revision K/2 against K)")
	}
	for j, n := range o.n {
		if n < 1 {
			return usageErrorf("--n: a size must be at least 1, not %d", n)
		}
		if contains(o.n[:j], n) {
			return usageErrorf("--n: the size %d is given twice", n)
		}
	}
	for _, s := range o.systems {
		if !contains(bench.Systems, s) {
			return usageErrorf("--systems: unknown system %q (known: %s)", s, strings.Join(bench.Systems, ", "))
		}
	}
	opts := bench.Options{N: o.n, Systems: o.systems, Quick: o.quick, Runs: o.runs, K: o.k, TempDir: o.tmp}
	switch {
	case o.verbose:
		opts.Log = stderr
	case g.env.terminal(stderr):
		opts.Progress = stderr
	}
	var rep *bench.Report
	var err error
	if len(o.from) > 0 {
		var files [][]byte
		for _, p := range o.from {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if _, err := bench.ReadJSON(b); err != nil {
				return usageErrorf("--from %s: not the measurements --json writes: %v", p, err)
			}
			files = append(files, b)
		}
		rep, err = bench.ReadJSON(files...)
	} else {
		rep, err = bench.Run(ctx, opts)
	}
	if err != nil {
		return err
	}
	if _, err := io.WriteString(stdout, rep.Markdown()); err != nil {
		return err
	}
	if o.json != "" {
		b, err := rep.JSON()
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.json, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if o.plot != "" {
		files, err := rep.SVG(o.plot)
		if err != nil {
			return err
		}
		if g.env.terminal(stderr) {
			fmt.Fprintf(stderr, "wrote %d charts to %s\n", len(files), o.plot)
		}
	}
	return nil
}

func contains[T comparable](list []T, s T) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

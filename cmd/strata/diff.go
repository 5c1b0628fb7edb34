package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/internal/safetext"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
)

type diffOptions struct {
	resource string
	path     string
	limit    int
	json     bool
}

func newDiffCommand(g *globalOptions) *cobra.Command {
	o := &diffOptions{}
	cmd := &cobra.Command{
		Use:   "diff DB FROM TO",
		Short: "Show what changed between two states, as a structural diff",
		Long: `Show what changed from one state to another: FROM and TO are refs (a revision number, a snapshot or
branch name, or BRANCH@TIME). Each line is one RFC 6902 operation:

  - /path  old value            removed
  + /path  new value            added
  ~ /path  old value → new value  replaced
  > /from → /path               moved

Coloured on a terminal (NO_COLOR turns colour off). Paths start at the database root (/RESOURCE/…), or inside
RESOURCE with --resource. Long values are shortened; --json prints them whole, as
{"counts": {…}, "operations": [RFC 6902 operations, remove and replace with "old_value"]}.`,
		Example: `  strata diff shop before-sale main
  strata diff shop 3 5 --resource catalog --path /products --json`,
		Args: args(3, 3),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if o.limit < 0 {
				return usageErrorf("--limit must be 0 (no limit) or more, not %d", o.limit)
			}
			return diff(cmd.Context(), cmd.OutOrStdout(), g, o, args[0], args[1], args[2])
		}),
	}
	cmd.Flags().StringVarP(&o.resource, "resource", "r", "", "compare only this resource (RESOURCE or RESOURCE/path)")
	cmd.Flags().StringVarP(&o.path, "path", "p", "", "with --resource: compare only the value at this JSON Pointer")
	cmd.Flags().IntVar(&o.limit, "limit", 0, "stop after this many operations; 0 shows all")
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON: counts and RFC 6902 operations with old values")
	return cmd
}

// diffResult is what `diff --json` prints (docs/design.md §3.4, diff).
type diffResult struct {
	FromRevision uint64 `json:"from_revision"`
	ToRevision   uint64 `json:"to_revision"`
	Resource     string `json:"resource,omitempty"`
	Path         string `json:"path,omitempty"`
	*revision.DiffResult
	// More and CountsComplete are the MCP diff's names for what truncated says (found in review: --json used
	// only truncated, which the MCP tool gives another meaning).
	More           bool `json:"more"`
	CountsComplete bool `json:"counts_complete"`
}

func diff(ctx context.Context, w io.Writer, g *globalOptions, o *diffOptions, dbName, fromArg, toArg string) error {
	from, err := parseRef(fromArg)
	if err != nil {
		return err
	}
	to, err := parseRef(toArg)
	if err != nil {
		return err
	}
	resource, ptr, err := splitResourcePath(o.resource)
	if err != nil {
		return err
	}
	if o.path != "" {
		if resource == "" {
			return usageErrorf("--path needs --resource: strata diff DB FROM TO --resource RESOURCE --path %s", o.path)
		}
		if len(ptr) > 0 {
			return usageErrorf("give the path once: as --resource RESOURCE/path or as --path, not both")
		}
		if ptr, err = pointerFlag(o.path); err != nil {
			return err
		}
	}
	if resource != "" {
		if err := snapshots.ValidResourceName(resource); err != nil {
			return err
		}
	}
	return g.withDB(ctx, dbName, func(db *snapshots.DB) error {
		d, a, b, err := db.Diff(ctx, from, to, resource, ptr, &revision.DiffOptions{MaxOps: o.limit, MaxValueBytes: 256 << 20})
		if err != nil {
			return err
		}
		if o.json {
			return writeJSON(w, diffResult{a.Rev.Number, b.Rev.Number, resource, ptr.String(), d, d.Truncated, !d.Truncated})
		}
		p := g.painter(w)
		head := fmt.Sprintf("%s → %s", refText(fromArg, a.Rev.Number), refText(toArg, b.Rev.Number))
		if resource != "" {
			head = resource + ptr.String() + ": " + head
		}
		fmt.Fprintf(w, "%s: %s\n", p.paint(ansiBold, safetext.Text(head)), countsText(d))
		more := ""
		if d.Truncated {
			more = fmt.Sprintf("… stopped after %d operation%s (--limit)", len(d.Operations), plural(len(d.Operations)))
		}
		return printDiff(w, p, d, more)
	})
}

// countsText summarises a diff: "2 replaced, 1 added, 1 removed", or "no changes".
func countsText(d *revision.DiffResult) string {
	c := d.Counts
	var parts []string
	for _, x := range []struct {
		n    int
		what string
	}{{c.Replaced, "replaced"}, {c.Added, "added"}, {c.Removed, "removed"}, {c.Moved, "moved"}} {
		if x.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", x.n, x.what))
		}
	}
	if len(parts) == 0 {
		return "no changes"
	}
	s := strings.Join(parts, ", ")
	if d.Truncated {
		s += " (at least)"
	}
	return s
}

// printDiff writes a diff's operations, one per line, coloured by p; more is said after them if set.
func printDiff(w io.Writer, p painter, d *revision.DiffResult, more string) error {
	for _, op := range d.Operations {
		if op.Path == "" {
			op.Path = "(whole value)"
		}
		var line, colour string
		switch op.Op {
		case "remove":
			line, colour = fmt.Sprintf("- %s  %s", op.Path, clipValue(op.OldValue)), ansiRed
		case "add":
			line, colour = fmt.Sprintf("+ %s  %s", op.Path, clipValue(op.Value)), ansiGreen
		case "replace":
			line, colour = fmt.Sprintf("~ %s  %s → %s", op.Path, clipValue(op.OldValue), clipValue(op.Value)), ansiYellow
		case "move":
			line, colour = fmt.Sprintf("> %s → %s", op.From, op.Path), ansiCyan
		case "copy":
			line, colour = fmt.Sprintf("+ %s  copy of %s", op.Path, op.From), ansiGreen
		default:
			line = fmt.Sprintf("? %s %s", op.Op, op.Path)
		}
		if _, err := fmt.Fprintln(w, p.paint(colour, safetext.Text(line))); err != nil {
			return err
		}
	}
	if more != "" {
		_, err := fmt.Fprintln(w, more)
		return err
	}
	return nil
}

// clipValue shortens JSON text for one line of a diff, at a character boundary.
func clipValue(b []byte) string {
	const max = 72
	if len(b) <= max {
		return string(b)
	}
	n := max
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n]) + "…"
}

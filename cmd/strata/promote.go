package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/internal/safetext"
	"github.com/strata-db/strata/snapshots"
)

type promoteOptions struct {
	into    string
	write   writeFlags
	json    bool
	resolve []string // POINTER=branch|into
	keys    []string // PATH=MEMBER
	config  string   // an operator configuration file: its merge_keys
}

func newPromoteCommand(g *globalOptions) *cobra.Command {
	o := &promoteOptions{}
	cmd := &cobra.Command{
		Use:   "promote DB BRANCH",
		Short: "Bring a branch's changes into another branch (default main)",
		Long: `Bring BRANCH's changes into --into (default main) as one new revision: a fast-forward when --into has not
moved since BRANCH left it, else a three-way merge: objects member by member, arrays element by element (arrays
of objects that all carry a unique "id", or the key --key or the configuration's merge_keys names, are aligned
by it). When both changed the same place in different ways, each conflicting path is listed with its base, into
and branch values, nothing is written, and the exit code is 4; promote again with --resolve PATH=branch (take
BRANCH's value there) or --resolve PATH=into (keep --into's) for each path. BRANCH stays; delete it with
strata branch DB -d BRANCH.`,
		Example: `  strata promote shop try-sale
  strata promote shop try-sale --into staging -m "sale prices, reviewed"
  strata promote shop try-sale --resolve /catalog/items/3/price=branch --resolve /catalog/currency=into
  strata promote shop try-sale --key /catalog/items=sku`,
		Args: args(2, 2),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return promote(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), g, o, args[0], args[1])
		}),
	}
	cmd.Flags().StringVar(&o.into, "into", snapshots.Main, "the branch to bring the changes into")
	cmd.Flags().StringArrayVar(&o.resolve, "resolve", nil, "POINTER=branch|into: settle the conflict at POINTER, as listed, by taking BRANCH's value or keeping --into's (repeatable)")
	cmd.Flags().StringArrayVar(&o.keys, "key", nil, "PATH=MEMBER: align the elements of the array at PATH (\"/catalog/items\") by MEMBER instead of \"id\"; an empty MEMBER aligns by position (repeatable)")
	cmd.Flags().StringVar(&o.config, "config", "", "an operator configuration file (as strata mcp --config takes): its merge_keys apply, under --key")
	o.write.register(cmd, "")
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

func promote(ctx context.Context, w, stderr io.Writer, g *globalOptions, o *promoteOptions, dbName, branch string) error {
	wo := g.writeOptions(&o.write, "promote")
	if wo.Message == "" {
		wo.Message = fmt.Sprintf("promote %s into %s", branch, o.into)
	}
	resolve, keys, err := o.mergeFlags()
	if err != nil {
		return err
	}
	// The audit record's digest covers what the merge does: the branch promoted into, the head expected, the
	// resolutions, and the keys in force (those of --config too; a review noted --into, --config and
	// --expected-head were left out).
	argv := []string{dbName, branch, "--into=" + o.into}
	if o.write.expectedHead != 0 {
		argv = append(argv, fmt.Sprintf("--expected-head=%d", o.write.expectedHead))
	}
	for _, r := range o.resolve {
		argv = append(argv, "--resolve="+r)
	}
	for _, path := range slices.Sorted(maps.Keys(keys)) {
		argv = append(argv, "--key="+path+"="+keys[path])
	}
	return g.asOperatorIn(ctx, dbName, "promote", argv, func(ctx context.Context, db *gate.View) error {
		ch := g.change(gate.OpPromote, &o.write, "promote")
		ch.Source, ch.Branch, ch.Message = branch, o.into, wo.Message
		ch.Resolve, ch.Keys = resolve, keys
		out, err := db.Write(ctx, ch)
		var res *snapshots.PromoteResult
		if out != nil {
			res = out.Promote
		}
		if err != nil {
			if res != nil && len(res.Conflicts) > 0 && errors.Is(err, snapshots.ErrConflict) {
				return printConflicts(ctx, w, stderr, db, o, branch, res, err)
			}
			return err
		}
		if o.json {
			return writeJSON(w, struct {
				writeResult
				FastForward bool `json:"fast_forward"`
			}{writeResult{res.Result, wo.Author, wo.Tool}, res.FastForward})
		}
		how := "three-way merge"
		if res.FastForward {
			how = "fast-forward"
		}
		return printWrite(w, res.Result, fmt.Sprintf("promoted %s into %s (%s)", branch, res.Branch, how))
	})
}

// conflictValueBytes is how long a conflict's value may be before it is shown as an $elided marker.
const conflictValueBytes = 2000

// printConflicts shows a promote's conflicts, each path with its base, into and branch values — as JSON on stdout
// with --json, else on stderr — and returns the refusal, reworded to say how to settle them here.
func printConflicts(ctx context.Context, w, stderr io.Writer, db *gate.View, o *promoteOptions, branch string, res *snapshots.PromoteResult, err error) error {
	cs, total, rerr := db.ConflictReports(ctx, res, conflictValueBytes, 0)
	if rerr != nil {
		return rerr
	}
	if o.json {
		// The conflicts are the useful output: print them before failing.
		if werr := writeJSON(w, struct {
			Conflicts []gate.ConflictReport `json:"conflicts"`
		}{cs}); werr != nil {
			return werr
		}
	} else {
		show := func(v json.RawMessage) string {
			if v == nil {
				return "(absent)"
			}
			return string(safetext.JSON(v))
		}
		for _, c := range cs {
			fmt.Fprintf(stderr, "conflict: %s: %s\n", safetext.Text(c.Path), safetext.Text(c.Reason))
			if c.Elements {
				fmt.Fprintf(stderr, "  (the elements from there, as each side has them)\n")
			}
			fmt.Fprintf(stderr, "  base    %s\n  into    %s\n  branch  %s\n", show(c.Base), show(c.Into), show(c.Branch))
		}
	}
	settled := ""
	if n := len(res.Resolved); n > 0 {
		settled = fmt.Sprintf(" (--resolve settled %d other(s))", n)
	}
	return &reworded{fmt.Sprintf("promoting %s into %s conflicts at %d path(s)%s; nothing was written. Settle each with --resolve PATH=branch (take %s's value) or --resolve PATH=into (keep %s's), naming the paths as listed",
		branch, o.into, total, settled, branch, o.into), err}
}

// mergeFlags are the resolutions of --resolve and the keys of --config's merge_keys and --key (which take
// precedence).
func (o *promoteOptions) mergeFlags() (resolve, keys map[string]string, err error) {
	for _, r := range o.resolve {
		i := strings.LastIndexByte(r, '=')
		if i < 0 || (r[i+1:] != snapshots.ResolveBranch && r[i+1:] != snapshots.ResolveInto) || !strings.HasPrefix(r, "/") {
			return nil, nil, usageErrorf("--resolve %q: give POINTER=branch or POINTER=into, POINTER a conflict's path as listed (\"/catalog/items/3/price\")", r)
		}
		if resolve == nil {
			resolve = map[string]string{}
		}
		if _, dup := resolve[r[:i]]; dup {
			return nil, nil, usageErrorf("--resolve: %s is given twice", r[:i])
		}
		resolve[r[:i]] = r[i+1:]
	}
	if o.config != "" {
		s, err := gate.LoadSettings(o.config)
		if err != nil {
			return nil, nil, usageErrorf("--config: %v", err)
		}
		keys = maps.Clone(s.MergeKeys)
	}
	for _, k := range o.keys {
		i := strings.LastIndexByte(k, '=')
		if i < 0 || !strings.HasPrefix(k, "/") {
			return nil, nil, usageErrorf("--key %q: give PATH=MEMBER, PATH the array's JSON Pointer beginning with the resource (\"/catalog/items=sku\")", k)
		}
		if keys == nil {
			keys = map[string]string{}
		}
		keys[k[:i]] = k[i+1:]
	}
	if err := gate.ValidMergeKeys(keys); err != nil {
		return nil, nil, usageErrorf("--key: %v", err)
	}
	return resolve, keys, nil
}

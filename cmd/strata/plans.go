package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/internal/safetext"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
)

// The plans an agent made wait here for a person (docs/design.md §4): `strata plans` lists them and shows one with its
// diff, `strata approve` lets the agent apply it, `strata reject` ends it with a reason the agent is told. They
// work while a server holds the data directory.

type plansOptions struct {
	json bool
	all  bool
}

func newPlansCommand(g *globalOptions) *cobra.Command {
	o := &plansOptions{}
	cmd := &cobra.Command{
		Use:   "plans DB [PLAN_ID]",
		Short: "List the plans agents made that wait for a person, or show one with its diff",
		Long: `An agent's change that needs confirmation (a change to a protected branch, deleting what someone else
created) is not written: it becomes a plan. With DB alone, list the plans waiting, newest last (--all: also
those settled in the last day). With PLAN_ID, show one: what it does, what it removes and overwrites, and
its diff. Approve it with 'strata approve', reject it with 'strata reject'.`,
		Example: `  strata plans shop
  strata plans shop plan-7h2kq3...
  strata approve shop plan-7h2kq3...`,
		Args: args(1, 2),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if len(args) == 2 {
				return showPlan(cmd.Context(), cmd.OutOrStdout(), g, o, args[0], args[1])
			}
			return listPlans(cmd.Context(), cmd.OutOrStdout(), g, o, args[0])
		}),
	}
	cmd.Flags().BoolVar(&o.all, "all", false, "also list plans approved, rejected, applied or expired in the last day")
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

type decideOptions struct {
	json   bool
	reason string
}

func newApproveCommand(g *globalOptions) *cobra.Command {
	o := &decideOptions{}
	cmd := &cobra.Command{
		Use:   "approve DB PLAN_ID",
		Short: "Approve an agent's plan: the agent may then apply it (apply_plan)",
		Long: `Approve a pending plan. Nothing is written yet: the agent that made the plan applies it with
apply_plan, which commits exactly what the plan previewed, and only while nothing it changes has changed on
its branch since the plan was made (other commits there are fine). Review it first with 'strata plans DB PLAN_ID'.`,
		Example: `  strata plans shop plan-7h2kq3...
  strata approve shop plan-7h2kq3...`,
		Args: args(2, 2),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return decidePlan(cmd.Context(), cmd.OutOrStdout(), g, o, args[0], args[1], true)
		}),
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

func newRejectCommand(g *globalOptions) *cobra.Command {
	o := &decideOptions{}
	cmd := &cobra.Command{
		Use:   "reject DB PLAN_ID [--reason TEXT]",
		Short: "Reject an agent's plan, telling it why",
		Long: `Reject a pending plan: it will never apply. The reason is what the agent is told when it tries to
apply the plan.`,
		Example: `  strata reject shop plan-7h2kq3... --reason "prices never go below cost"`,
		Args:    args(2, 2),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return decidePlan(cmd.Context(), cmd.OutOrStdout(), g, o, args[0], args[1], false)
		}),
	}
	cmd.Flags().StringVar(&o.reason, "reason", "", "why: the agent is told")
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

// planJSON is a plan as the CLI prints it with --json.
type planJSON struct {
	ID         string            `json:"plan_id"`
	State      string            `json:"state"`
	Principal  string            `json:"principal"`
	Tool       string            `json:"tool"`
	Branch     string            `json:"branch,omitempty"`
	Target     string            `json:"target,omitempty"`
	Base       uint64            `json:"base"`
	Summary    string            `json:"summary"`
	Counts     revision.Counts   `json:"counts"`
	Removes    []string          `json:"removes"`
	Overwrites []string          `json:"overwrites"`
	Preview    []revision.DiffOp `json:"preview,omitempty"`
	Created    time.Time         `json:"created"`
	Expires    time.Time         `json:"expires_at"`
	DecidedBy  string            `json:"decided_by,omitempty"`
	Decided    time.Time         `json:"decided,omitzero"`
	Reason     string            `json:"reason,omitempty"`
	Revision   uint64            `json:"revision,omitempty"`
	// PreviewComplete: preview holds every operation (the text says "more operations than shown" otherwise).
	PreviewComplete bool `json:"preview_complete"`
}

func planOf(p snapshots.Plan, now time.Time, withPreview bool) planJSON {
	j := planJSON{ID: p.ID, State: p.StateAt(now), Principal: p.Principal, Tool: p.Op, Branch: p.Branch, Target: p.Target,
		Base: p.Base, Summary: p.Summary, Counts: p.Counts, Removes: nonNilStrings(p.Removes), Overwrites: nonNilStrings(p.Overwrites),
		Created: p.Created, Expires: p.Expires, DecidedBy: p.DecidedBy, Decided: p.Decided, Reason: p.Reason, Revision: p.Revision,
		PreviewComplete: p.PreviewComplete}
	if withPreview {
		j.Preview = p.Preview
	}
	return j
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func listPlans(ctx context.Context, w io.Writer, g *globalOptions, o *plansOptions, dbName string) error {
	return g.withDB(ctx, dbName, func(db *snapshots.DB) error {
		ps, err := db.Plans(ctx)
		if err != nil {
			return err
		}
		now := db.Now()
		var shown []planJSON
		for _, p := range ps {
			if st := p.StateAt(now); o.all || st == snapshots.PlanPending || st == snapshots.PlanApproved {
				shown = append(shown, planOf(p, now, false))
			}
		}
		if o.json {
			if shown == nil {
				shown = []planJSON{}
			}
			return writeJSON(w, struct {
				Plans []planJSON `json:"plans"`
			}{shown})
		}
		if len(shown) == 0 {
			_, err := fmt.Fprintf(w, "no plans waiting in %s\n", dbName)
			return err
		}
		tw := table(w)
		fmt.Fprintln(tw, "PLAN\tSTATE\tBY\tTOOL\tCHANGE\tREMOVES\tOVERWRITES\tEXPIRES")
		for _, p := range shown {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", safetext.Field(p.ID), p.State, safetext.Field(p.Principal), safetext.Field(p.Tool), oneLine(p.Summary),
				p.Counts.Removed+p.Counts.Moved, p.Counts.Replaced, g.timeText(p.Expires))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "review one with: strata plans %s PLAN_ID\n", dbName)
		return err
	})
}

func showPlan(ctx context.Context, w io.Writer, g *globalOptions, o *plansOptions, dbName, id string) error {
	return g.withDB(ctx, dbName, func(db *snapshots.DB) error {
		p, err := db.GetPlan(ctx, id)
		if err != nil {
			return err
		}
		now := db.Now()
		if o.json {
			return writeJSON(w, planOf(p, now, true))
		}
		return printPlan(w, g, p, now)
	})
}

// atLeastText is "at least " for a plan whose counts stopped at gate.PreviewOps operations.
func atLeastText(c revision.Counts) string {
	if gate.CountsAtLeast(c) {
		return "at least "
	}
	return ""
}

// printPlan shows a plan for a person to decide on: who asks for what, what it removes and overwrites, its diff.
func printPlan(w io.Writer, g *globalOptions, p snapshots.Plan, now time.Time) error {
	pt := g.painter(w)
	fmt.Fprintf(w, "plan %s  (%s)\n", safetext.Field(p.ID), p.StateAt(now))
	fmt.Fprintf(w, "  asked by   %s, %s\n", safetext.Field(p.Principal), g.timeText(p.Created))
	fmt.Fprintf(w, "  change     %s (tool %s)\n", oneLine(p.Summary), safetext.Field(p.Op))
	switch {
	case p.Branch != "":
		fmt.Fprintf(w, "  on         branch %s at revision %d; it applies while what it changes is unchanged there\n", safetext.Field(p.Branch), p.Base)
	case p.Target != "":
		fmt.Fprintf(w, "  deletes    %s (at revision %d)\n", safetext.Field(p.Target), p.Base)
	}
	fmt.Fprintf(w, "  expires    %s\n", g.timeText(p.Expires))
	if p.DecidedBy != "" {
		fmt.Fprintf(w, "  decided by %s, %s\n", safetext.Field(p.DecidedBy), g.timeText(p.Decided))
	}
	if p.Reason != "" {
		fmt.Fprintf(w, "  reason     %s\n", oneLine(p.Reason))
	}
	if p.Revision != 0 {
		fmt.Fprintf(w, "  applied as revision %d\n", p.Revision)
	}
	// A plan keeps its first paths only (found in review: past them, this said "removes 100 value(s)" of a plan
	// that removed 150): the counts say how many.
	// The counts come from a diff that stops at gate.PreviewOps operations: at that many, they are at least.
	atLeast := atLeastText(p.Counts)
	list := func(what string, paths []string, total int, colour string) {
		if len(paths) == 0 {
			return
		}
		n := max(total, len(paths))
		fmt.Fprintf(w, "  %s %s%d value(s):\n", what, atLeast, n)
		for _, path := range paths {
			fmt.Fprintf(w, "    %s\n", pt.paint(colour, safetext.Text(path)))
		}
		if n > len(paths) {
			fmt.Fprintf(w, "    … and %d more\n", n-len(paths))
		}
	}
	list("removes", p.Removes, p.Counts.Removed+p.Counts.Moved, ansiRed)
	list("overwrites", p.Overwrites, p.Counts.Replaced, ansiYellow)
	if p.Branch == "" {
		return nil
	}
	c := p.Counts
	fmt.Fprintf(w, "diff (%d added, %d removed, %d replaced, %d moved):\n", c.Added, c.Removed, c.Replaced, c.Moved)
	more := ""
	if !p.PreviewComplete {
		more = "… (more operations than shown)"
	}
	return printDiff(w, pt, &revision.DiffResult{Operations: p.Preview}, more)
}

func decidePlan(ctx context.Context, w io.Writer, g *globalOptions, o *decideOptions, dbName, id string, approve bool) error {
	if approve && o.reason != "" {
		return usageErrorf("--reason is for strata reject")
	}
	tool := "reject"
	if approve {
		tool = "approve"
	}
	return g.asOperatorIn(ctx, dbName, tool, []string{dbName, id}, func(ctx context.Context, db *gate.View) error {
		p, err := db.DecidePlan(ctx, id, approve, strings.TrimSpace(o.reason))
		if err != nil {
			return err
		}
		if o.json {
			return writeJSON(w, planOf(p, db.Now(), false))
		}
		if !approve {
			_, err := fmt.Fprintf(w, "rejected plan %s (%s by %s); it will never apply, and the agent is told why\n", safetext.Field(p.ID), oneLine(p.Summary), safetext.Field(p.Principal))
			return err
		}
		fmt.Fprintf(w, "approved plan %s: %s by %s\n", safetext.Field(p.ID), oneLine(p.Summary), safetext.Field(p.Principal))
		if n := max(len(p.Removes), p.Counts.Removed+p.Counts.Moved); len(p.Removes) > 0 {
			fmt.Fprintf(w, "  it removes %s%d value(s), first %s\n", atLeastText(p.Counts), n, safetext.Text(p.Removes[0]))
		}
		if n := max(len(p.Overwrites), p.Counts.Replaced); len(p.Overwrites) > 0 {
			fmt.Fprintf(w, "  it overwrites %s%d value(s), first %s\n", atLeastText(p.Counts), n, safetext.Text(p.Overwrites[0]))
		}
		_, err = fmt.Fprintf(w, "nothing is written until %s applies it (apply_plan), before %s\n", safetext.Field(p.Principal), g.timeText(p.Expires))
		return err
	})
}

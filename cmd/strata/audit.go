package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/audit"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/store"
)

type auditOptions struct {
	since, until string
	principal    string
	tool         string
	db           string
	decision     string
	outcome      string
	verify       bool
	format       string
	json         bool
}

func newAuditCommand(g *globalOptions) *cobra.Command {
	o := &auditOptions{}
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show the audit log of agents' calls, or verify its hash chain",
		Long: `Show the audit log of the data directory (DATA/audit.log; with a PostgreSQL location, its table
strata_audit), oldest first: one record per call that
strata mcp and strata serve received — allowed, asked, denied, rate limited or failed — with who made it,
through which client, which tool on which database, the policy's decision, the outcome (ok or the error
code) and the revision or plan it made. Arguments are recorded only as a digest; values never are.

  SEQ  TIME  PRINCIPAL  TRANSPORT  CLIENT  TOOL  DB  DECISION  OUTCOME  DURATION  [REVISION] [PLAN]

Filters combine: --since and --until take an RFC 3339 time, a date (2026-03-14), or a duration meaning
that long ago (2h, 30m). --format json prints the records as they are stored, one JSON object a line
(--json does the same); --format csv prints a header row, then one row per record (a cell that a
spreadsheet would run as a formula gets a leading ').

--verify checks the hash chain of the whole log: every line a well-formed record, numbered in order and
linked to the one before it. It exits 0 and says how many records it checked, or exits 1 naming the first
line that was edited, deleted, inserted or reordered.`,
		Example: `  strata audit --since 2h
  strata audit --decision deny --format csv > denied.csv
  strata audit --principal ci-bot --db shop --json
  strata audit --verify`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("strata audit takes no arguments (got %q): select records with --since, --principal, --tool, --db, …", args)
			}
			return nil
		},
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			return runAudit(cmd, g, o)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.since, "since", "", "records at or after this time (RFC 3339, a date, or a duration ago: 2h)")
	f.StringVar(&o.until, "until", "", "records at or before this time (RFC 3339, a date, or a duration ago: 30m)")
	f.StringVar(&o.principal, "principal", "", "only the calls of this principal")
	f.StringVar(&o.tool, "tool", "", "only the calls of this tool")
	f.StringVar(&o.db, "db", "", "only the calls on this database")
	f.StringVar(&o.decision, "decision", "", "only calls with this decision: "+strings.Join(audit.Decisions(), ", "))
	f.StringVar(&o.outcome, "outcome", "", "only calls with this outcome: ok, or an error code such as DENIED")
	f.BoolVar(&o.verify, "verify", false, "verify the hash chain of the whole log instead of listing it")
	f.StringVar(&o.format, "format", "text", "output format: text, json (JSON lines) or csv")
	f.BoolVar(&o.json, "json", false, "print JSON lines (same as --format json)")
	return cmd
}

func runAudit(cmd *cobra.Command, g *globalOptions, o *auditOptions) error {
	w, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	switch o.format {
	case "text", "json", "csv":
	default:
		return usageErrorf("--format %q: give text, json or csv", o.format)
	}
	if o.json {
		if cmd.Flags().Changed("format") && o.format != "json" {
			return usageErrorf("--json and --format %s disagree: give one of them", o.format)
		}
		o.format = "json"
	}
	if o.decision != "" && !slices.Contains(audit.Decisions(), o.decision) {
		return usageErrorf("--decision %q: give one of %s", o.decision, strings.Join(audit.Decisions(), ", "))
	}
	now := time.Now
	if g.env.now != nil {
		now = g.env.now
	}
	t := now()
	var f audit.Filter
	var err error
	if f.Since, err = parseWhen("--since", o.since, t, g.env.loc); err != nil {
		return err
	}
	if f.Until, err = parseWhen("--until", o.until, t, g.env.loc); err != nil {
		return err
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && f.Until.Before(f.Since) {
		return usageErrorf("--until %s is before --since %s", o.until, o.since)
	}
	f.Principal, f.Tool, f.Database, f.Decision, f.Outcome = o.principal, o.tool, o.db, o.decision, o.outcome
	if o.verify {
		for _, name := range []string{"since", "until", "principal", "tool", "db", "decision", "outcome"} {
			if cmd.Flags().Changed(name) {
				return usageErrorf("--verify checks the whole log: it takes no --%s", name)
			}
		}
		if o.format == "csv" {
			return usageErrorf("--verify prints text or JSON, not csv")
		}
	}

	if store.LooksLikeURL(g.dataDir) {
		// The log is the table strata_audit of the PostgreSQL database (audit/postgres.go).
		return g.withDir(false, func(dir *snapshots.Dir) error {
			pool := dir.Postgres().Pool()
			if o.verify {
				n, err := audit.VerifyPostgres(cmd.Context(), pool)
				return reportVerify(w, n, err, dir.Path()+" (table strata_audit)", o.format == "json")
			}
			return showAudit(w, g, audit.ReadPostgres(cmd.Context(), pool), o.format, f)
		})
	}
	path := audit.PathIn(g.dataDir)
	file, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		msg := fmt.Sprintf("no audit log yet in %s: it is written by strata mcp and strata serve\n", g.dataDir)
		if o.format == "text" {
			_, err = io.WriteString(w, msg)
		} else {
			_, err = io.WriteString(stderr, "strata: "+msg) // keep stdout parseable: no records
		}
		return err
	}
	if err != nil {
		return err
	}
	defer file.Close()

	if o.verify {
		return verifyAudit(w, file, path, o.format == "json")
	}
	return showAudit(w, g, file, o.format, f)
}

// showAudit lists the records of a log read from r in a format.
func showAudit(w io.Writer, g *globalOptions, file io.Reader, format string, f audit.Filter) error {
	switch format {
	case "json":
		return audit.Read(file, f, func(r audit.Record) error { return writeJSONLine(w, r) })
	case "csv":
		return auditCSV(w, file, f)
	}
	return auditText(w, g, file, f)
}

// parseWhen reads a --since or --until value: RFC 3339, a date (midnight where the user is), or a duration ago.
func parseWhen(flag, s string, now time.Time, loc *time.Location) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, s, loc); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, usageErrorf("%s %q: give an RFC 3339 time (2026-03-14T09:00:00Z), a date (2026-03-14) or how long ago (2h, 30m)", flag, s)
}

// verifyAudit checks the chain and says so, or fails naming the first bad line.
func verifyAudit(w io.Writer, r io.Reader, path string, asJSON bool) error {
	n, err := audit.Verify(r)
	return reportVerify(w, n, err, path, asJSON)
}

// reportVerify says what verifying the log at path found: n records check out, and err is nil, a *VerifyError or
// a failure to read it.
func reportVerify(w io.Writer, n int, err error, path string, asJSON bool) error {
	var ve *audit.VerifyError
	if err != nil && !errors.As(err, &ve) {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if asJSON {
		res := struct {
			Verified bool   `json:"verified"`
			Records  int    `json:"records"`
			Line     int    `json:"line,omitempty"`
			Problem  string `json:"problem,omitempty"`
		}{Verified: ve == nil, Records: n}
		if ve != nil {
			res.Line, res.Problem = ve.Line, ve.Problem
		}
		if err := writeJSON(w, res); err != nil {
			return err
		}
	} else if ve == nil {
		if _, err := fmt.Fprintf(w, "audit log verified: %d record%s, chain intact\n", n, plural(n)); err != nil {
			return err
		}
	}
	if ve != nil {
		return &cliError{code: exitFailure, err: fmt.Errorf("audit log %s fails verification at %w", path, ve)}
	}
	return nil
}

// auditText writes one aligned line per record. Alignment is per block of lines, so that a long log streams.
func auditText(w io.Writer, g *globalOptions, r io.Reader, f audit.Filter) error {
	const block = 1000
	tw := table(w)
	n := 0
	err := audit.Read(r, f, func(rec audit.Record) error {
		extra := ""
		if rec.Revision != 0 {
			extra += fmt.Sprintf("  revision %d", rec.Revision)
		}
		if rec.PlanID != "" {
			extra += "  plan " + safeText(rec.PlanID)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s%s\n", rec.Seq, g.timeText(rec.Time),
			orDash(safeText(rec.Principal)), orDash(safeText(rec.Transport)), orDash(safeText(rec.Client)),
			orDash(safeText(rec.Tool)), orDash(safeText(rec.Database)), safeText(rec.Decision), safeText(rec.Outcome),
			msText(rec.DurationMS), extra)
		if n++; n%block == 0 {
			return tw.Flush()
		}
		return nil
	})
	if ferr := tw.Flush(); err == nil {
		err = ferr
	}
	return err
}

// msText shows a duration in milliseconds: "1.5ms".
func msText(ms float64) string { return strconv.FormatFloat(ms, 'f', -1, 64) + "ms" }

// safeText shows a name that came from a client so that it cannot drive the terminal or break the columns:
// control, format (bidi) and space characters other than ' ' make it print quoted, with escapes.
func safeText(s string) string {
	for _, r := range s {
		if r == unicode.ReplacementChar || !unicode.IsPrint(r) || unicode.Is(unicode.Cf, r) || r == ' ' {
			return strconv.QuoteToGraphic(s)
		}
	}
	return s
}

// csvHeader is the header row of --format csv: the stored member names.
var csvHeader = []string{"seq", "time", "principal", "client", "transport", "tool", "database", "args_digest",
	"decision", "outcome", "revision", "plan_id", "duration_ms", "prev", "hash"}

func auditCSV(w io.Writer, r io.Reader, f audit.Filter) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	err := audit.Read(r, f, func(rec audit.Record) error {
		rev := ""
		if rec.Revision != 0 {
			rev = strconv.FormatUint(rec.Revision, 10)
		}
		return cw.Write([]string{strconv.FormatUint(rec.Seq, 10), rec.Time.UTC().Format(audit.TimeFormat),
			csvCell(rec.Principal), csvCell(rec.Client), csvCell(rec.Transport), csvCell(rec.Tool),
			csvCell(rec.Database), rec.ArgsDigest, csvCell(rec.Decision), csvCell(rec.Outcome), rev,
			csvCell(rec.PlanID), strconv.FormatFloat(rec.DurationMS, 'f', -1, 64), rec.Prev, rec.Hash})
	})
	cw.Flush()
	if err == nil {
		err = cw.Error()
	}
	return err
}

// csvCell defuses a text cell that a spreadsheet would run as a formula (OWASP's CSV injection advice).
func csvCell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

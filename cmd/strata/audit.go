package main

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/audit"
	"github.com/strata-db/strata/internal/safetext"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/store"
)

// auditFlags are the flags of every command that writes to the audit log, and of strata audit --verify: the key of
// a keyed chain and the size at which the log is rotated (docs/security.md T21, T26).
type auditFlags struct {
	keyFile string
	maxMiB  int
	stderr  io.Writer // where a command's warnings about the log go (set before the command runs)

	loaded bool
	key    *audit.Key
	keyErr error
}

// defaultAuditMaxMiB is the size past which the audit log is rotated.
const defaultAuditMaxMiB = audit.DefaultMaxBytes >> 20

func (g *globalOptions) registerAuditFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&g.audit.keyFile, "audit-key", g.env.getenv("STRATA_AUDIT_KEY_FILE"),
		"key `FILE` (mode 600) keying the audit log's hash chain with HMAC-SHA256; a keyed log needs it to be written or verified (env STRATA_AUDIT_KEY_FILE)")
	f.IntVar(&g.audit.maxMiB, "audit-max-mib", defaultAuditMaxMiB,
		"rotate the audit log when it would pass this size (MiB); 0 never rotates")
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) { g.audit.stderr = cmd.ErrOrStderr() }
}

// auditKey is the key of --audit-key (nil without it), read once. A key file that cannot be used is a usage error.
func (g *globalOptions) auditKey() (*audit.Key, error) {
	a := &g.audit
	if !a.loaded {
		a.loaded = true
		if a.keyFile != "" {
			if a.key, a.keyErr = audit.LoadKey(a.keyFile); a.keyErr != nil {
				a.keyErr = usageErrorf("--audit-key: %v", a.keyErr)
			}
		}
	}
	return a.key, a.keyErr
}

// openAudit opens the audit log of a data directory for appending, with --audit-key and --audit-max-mib. warn
// hears of rotations that could not be done (nil: they go to the command's stderr). A log keyed with another key,
// or keyed while no key was given, is refused with an error saying which key it needs.
func (g *globalOptions) openAudit(ctx context.Context, dir *snapshots.Dir, warn func(error)) (*audit.Log, error) {
	if g.audit.maxMiB < 0 {
		return nil, usageErrorf("--audit-max-mib %d: give a size in MiB, or 0 never to rotate the audit log", g.audit.maxMiB)
	}
	key, err := g.auditKey()
	if err != nil {
		return nil, err
	}
	var l *audit.Log
	if pg := dir.Postgres(); pg != nil {
		// In PostgreSQL the log is the table strata_audit of the same database, through the location's own pool
		// (it does not rotate: --audit-max-mib is for files).
		l, err = audit.OpenPostgres(ctx, pg.Pool(), pg.Location(), key)
	} else {
		if warn == nil {
			stderr := g.audit.stderr
			if stderr == nil {
				stderr = io.Discard
			}
			warn = func(err error) { fmt.Fprintf(stderr, "strata: warning: %v\n", err) }
		}
		l, err = audit.OpenWith(audit.PathIn(dir.Path()), audit.Options{Key: key, MaxBytes: int64(g.audit.maxMiB) << 20, Warn: warn})
	}
	var ke *audit.KeyError
	if errors.As(err, &ke) {
		return nil, invalidf("opening the audit log: %v", err)
	}
	if err != nil {
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	return l, nil
}

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
		Long: `Show the audit log of the data directory (DATA/audit.log), oldest first: one record per call that
strata mcp and strata serve received — allowed, asked, denied, rate limited or failed — and for
every write, approval, rejection and schema change made on the command line (transport cli), with who made it,
through which client, which tool on which database, the policy's decision, the outcome (ok or the error
code) and the revision or plan it made. Arguments are recorded only as a digest; values never are.
Requests strata serve refused before authentication (401, and 429 for too many failures from one address)
are counted: one record per address and reason every 10 seconds, with the number of requests ("N
requests"; the client column is the address).

  SEQ  TIME  PRINCIPAL  TRANSPORT  CLIENT  TOOL  DB  DECISION  OUTCOME  DURATION  [COUNT] [REVISION] [PLAN]

When the log would pass --audit-max-mib (default 256 MiB; 0 never), it is rotated: audit.log becomes
audit-FIRST-LAST.log (the seq numbers of its records) and a new audit.log goes on the same chain. strata
audit reads every file, oldest first; remove old ones only once you have kept them elsewhere.

Filters combine: --since and --until take an RFC 3339 time, a date (2026-03-14), or a duration meaning
that long ago (2h, 30m). --format json prints the records as they are stored, one JSON object a line
(--json does the same); --format csv prints a header row, then one row per record (a cell that a
spreadsheet would run as a formula gets a leading ').

--verify checks the hash chain of the whole log, across its rotated files: every line a well-formed
record, numbered in order and linked to the one before it. It exits 0 and says how many records it
checked, or exits 1 naming the first line that was edited, deleted, inserted or reordered.

--audit-key FILE (a global flag; env STRATA_AUDIT_KEY_FILE) keys the chain: each record's hash is an
HMAC-SHA256 with the secret in FILE (its contents, trimmed; at least 16 bytes; mode 600), so that whoever
can write the log but not read the key cannot edit a record and recompute the hashes. The key is never
written to the log; records carry its id. Once a log is keyed, every command that writes to it needs the
key, and --verify needs it too (without it --verify says so and exits 1; with a wrong key it says that).`,
		Example: `  strata audit --since 2h
  strata audit --decision deny --format csv > denied.csv
  strata audit --principal ci-bot --db shop --json
  strata audit --verify
  strata --audit-key /etc/strata/audit.key audit --verify`,
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
	if !f.Until.IsZero() {
		f.Until = untilCovers(o.until, f.Until)
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
				key, err := g.auditKey()
				if err != nil {
					return err
				}
				return verifyAudit(w, dir.Path()+" (table strata_audit)", key, g.audit.keyFile, o.format == "json", func() (audit.Summary, error) {
					n, err := audit.VerifyPostgres(cmd.Context(), pool, key)
					sum := audit.Summary{Records: n}
					if err == nil && key != nil {
						sum.KeyID = key.ID()
					}
					return sum, err
				})
			}
			return showAudit(w, g, func(f audit.Filter, fn func(audit.Record) error) error {
				return audit.Read(audit.ReadPostgres(cmd.Context(), pool), f, fn)
			}, o.format, f)
		})
	}
	path := audit.PathIn(g.dataDir)
	files, err := audit.Files(path)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		if o.verify && o.format == "json" {
			// Nothing to verify is a chain intact: say so where a script reads it (found in review: --verify --json
			// printed nothing on stdout).
			return verifyAudit(w, path, nil, "", o.format == "json", func() (audit.Summary, error) { return audit.Summary{}, nil })
		}
		msg := fmt.Sprintf("no audit log yet in %s: it is written by every command that changes a database, strata mcp and strata serve\n", g.dataDir)
		if o.format == "text" {
			_, err = io.WriteString(w, msg)
		} else {
			_, err = io.WriteString(stderr, "strata: "+msg) // keep stdout parseable: no records
		}
		return err
	}

	if o.verify {
		key, err := g.auditKey()
		if err != nil {
			return err
		}
		return verifyAudit(w, path, key, g.audit.keyFile, o.format == "json", func() (audit.Summary, error) { return audit.VerifyLog(path, key) })
	}
	return showAudit(w, g, func(f audit.Filter, fn func(audit.Record) error) error { return audit.ReadLog(path, f, fn) }, o.format, f)
}

// auditSource reads the records of a log that f matches, oldest first: the files of DIR/audit.log, or the table.
type auditSource func(f audit.Filter, fn func(audit.Record) error) error

// showAudit prints the records f matches in a format: json (one record a line), csv or text.
func showAudit(w io.Writer, g *globalOptions, src auditSource, format string, f audit.Filter) error {
	switch format {
	case "json":
		return src(f, func(r audit.Record) error { return writeJSONLine(w, r) })
	case "csv":
		return auditCSV(w, src, f)
	}
	return auditText(w, g, src, f)
}

// untilCovers widens an --until time given without a fraction of a second to the end of that second: the listing
// shows times to the second, and a time copied from it must cover the record it came from (found in review), as
// BRANCH@TIME does.
func untilCovers(s string, t time.Time) time.Time {
	if _, err := time.Parse(time.RFC3339Nano, s); err == nil {
		if !strings.Contains(s, ".") {
			return t.Add(time.Second - time.Nanosecond)
		}
		return t
	}
	return t // a date is its midnight, as the flag's help says
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

// verifyAudit checks the chain of the whole log (every file, in order) and says so, or fails naming the first bad
// line, or that the chain is keyed and needs its key.
func verifyAudit(w io.Writer, path string, key *audit.Key, keyFile string, asJSON bool, verify func() (audit.Summary, error)) error {
	sum, err := verify()
	var ve *audit.VerifyError
	var ke *audit.KeyError
	if err != nil && !errors.As(err, &ve) && !errors.As(err, &ke) {
		return fmt.Errorf("reading the audit log %s: %w", path, err)
	}
	// Name the file only when it is not the current one.
	where := func(file string, line int) string {
		if file == path || file == "" {
			return fmt.Sprintf("line %d", line)
		}
		return fmt.Sprintf("%s line %d", file, line)
	}
	if asJSON {
		res := struct {
			Verified bool   `json:"verified"`
			Records  int    `json:"records"`
			Files    int    `json:"files,omitempty"`
			KeyID    string `json:"key_id,omitempty"`
			File     string `json:"file,omitempty"`
			Line     int    `json:"line,omitempty"`
			Problem  string `json:"problem,omitempty"`
		}{Verified: err == nil, Records: sum.Records, KeyID: sum.KeyID}
		if len(sum.Files) > 1 {
			res.Files = len(sum.Files)
		}
		switch {
		case ve != nil:
			res.File, res.Line, res.Problem = ve.File, ve.Line, ve.Problem
		case ke != nil:
			res.File, res.Line, res.Problem, res.KeyID = ke.File, ke.Line, (&audit.KeyError{KeyID: ke.KeyID, Given: ke.Given}).Error(), ke.KeyID
		case err != nil:
			res.Problem = err.Error()
		}
		if res.File == path {
			res.File = ""
		}
		if err := writeJSON(w, res); err != nil {
			return err
		}
	} else if err == nil {
		files := ""
		if len(sum.Files) > 1 {
			files = fmt.Sprintf(" in %d files", len(sum.Files))
		}
		keyed := ""
		if sum.KeyID != "" {
			keyed = fmt.Sprintf(", keyed (key id %s)", sum.KeyID)
		}
		if _, err := fmt.Fprintf(w, "audit log verified: %d record%s%s, chain intact%s\n", sum.Records, plural(sum.Records), files, keyed); err != nil {
			return err
		}
	}
	switch {
	case ve != nil:
		return &cliError{code: exitFailure, err: fmt.Errorf("audit log %s fails verification at %s: %s", path, where(ve.File, ve.Line), ve.Problem)}
	case ke != nil && ke.Given == "":
		return &cliError{code: exitFailure, err: fmt.Errorf("audit log %s cannot be verified without its key: the chain is keyed (key id %s) from %s on (%d record%s before it verified); pass --audit-key FILE (the key the log was written with)", path, ke.KeyID, where(ke.File, ke.Line), sum.Records, plural(sum.Records))}
	case ke != nil:
		return &cliError{code: exitFailure, err: fmt.Errorf("audit log %s: wrong key: the chain is keyed with key id %s (from %s on), and --audit-key %s has key id %s; pass the key the log was written with", path, ke.KeyID, where(ke.File, ke.Line), keyFile, ke.Given)}
	}
	return nil
}

// auditText writes one aligned line per record. Alignment is per block of lines, so that a long log streams.
func auditText(w io.Writer, g *globalOptions, src auditSource, f audit.Filter) error {
	const block = 1000
	tw := table(w)
	n := 0
	err := src(f, func(rec audit.Record) error {
		extra := ""
		if rec.Count != 0 {
			extra += fmt.Sprintf("  %d request%s", rec.Count, plural(int(min(rec.Count, 2))))
		}
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

// safeText shows a name that came from a client so that it cannot drive the terminal or break the columns: a
// control, format (bidi) or space character makes it print quoted, with escapes (safetext.Field).
func safeText(s string) string { return safetext.Field(s) }

// csvHeader is the header row of --format csv: the stored member names.
var csvHeader = []string{"seq", "time", "principal", "client", "transport", "tool", "database", "args_digest",
	"decision", "outcome", "revision", "plan_id", "duration_ms", "count", "prev", "key_id", "hash"}

func auditCSV(w io.Writer, src auditSource, f audit.Filter) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	err := src(f, func(rec audit.Record) error {
		rev, count := "", ""
		if rec.Revision != 0 {
			rev = strconv.FormatUint(rec.Revision, 10)
		}
		if rec.Count != 0 {
			count = strconv.FormatUint(rec.Count, 10)
		}
		return cw.Write([]string{strconv.FormatUint(rec.Seq, 10), rec.Time.UTC().Format(audit.TimeFormat),
			csvCell(rec.Principal), csvCell(rec.Client), csvCell(rec.Transport), csvCell(rec.Tool),
			csvCell(rec.Database), rec.ArgsDigest, csvCell(rec.Decision), csvCell(rec.Outcome), rev,
			csvCell(rec.PlanID), strconv.FormatFloat(rec.DurationMS, 'f', -1, 64), count, rec.Prev, rec.KeyID, rec.Hash})
	})
	cw.Flush()
	if err == nil {
		err = cw.Error()
	}
	return err
}

// csvCell makes a text cell's control characters visible (safetext: a CSV file is read on terminals too) and defuses a
// cell that a spreadsheet would run as a formula (OWASP's CSV injection advice).
func csvCell(s string) string {
	s = safetext.Text(s)
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

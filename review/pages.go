package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/strata-db/strata/audit"
	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/store"
)

// ---- databases

type dbRow struct {
	Name      string
	URL       string
	Revisions uint64
	Branches  int
	Main      uint64
	Pending   int
}

func (h *Handler) databases(q *req) error {
	names, err := q.a.Databases(q.ctx)
	if err != nil {
		return err
	}
	plans, _ := h.allPlans(q.ctx, q.a, q.s.reviewer())
	rows := []dbRow{}
	for _, n := range names {
		info, err := q.a.DatabaseInfo(q.ctx, n)
		if err != nil {
			continue // dropped since it was listed
		}
		row := dbRow{Name: n, URL: dbURL(n), Revisions: info.Revisions, Branches: len(info.Heads), Main: info.Heads[snapshots.Main]}
		for _, p := range plans {
			if p.DB == n && p.Pending {
				row.Pending++
			}
		}
		rows = append(rows, row)
	}
	q.render(200, "databases", "Databases", map[string]any{"Databases": rows})
	return nil
}

// ---- one database: branches and snapshots

func (h *Handler) database(q *req) error {
	db := q.r.PathValue("db")
	v, err := q.a.Open(q.ctx, db)
	if err != nil {
		return err
	}
	bs, err := v.Branches(q.ctx)
	if err != nil {
		return err
	}
	ls, err := v.Snapshots(q.ctx)
	if err != nil {
		return err
	}
	plans, _ := h.plansOf(q.ctx, v, q.s.reviewer(), q.a.Name())
	pending := 0
	for _, p := range plans {
		if p.Pending {
			pending++
		}
	}
	q.render(200, "database", db, map[string]any{"DB": db, "Branches": bs, "Snapshots": ls, "PendingHere": pending,
		"DBURL": dbURL(db), "From": "main", "To": "", "Resource": "", "Path": ""})
	return nil
}

// ---- history

type revRow struct {
	store.RevisionRecord
	URL     string
	Parents []link
}

type link struct {
	Text string
	URL  string
}

func (h *Handler) history(q *req) error {
	db := q.r.PathValue("db")
	v, err := q.a.Open(q.ctx, db)
	if err != nil {
		return err
	}
	qs := q.r.URL.Query()
	branch := qs.Get("branch")
	if branch == "" {
		branch = snapshots.Main
	}
	before, err := uintParam(qs.Get("before"), "before")
	if err != nil {
		return err
	}
	resource := qs.Get("resource")
	page, err := v.History(q.ctx, snapshots.HistoryQuery{Branch: branch, Resource: resource, Limit: 50, Before: before})
	if err != nil {
		return err
	}
	rows := make([]revRow, 0, len(page.Revisions))
	for _, r := range page.Revisions {
		rows = append(rows, revRow{RevisionRecord: r, URL: revURL(db, r.Number), Parents: parentLinks(db, r.Parents)})
	}
	next := ""
	if page.Next != 0 {
		nq := map[string][]string{"branch": {branch}, "before": {strconv.FormatUint(page.Next, 10)}}
		if resource != "" {
			nq["resource"] = []string{resource}
		}
		next = withQuery(dbURL(db, "history"), nq)
	}
	first := map[string][]string{"branch": {branch}}
	if resource != "" {
		first["resource"] = []string{resource}
	}
	q.render(200, "history", "History of "+branch, map[string]any{"DB": db, "DBURL": dbURL(db), "Branch": branch,
		"Resource": resource, "Revisions": rows, "Next": next, "Paged": before != 0, "First": withQuery(dbURL(db, "history"), first)})
	return nil
}

func parentLinks(db string, ps []uint64) []link {
	out := []link{}
	for _, p := range ps {
		out = append(out, link{Text: strconv.FormatUint(p, 10), URL: revURL(db, p)})
	}
	return out
}

func uintParam(s, name string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, errBadInput("%s must be a whole number, not %q", name, clip(s, 40))
	}
	return n, nil
}

func offsetParam(s string) (int, error) {
	n, err := uintParam(s, "offset")
	if err != nil || n > 1_000_000 {
		return 0, errBadInput("offset must be a whole number up to 1000000")
	}
	return int(n), nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// ---- one revision

func (h *Handler) revisionPage(q *req) error {
	db := q.r.PathValue("db")
	n, err := strconv.ParseUint(q.r.PathValue("n"), 10, 64)
	if err != nil || n == 0 {
		return errBadInput("a revision is a number from 1 up")
	}
	v, err := q.a.Open(q.ctx, db)
	if err != nil {
		return err
	}
	offset, err := offsetParam(q.r.URL.Query().Get("offset"))
	if err != nil {
		return err
	}
	d, err := v.ShowRevision(q.ctx, n, max(offset+pageOps+1, countOps))
	if err != nil {
		return err
	}
	fromRef := ""
	if len(d.Rev.Parents) > 0 {
		fromRef = strconv.FormatUint(d.Rev.Parents[0], 10)
	}
	dv := buildDiff(d.Diff, offset, diffContext{db: db, from: fromRef, to: strconv.FormatUint(n, 10),
		pageURL: revURL(db, n), query: map[string][]string{}})
	// "history from here" walks the branch the revision was made on, which may since have been deleted (or made
	// anew elsewhere): link it only while that branch's first-parent history still passes through this revision.
	history := ""
	if hp, err := v.History(q.ctx, snapshots.HistoryQuery{Branch: d.Rev.Branch, Before: n + 1, Limit: 1}); err == nil &&
		len(hp.Revisions) > 0 && hp.Revisions[0].Number == n {
		history = withQuery(dbURL(db, "history"), map[string][]string{"branch": {d.Rev.Branch}, "before": {strconv.FormatUint(n+1, 10)}})
	}
	q.render(200, "revision", fmt.Sprintf("Revision %d", n), map[string]any{"DB": db, "DBURL": dbURL(db),
		"Rev": revRow{RevisionRecord: d.Rev, URL: revURL(db, n), Parents: parentLinks(db, d.Rev.Parents)}, "Diff": dv,
		"History": history})
	return nil
}

// ---- a diff between two states

// pageValueBytes bounds a value a diff on these pages writes out: a larger one stands as a marker.
const pageValueBytes = 1 << 20

func (h *Handler) diffPage(q *req) error {
	db := q.r.PathValue("db")
	v, err := q.a.Open(q.ctx, db)
	if err != nil {
		return err
	}
	qs := q.r.URL.Query()
	from, to, resource, path := qs.Get("from"), qs.Get("to"), qs.Get("resource"), qs.Get("path")
	data := map[string]any{"DB": db, "DBURL": dbURL(db), "From": from, "To": to, "Resource": resource, "Path": path}
	if from == "" || to == "" {
		q.render(200, "diff", "Compare", data)
		return nil
	}
	offset, err := offsetParam(qs.Get("offset"))
	if err != nil {
		return err
	}
	var ptr revision.Pointer
	if path != "" {
		if resource == "" {
			return errBadInput("a path is inside a resource: give the resource too")
		}
		if ptr, err = revision.ParsePointer(path); err != nil {
			return gate.Errorf(gate.CodeInvalidPath, "path %q: %v", clip(path, 80), err)
		}
	}
	states := [2]snapshots.State{}
	for i, s := range []string{from, to} {
		ref, err := snapshots.ParseRefWholeSecond(s)
		if err != nil {
			return err
		}
		if states[i], err = v.Resolve(q.ctx, ref); err != nil {
			return snapshots.WholeSecondError(err)
		}
	}
	d, err := v.Diff(q.ctx, states[0], states[1], resource, ptr, &revision.DiffOptions{MaxOps: max(offset+pageOps+1, countOps), MaxValueBytes: pageValueBytes})
	if err != nil {
		return err
	}
	prefix := ""
	if resource != "" {
		prefix = "/" + revision.EscapeToken(resource) + ptr.String()
	}
	dv := buildDiff(d, offset, diffContext{db: db, prefix: prefix, from: strconv.FormatUint(states[0].Rev.Number, 10),
		to: strconv.FormatUint(states[1].Rev.Number, 10), pageURL: dbURL(db, "diff"),
		query: map[string][]string{"from": {from}, "to": {to}, "resource": {resource}, "path": {path}}})
	data["Diff"] = dv
	data["FromRev"] = link{Text: strconv.FormatUint(states[0].Rev.Number, 10), URL: revURL(db, states[0].Rev.Number)}
	data["ToRev"] = link{Text: strconv.FormatUint(states[1].Rev.Number, 10), URL: revURL(db, states[1].Rev.Number)}
	q.render(200, "diff", "Compare", data)
	return nil
}

// ---- one value, whole

// maxValueBytes bounds a value the value page shows whole.
const maxValueBytes = 8 << 20

func (h *Handler) valuePage(q *req) error {
	db := q.r.PathValue("db")
	v, err := q.a.Open(q.ctx, db)
	if err != nil {
		return err
	}
	qs := q.r.URL.Query()
	at, path := qs.Get("at"), qs.Get("path")
	ptr, err := revision.ParsePointer(path)
	if err != nil || len(ptr) == 0 {
		return gate.Errorf(gate.CodeInvalidPath, "path %q must name a resource and optionally a path inside it: /resource/…", clip(path, 80))
	}
	ref, err := snapshots.ParseRefWholeSecond(at)
	if err != nil {
		return err
	}
	st, err := v.Resolve(q.ctx, ref)
	if err != nil {
		return snapshots.WholeSecondError(err)
	}
	val, err := v.Lookup(q.ctx, st, ptr[0], ptr[1:])
	if err != nil {
		return err
	}
	data := map[string]any{"DB": db, "DBURL": dbURL(db), "At": at, "Path": path, "Rev": link{Text: strconv.FormatUint(st.Rev.Number, 10), URL: revURL(db, st.Rev.Number)}}
	if size := val.Size(); size > maxValueBytes {
		data["TooBig"] = size
	} else {
		b, err := v.Forest().JSON(q.ctx, val)
		if err != nil {
			return err
		}
		data["JSON"] = prettyJSON(b)
		data["Bytes"] = len(b)
	}
	q.render(200, "value", "Value at "+path, data)
	return nil
}

// ---- plans

// planRow is a plan as the queue and the plan page show it.
type planRow struct {
	snapshots.Plan
	DB       string
	URL      string
	State    string // as at now: pending, approved, rejected, applied, expired
	Pending  bool   // waits for a decision
	TimeLeft string
	Mine     bool
	BaseURL  string
	RevURL   string
	Message  string // the message the agent gave its change
	// RemovesAll and OverwritesAll are the paths the plan removes and overwrites with how many there are: a plan
	// keeps the first 100 of each, its counts say how many in all.
	RemovesAll, OverwritesAll pathList
}

// pathList is the first paths of a list, and its whole length.
type pathList struct {
	Paths []string
	N     int
	More  int // N - len(Paths)
}

func newPathList(paths []string, n int) pathList {
	n = max(n, len(paths))
	return pathList{Paths: paths, N: n, More: n - len(paths)}
}

func (h *Handler) row(db string, p snapshots.Plan, me string, now time.Time) planRow {
	r := planRow{Plan: p, DB: db, URL: planURL(db, p.ID), State: p.StateAt(now), Mine: p.Principal == me,
		BaseURL: revURL(db, p.Base)}
	r.Pending = r.State == snapshots.PlanPending
	r.RemovesAll = newPathList(p.Removes, p.Counts.Removed+p.Counts.Moved) // a move removes its source
	r.OverwritesAll = newPathList(p.Overwrites, p.Counts.Replaced)
	if ch, err := gate.PlanChange(p); err == nil {
		r.Message = ch.Message
	}
	if r.Pending || r.State == snapshots.PlanApproved {
		r.TimeLeft = left(p.Expires.Sub(now))
	}
	if p.Revision != 0 {
		r.RevURL = revURL(db, p.Revision)
	}
	return r
}

func left(d time.Duration) string {
	if d <= 0 {
		return "none"
	}
	d = d.Round(time.Second)
	if d >= time.Hour {
		return fmt.Sprintf("%dh %02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	if d >= time.Minute {
		return fmt.Sprintf("%dm %02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}

// plansOf lists the plans of a database a principal may see: a reviewer's queue (other principals' plans its scope
// shows), else the principal's own plans.
func (h *Handler) plansOf(ctx context.Context, v *gate.View, reviewer bool, me string) ([]planRow, error) {
	var ps []snapshots.Plan
	var err error
	if reviewer {
		ps, err = v.PlansToReview(ctx)
	} else {
		ps, err = v.MyPlans(ctx)
	}
	if err != nil {
		return nil, err
	}
	now := v.Now()
	out := make([]planRow, 0, len(ps))
	for _, p := range ps {
		p.Base = v.VisibleRevision(ctx, p.Base) // shown as the principal sees it: the real base may be hidden
		out = append(out, h.row(v.Name(), p, me, now))
	}
	return out, nil
}

// allPlans lists the plans of every database the principal sees.
func (h *Handler) allPlans(ctx context.Context, a *gate.Actor, reviewer bool) ([]planRow, error) {
	names, err := a.Databases(ctx)
	if err != nil {
		return nil, err
	}
	var out []planRow
	for _, n := range names {
		v, err := a.Open(ctx, n)
		if err != nil {
			continue
		}
		rows, err := h.plansOf(ctx, v, reviewer, a.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

func (h *Handler) pendingCount(ctx context.Context, a *gate.Actor) (int, string) {
	rows, err := h.allPlans(ctx, a, true)
	if err != nil {
		return 0, ""
	}
	n := 0
	var ids []string
	for _, r := range rows {
		if r.Pending {
			n++
			ids = append(ids, r.DB+"/"+r.ID)
		}
	}
	slices.Sort(ids)
	return n, digest(strings.Join(ids, "\n"))[:16]
}

// maxSettled bounds the settled plans the queue shows.
const maxSettled = 50

func (h *Handler) plans(q *req) error {
	rows, err := h.allPlans(q.ctx, q.a, q.s.reviewer())
	if err != nil {
		return err
	}
	pending, settled := []planRow{}, []planRow{}
	var ids []string
	for _, r := range rows {
		if r.Pending {
			pending = append(pending, r)
			ids = append(ids, r.DB+"/"+r.ID)
		} else {
			settled = append(settled, r)
		}
	}
	slices.SortFunc(pending, func(a, b planRow) int { return a.Created.Compare(b.Created) })
	slices.SortFunc(settled, func(a, b planRow) int { return settledAt(b).Compare(settledAt(a)) })
	more := 0
	if len(settled) > maxSettled {
		more = len(settled) - maxSettled
		settled = settled[:maxSettled]
	}
	slices.Sort(ids)
	title := "Plans"
	if !q.s.reviewer() {
		title = "Your plans"
	}
	q.render(200, "plans", title, map[string]any{"PendingPlans": pending, "Settled": settled, "MoreSettled": more,
		"Fingerprint": digest(strings.Join(ids, "\n"))[:16], "Pending": len(pending)})
	return nil
}

func settledAt(r planRow) time.Time {
	if !r.Decided.IsZero() {
		return r.Decided
	}
	return r.Expires
}

// findPlan is a plan the principal may see: a reviewer's, through the gate's review; anyone else's own.
func (h *Handler) findPlan(q *req, v *gate.View, id string) (snapshots.Plan, error) {
	if q.s.reviewer() {
		return v.ReviewPlan(q.ctx, id)
	}
	mine, err := v.MyPlans(q.ctx)
	if err != nil {
		return snapshots.Plan{}, err
	}
	for _, p := range mine {
		if p.ID == id {
			return p, nil
		}
	}
	return snapshots.Plan{}, &snapshots.NotFoundError{What: "plan", Name: clip(id, 64), Hint: "plan ids are exact; the plans page lists them"}
}

// moved is what happened on a plan's branch since it was made.
type moved struct {
	Head      uint64
	HeadURL   string
	Revisions []revRow
	MoreRevs  bool
	Paths     []movedPath
	MorePaths bool
	DiffURL   string
}

type movedPath struct {
	Path    string
	Overlap bool // the plan changes this path, or a path inside or around it
}

func (h *Handler) plan(q *req) error {
	db, id := q.r.PathValue("db"), q.r.PathValue("id")
	v, err := q.a.Open(q.ctx, db)
	if err != nil {
		return err
	}
	p, err := h.findPlan(q, v, id)
	if err != nil {
		return err
	}
	p.Base = v.VisibleRevision(q.ctx, p.Base) // shown, and compared with the head, as the principal sees it
	row := h.row(db, p, q.a.Name(), v.Now())
	data := map[string]any{"DB": db, "DBURL": dbURL(db), "Plan": row}
	data["CanDecide"] = q.s.reviewer() && row.Pending && (!row.Mine || q.s.p.Operator)
	data["OwnPlan"] = row.Mine && !q.s.p.Operator
	// The preview the plan keeps: its first operations (values too big for it elided).
	// Paged like any diff: every kept operation is on one of the plan's pages.
	offset, err := offsetParam(q.r.URL.Query().Get("offset"))
	if err != nil {
		return err
	}
	pv := &revision.DiffResult{Counts: p.Counts, Operations: p.Preview, Truncated: !p.PreviewComplete}
	dv := buildDiff(pv, offset, diffContext{db: db, from: strconv.FormatUint(p.Base, 10), preview: true,
		pageURL: planURL(db, p.ID), query: map[string][]string{}})
	// The plan's counts come from a diff that stops at gate.PreviewOps operations: at that many, they are at least.
	dv.CountsAtLeast = gate.CountsAtLeast(p.Counts)
	data["Diff"] = dv
	data["Change"] = changeText(p.Change)
	if row.Pending || row.State == snapshots.PlanApproved {
		m, err := h.movedSince(q, v, p)
		if err != nil {
			return err
		}
		data["Moved"] = m
	}
	q.render(200, "plan", "Plan "+p.ID, data)
	return nil
}

// changeText is the change a plan keeps, as indented JSON (cut past 64 KiB).
func changeText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	s := prettyJSON(raw)
	if len(s) > 64<<10 {
		i := 64 << 10
		for i > 0 && !utf8.RuneStart(s[i]) { // at a character's start: the cut shows no byte the agent never sent
			i--
		}
		s = s[:i] + "\n… (cut: the change is larger than 64 KiB)"
	}
	return s
}

// movedSince says what changed on the plan's branch since its base (nil when nothing did).
func (h *Handler) movedSince(q *req, v *gate.View, p snapshots.Plan) (*moved, error) {
	if p.Branch == "" {
		return nil, nil
	}
	head, err := v.Resolve(q.ctx, snapshots.Ref{Branch: p.Branch})
	if err != nil {
		var nf *snapshots.NotFoundError
		if errors.As(err, &nf) {
			return &moved{}, nil // the branch is gone
		}
		return nil, err
	}
	if head.Rev.Number == p.Base {
		return nil, nil
	}
	m := &moved{Head: head.Rev.Number, HeadURL: revURL(v.Name(), head.Rev.Number),
		DiffURL: withQuery(dbURL(v.Name(), "diff"), map[string][]string{"from": {strconv.FormatUint(p.Base, 10)}, "to": {strconv.FormatUint(head.Rev.Number, 10)}})}
	// One more than it lists, to know whether more follow.
	hist, err := v.History(q.ctx, snapshots.HistoryQuery{Branch: p.Branch, Limit: 21})
	if err != nil {
		return nil, err
	}
	for _, r := range hist.Revisions {
		if r.Number <= p.Base {
			break
		}
		if len(m.Revisions) == 20 {
			m.MoreRevs = true
			break
		}
		m.Revisions = append(m.Revisions, revRow{RevisionRecord: r, URL: revURL(v.Name(), r.Number)})
	}
	base, err := v.Resolve(q.ctx, snapshots.Ref{Revision: p.Base})
	if err != nil {
		return m, nil // the base is no longer visible: the revisions say what moved
	}
	d, err := v.Diff(q.ctx, base, head, "", nil, &revision.DiffOptions{MaxOps: 50, MaxValueBytes: pageValueBytes})
	if err != nil {
		return nil, err
	}
	planPaths := append(append([]string{}, p.Removes...), p.Overwrites...)
	for _, o := range p.Preview {
		planPaths = append(planPaths, o.Path)
	}
	for _, o := range d.Operations {
		m.Paths = append(m.Paths, movedPath{Path: o.Path, Overlap: slices.ContainsFunc(planPaths, func(pp string) bool { return related(pp, o.Path) })})
	}
	m.MorePaths = d.Truncated
	return m, nil
}

// related reports whether one JSON Pointer is the other or inside it.
func related(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

// decide approves or rejects a plan: the gate refuses principals that may not review and a plan's own principal.
func (h *Handler) decide(approve bool) func(q *req) error {
	return func(q *req) error {
		db, id := q.r.PathValue("db"), q.r.PathValue("id")
		v, err := q.a.Open(q.ctx, db)
		if err != nil {
			return err
		}
		reason := strings.TrimSpace(q.r.PostForm.Get("reason"))
		if !approve && reason == "" {
			return errBadInput("a rejection needs a reason: the agent is told it; go back and write one")
		}
		// Counted as the form's maxlength counts it: characters, a line break (sent as CRLF) one.
		if n := utf8.RuneCountInString(strings.ReplaceAll(reason, "\r\n", "\n")); n > maxReason {
			return errBadInput("the reason is %d characters long: keep it to %d at most", n, maxReason)
		}
		if _, err := v.DecidePlan(q.ctx, id, approve, reason); err != nil {
			return err
		}
		q.redirect(planURL(db, id))
		return nil
	}
}

// ---- the audit log

type auditRow struct {
	audit.Record
	DBURL   string
	RevURL  string
	PlanURL string
}

func (h *Handler) auditPage(q *req) error {
	qs := q.r.URL.Query()
	f := audit.Filter{Principal: qs.Get("principal"), Tool: qs.Get("tool"), Database: qs.Get("database"),
		Decision: qs.Get("decision"), Outcome: qs.Get("outcome")}
	if f.Decision != "" && !slices.Contains(audit.Decisions(), f.Decision) {
		return errBadInput("decision %q: use one of %s", clip(f.Decision, 40), strings.Join(audit.Decisions(), ", "))
	}
	var err error
	if f.Since, err = timeParam(qs.Get("since"), "since", false); err != nil {
		return err
	}
	if f.Until, err = timeParam(qs.Get("until"), "until", true); err != nil {
		return err
	}
	before, err := uintParam(qs.Get("before"), "before")
	if err != nil {
		return err
	}
	page, err := q.a.AuditLog(q.ctx, gate.AuditQuery{Filter: f, Before: before, Limit: 100})
	if err != nil {
		return err
	}
	rows := make([]auditRow, 0, len(page.Records))
	for _, r := range page.Records {
		row := auditRow{Record: r}
		if r.Database != "" {
			row.DBURL = dbURL(r.Database)
			if r.Revision != 0 {
				row.RevURL = revURL(r.Database, r.Revision)
			}
			if r.PlanID != "" {
				row.PlanURL = planURL(r.Database, r.PlanID)
			}
		}
		rows = append(rows, row)
	}
	filter := map[string][]string{}
	for _, k := range []string{"principal", "tool", "database", "decision", "outcome", "since", "until"} {
		if s := qs.Get(k); s != "" {
			filter[k] = []string{s}
		}
	}
	next := ""
	if page.Next > 1 {
		nq := map[string][]string{"before": {strconv.FormatUint(page.Next, 10)}}
		for k, v := range filter {
			nq[k] = v
		}
		next = withQuery("/ui/audit", nq)
	}
	q.render(200, "audit", "Audit log", map[string]any{"Records": rows, "Next": next, "Q": qs, "Decisions": audit.Decisions(),
		"Newest": withQuery("/ui/audit", filter), "Paged": before != 0})
	return nil
}

// timeParam reads a time of the audit filter: RFC 3339, or a date and time in UTC ("2026-03-14T09:00", or a date:
// the start of that day for since, its end for until).
func timeParam(s, name string, end bool) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		if end {
			t = t.Add(24*time.Hour - time.Nanosecond)
		}
		return t, nil
	}
	return time.Time{}, errBadInput("%s %q: give an RFC 3339 time (2026-03-14T09:00:00Z) or a date (2026-03-14), in UTC", name, clip(s, 40))
}

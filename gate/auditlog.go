package gate

import (
	"context"
	"errors"

	"github.com/strata-db/strata/audit"
	"github.com/strata-db/strata/snapshots"
)

// Reading the audit log (the review page's audit pages). It shows every principal's calls, so only a reviewer or
// the operator may read it, and a scoped reviewer reads it through its scope: a record of a call on a database the
// scope hides is left out, and the number of a revision, or the id of a plan, that the scope hides is not shown.

// AuditQuery selects a page of the audit log, newest first.
type AuditQuery struct {
	Filter audit.Filter
	// Before continues below this seq (a page's Next); 0 starts from the newest record.
	Before uint64
	// Limit is the most records a page holds (default 100).
	Limit int
}

// AuditPage is one page of the audit log, newest first.
type AuditPage struct {
	Records []audit.Record
	// Next is the Before of the next (older) page; 0 at the beginning of the log.
	Next uint64
}

// auditScan bounds the records one page reads, so that a filter matching nothing stops; the page then ends with a
// Next to read on from.
const auditScan = 100_000

// ErrNoAuditLog: the gate keeps no audit log.
var ErrNoAuditLog = errors.New("this server keeps no audit log")

// AuditLog reads a page of the audit log for a reviewer or the operator: its files, rotated ones included, or its
// PostgreSQL table.
func (a *Actor) AuditLog(ctx context.Context, q AuditQuery) (*AuditPage, error) {
	if !a.p.Review && !a.p.Operator {
		return nil, denied("reading the audit log")
	}
	if a.g.audit == nil {
		return nil, ErrNoAuditLog
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	page := &AuditPage{Records: []audit.Record{}}
	views := map[string]*View{}
	next, err := a.g.audit.ReadNewest(ctx, q.Filter, q.Before, auditScan, func(r audit.Record) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if a.limited() && r.Database != "" {
			if !a.dbPermitted(r.Database) {
				return nil
			}
			if r.Revision != 0 && !a.revisionShown(ctx, views, r.Database, r.Revision) {
				r.Revision = 0
			}
			if r.PlanID != "" && !a.planShown(ctx, views, r.Database, r.PlanID) {
				r.PlanID = ""
			}
		}
		page.Records = append(page.Records, r)
		if len(page.Records) >= limit {
			return audit.ErrStop
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	page.Next = next
	return page, nil
}

// view is a database for AuditLog's checks (views caches them; nil when it cannot be opened).
func (a *Actor) view(ctx context.Context, views map[string]*View, db string) *View {
	v, ok := views[db]
	if !ok {
		if d, err := a.g.dir.Open(ctx, db); err == nil {
			v = &View{a: a, name: db, db: d}
		}
		views[db] = v
	}
	return v
}

// revisionShown reports whether a scoped principal may see a revision of a database.
func (a *Actor) revisionShown(ctx context.Context, views map[string]*View, db string, n uint64) bool {
	v := a.view(ctx, views, db)
	if v == nil {
		return false
	}
	_, err := v.Resolve(ctx, snapshots.Ref{Revision: n})
	return err == nil
}

// planShown reports whether a scoped principal may see a plan of a database (one that no longer exists is shown:
// its id says nothing more).
func (a *Actor) planShown(ctx context.Context, views map[string]*View, db, id string) bool {
	v := a.view(ctx, views, db)
	if v == nil {
		return false
	}
	p, err := v.db.GetPlan(ctx, id)
	return err != nil || v.planVisible(p)
}

package gate

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/strata-db/strata/audit"
	"github.com/strata-db/strata/snapshots"
)

// TestAuditLogRotated: the audit pages (the review page's /ui/audit) read a rotated log whole, newest first, page
// after page into its oldest rotated file, as strata audit does.
func TestAuditLogRotated(t *testing.T) {
	dir, err := snapshots.OpenDir(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	path := filepath.Join(t.TempDir(), audit.FileName)
	log, err := audit.OpenWith(path, audit.Options{MaxBytes: 2000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	for i := range 40 {
		if _, err := log.Append(audit.Record{Time: time.Unix(int64(i), 0), Principal: "ada", Transport: audit.TransportCLI, Tool: "read",
			Decision: audit.DecisionAllow, Outcome: audit.OutcomeOK}); err != nil {
			t.Fatal(err)
		}
	}
	if files, err := audit.Files(path); err != nil || len(files) < 4 {
		t.Fatalf("files %q (%v): want a rotated log", files, err)
	}
	g, err := New(dir, &Options{Audit: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	op := actor(t, g, Operator("ada"))
	var seqs []uint64
	q := AuditQuery{Limit: 9}
	for range 10 {
		page, err := op.AuditLog(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Records {
			seqs = append(seqs, r.Seq)
		}
		if page.Next == 0 {
			break
		}
		q.Before = page.Next
	}
	if len(seqs) != 40 || seqs[0] != 40 || seqs[39] != 1 {
		t.Fatalf("read seqs %v: want 40 down to 1", seqs)
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]-1 {
			t.Fatalf("read seqs %v: want 40 down to 1", seqs)
		}
	}
}

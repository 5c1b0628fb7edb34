package review

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/snapshots"
)

// TestCompareAtShownSecond: the history page shows each revision's time to the second, and the compare form
// takes BRANCH@TIME. A time copied from the page, to the second, must name the revision shown there, as it does on
// the command line (docs/design.md §5: "a time to the second covers that second"), not the one before it.
func TestCompareAtShownSecond(t *testing.T) {
	e := newEnv(t, true, false)
	ctx := context.Background()
	db, _ := e.dir.Open(ctx, "shop")
	var r *snapshots.Result
	for i := 0; r == nil || r.Time.Equal(r.Time.Truncate(time.Second)); i++ { // a revision off a whole second
		if i == 5 {
			t.Fatal("five revisions on whole seconds")
		}
		var err error
		if r, err = db.Put(ctx, "orders", []byte(fmt.Sprintf(`[{"id":1,"price":%d}]`, 100+i)), snapshots.WriteOptions{Author: "admin"}); err != nil {
			t.Fatal(err)
		}
	}
	b := e.browser()
	b.signIn(ritaToken)
	shown := r.Time.UTC().Format("2006-01-02 15:04:05 UTC")
	if h := b.get("/ui/db/shop/history"); !strings.Contains(h.body, shown) {
		t.Fatalf("the history page does not show %s", shown)
	}
	at := "main@" + r.Time.UTC().Truncate(time.Second).Format(time.RFC3339)
	p := b.get("/ui/db/shop/diff?" + url.Values{"from": {at}, "to": {fmt.Sprint(r.Revision)}}.Encode())
	if p.status != 200 {
		t.Fatalf("%d\n%s", p.status, p.body)
	}
	want := fmt.Sprintf("From <a href=\"/ui/db/shop/rev/%d\">revision %d</a>", r.Revision, r.Revision)
	if !strings.Contains(p.body, want) {
		i := strings.Index(p.body, "<p>From ")
		t.Errorf("compare from %s (the second the history page shows for revision %d) did not start at revision %d:\n%s",
			at, r.Revision, r.Revision, p.body[max(i, 0):min(max(i, 0)+200, len(p.body))])
	}
}

// TestHistoryFromHereAfterBranchDeleted: the revision page links "history from here" to the history of the
// branch the revision was made on. After that branch is promoted and deleted (the usual end of a work branch; its
// revisions stay), the link must not lead to an error page, and where it is shown, it must start at this revision.
func TestHistoryFromHereAfterBranchDeleted(t *testing.T) {
	e := newEnv(t, true, false)
	ctx := context.Background()
	db, _ := e.dir.Open(ctx, "shop")
	if _, err := db.CreateBranch(ctx, "feat", snapshots.Ref{}, "admin"); err != nil {
		t.Fatal(err)
	}
	r, err := db.Put(ctx, "orders", []byte(`[{"id":1,"price":99}]`), snapshots.WriteOptions{Author: "admin", Branch: "feat"})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := db.Promote(ctx, "feat", "main", snapshots.WriteOptions{Author: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.DeleteBranch(ctx, "feat"); err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	b.signIn(ritaToken)
	// A revision of main keeps its link.
	if p := b.get(fmt.Sprintf("/ui/db/shop/rev/%d", pr.Revision)); !strings.Contains(p.body, fmt.Sprintf(`history?before=%d&amp;branch=main">history from here`, pr.Revision+1)) {
		t.Errorf("revision %d of main lost its \"history from here\" link", pr.Revision)
	}
	p := b.get(fmt.Sprintf("/ui/db/shop/rev/%d", r.Revision))
	if p.status != 200 {
		t.Fatalf("%d\n%s", p.status, p.body)
	}
	m := regexp.MustCompile(`<a href="([^"]+)">history from here`).FindStringSubmatch(p.body)
	if m == nil {
		return // no link: nothing broken
	}
	h := b.get(strings.ReplaceAll(m[1], "&amp;", "&"))
	first := regexp.MustCompile(`<td><a href="/ui/db/shop/rev/(\d+)">`).FindStringSubmatch(h.body)
	if h.status != 200 || first == nil || first[1] != fmt.Sprint(r.Revision) {
		i := strings.Index(h.body, "<main")
		t.Errorf("revision %d's \"history from here\" (%s): %d, first row %v\n%s", r.Revision, m[1], h.status, first, h.body[max(i, 0):])
	}
}

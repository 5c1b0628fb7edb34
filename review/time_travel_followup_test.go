package review

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/snapshots"
)

// TestWholeSecondNotInError: the compare form reads a BRANCH@TIME to the second as the whole second (it
// stands for TIME.999999999). A time before the branch existed is refused; the page must say so with the time the
// reviewer typed, as the command line does (cmd/strata forCLI), not with a nine-digit fraction they never wrote.
func TestWholeSecondNotInError(t *testing.T) {
	e := newEnv(t, true, false)
	ctx := context.Background()
	db, _ := e.dir.Open(ctx, "shop")
	if _, err := db.CreateBranch(ctx, "feat", snapshots.Ref{}, "admin"); err != nil {
		t.Fatal(err)
	}
	at := "feat@" + time.Date(2001, 1, 2, 3, 4, 5, 0, time.UTC).Format(time.RFC3339)
	b := e.browser()
	b.signIn(ritaToken)
	p := b.get("/ui/db/shop/diff?" + url.Values{"from": {at}, "to": {"main"}}.Encode())
	if p.status == 200 {
		t.Fatalf("a time before the branch was created was accepted:\n%s", p.body)
	}
	if strings.Contains(p.body, ".999999999") {
		i := strings.Index(p.body, "<main")
		t.Errorf("the error page shows the whole-second adjustment the reviewer never typed:\n%s", p.body[max(i, 0):])
	}
	if !strings.Contains(p.body, "NOT_FOUND") || !strings.Contains(p.body, "2001-01-02T03:04:05Z") {
		t.Errorf("the error page does not say NOT_FOUND for the time typed:\n%s", p.body)
	}
}

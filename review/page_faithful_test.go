package review

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/snapshots"
)

// manyOpsPlan has bob plan a put of orders that changes n prices: n replace operations, all kept in the preview.
func manyOpsPlan(t *testing.T, e *env, n int) string {
	t.Helper()
	ctx := context.Background()
	var items []string
	for i := range n {
		items = append(items, fmt.Sprintf(`{"id":%d,"price":%d}`, i, i))
	}
	shop, _ := e.dir.Open(ctx, "shop")
	if _, err := shop.Put(ctx, "orders", []byte("["+strings.Join(items, ",")+"]"), writeAdmin()); err != nil {
		t.Fatal(err)
	}
	for i := range items {
		items[i] = fmt.Sprintf(`{"id":%d,"price":%d}`, i, i+1000)
	}
	bob, _ := e.gate.As(e.settings.For("bob"))
	v, _ := bob.Open(ctx, "shop")
	out, err := v.Write(ctx, gate.Change{Op: gate.OpPut, Resource: "orders", Value: json.RawMessage("[" + strings.Join(items, ",") + "]"), Tool: "put"})
	if err != nil || out.Plan == nil {
		t.Fatalf("put by bob: %+v %v, want a plan", out, err)
	}
	return out.Plan.Plan.ID
}

var opPathRE = regexp.MustCompile(`<td class="path"><code>(/[^<]*)</code>`)

// TestPlanPageShowsEveryPreviewOp: a plan whose kept preview is complete (PreviewComplete) but holds more
// than 200 operations must show all of them to the reviewer (or page them, or say the list is cut). The plan page
// showed the first 200 with no next link and no note, under counts that say 300 changed.
func TestPlanPageShowsEveryPreviewOp(t *testing.T) {
	e := newEnv(t, true, false)
	id := manyOpsPlan(t, e, 300)
	p := e.planState(id)
	if !p.PreviewComplete || len(p.Preview) != 300 {
		t.Fatalf("setup: preview complete=%v ops=%d, want a complete preview of 300", p.PreviewComplete, len(p.Preview))
	}
	b := e.browser()
	b.signIn(ritaToken)
	seen := map[string]int{}
	url := "/ui/plans/shop/" + id
	for range 10 {
		pg := b.get(url)
		if pg.status != 200 {
			t.Fatalf("%s: %d\n%s", url, pg.status, pg.body)
		}
		for _, m := range opPathRE.FindAllStringSubmatch(pg.body, -1) {
			seen[m[1]]++
		}
		next := regexp.MustCompile(`<a href="([^"]+)">Next operations`).FindStringSubmatch(pg.body)
		if next == nil {
			break
		}
		url = strings.ReplaceAll(next[1], "&amp;", "&")
	}
	for i := range 300 {
		path := fmt.Sprintf("/%d/price", i)
		if seen[path] != 1 {
			t.Errorf("operation %s shown %d times on the plan's pages, want once", path, seen[path])
			if len(seen) < 300 {
				t.Fatalf("the plan's pages show %d of its 300 kept operations, with no way to see the rest", len(seen))
			}
		}
	}
}

func writeAdmin() snapshots.WriteOptions {
	return snapshots.WriteOptions{Author: "admin", Message: "m"}
}

// TestRejectReasonCountsCharacters: the form allows a reason of 2,000 characters (textarea maxlength, and
// docs/design.md §4.1 "up to 2,000 characters"), but the server counted bytes: a reason of 1,500 "é" (3,000 bytes),
// or of 2,000 characters with line breaks (which the browser sends as CRLF), was refused with "the reason is 3000
// characters long".
func TestRejectReasonCountsCharacters(t *testing.T) {
	e := newEnv(t, true, false)
	b := e.browser()
	b.signIn(ritaToken)
	csrf := b.csrf()
	for name, reason := range map[string]string{
		"1500 é":             strings.Repeat("é", 1500),
		"2000 with newlines": strings.TrimSuffix(strings.Repeat(strings.Repeat("x", 99)+"\r\n", 20), "\r\n"), // 1,999 characters as the form counts them
	} {
		id := e.plan("bob", "orders", "/0/price", "11")
		p := b.post("/ui/plans/shop/"+id+"/reject", map[string][]string{"csrf": {csrf}, "reason": {reason}})
		if p.status != 303 {
			t.Errorf("%s: a reason the form allows is refused: %d\n%s", name, p.status, regexp.MustCompile(`(?s)<p class="error".*?</p>`).FindString(p.body))
		}
	}
}

// TestHistoryNewestKeepsResourceFilter: on a later page of a history filtered by resource, "← Newest" must
// go back to the newest revisions of that same filter; it dropped the resource and showed every revision.
func TestHistoryNewestKeepsResourceFilter(t *testing.T) {
	e := newEnv(t, true, false)
	ctx := context.Background()
	shop, _ := e.dir.Open(ctx, "shop")
	for i := range 60 {
		if _, err := shop.Put(ctx, "notes", []byte(fmt.Sprint(i)), writeAdmin()); err != nil {
			t.Fatal(err)
		}
	}
	b := e.browser()
	b.signIn(ritaToken)
	p := b.get("/ui/db/shop/history?branch=main&resource=notes")
	older := regexp.MustCompile(`<a href="([^"]+)">Older revisions`).FindStringSubmatch(p.body)
	if older == nil {
		t.Fatalf("no older link:\n%s", p.body)
	}
	p2 := b.get(html.UnescapeString(older[1]))
	newest := regexp.MustCompile(`<a href="([^"]+)">← Newest`).FindStringSubmatch(p2.body)
	if newest == nil {
		t.Fatalf("no newest link:\n%s", p2.body)
	}
	u, _ := url.Parse(html.UnescapeString(newest[1]))
	if got := u.Query().Get("resource"); got != "notes" {
		t.Errorf("← Newest on a history filtered by resource notes links to %s: the filter is lost", newest[1])
	}
}

// TestMovedExactlyTwentyNoMore: a plan whose branch moved by exactly 20 revisions lists them all; it must not
// add "… and more" (it did whenever 20 were listed and any older revision existed, the base included).
func TestMovedExactlyTwentyNoMore(t *testing.T) {
	e := newEnv(t, true, false)
	id := e.plan("bob", "orders", "/0/price", "11")
	ctx := context.Background()
	shop, _ := e.dir.Open(ctx, "shop")
	for i := range 20 {
		if _, err := shop.Put(ctx, "notes", []byte(fmt.Sprint(i)), writeAdmin()); err != nil {
			t.Fatal(err)
		}
	}
	b := e.browser()
	b.signIn(ritaToken)
	p := b.get("/ui/plans/shop/" + id).body
	if n := strings.Count(p, `<li><a href="/ui/db/shop/rev/`); n != 20 {
		t.Fatalf("the plan page lists %d revisions since its base, want 20:\n%s", n, p)
	}
	if strings.Contains(p, "<li>… and more</li>") {
		t.Errorf("the plan page says \"… and more\" after listing every one of the 20 revisions since its base")
	}
}

// TestEventStreamDoesNotKeepSessionAlive: a session ends after an hour without a request (README: "sign out,
// an hour idle, or 12 hours"). The page's own event stream, which every reviewer's page opens and which polls in
// the background, renewed the session on each poll: a tab left open never idled out (and, without tokens, no new
// sign-in address was printed).
func TestEventStreamDoesNotKeepSessionAlive(t *testing.T) {
	e := newEnv(t, true, false)
	b := e.browser()
	b.signIn(ritaToken)
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/ui/events", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := b.c.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	events := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "event: ") {
				events <- strings.TrimPrefix(sc.Text(), "event: ")
			}
		}
		close(events)
	}()
	next := func() string {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				return "(end)"
			}
			return ev
		case <-time.After(5 * time.Second):
			t.Fatal("no event")
		}
		return ""
	}
	if ev := next(); ev != "plans" {
		t.Fatalf("first event %q", ev)
	}
	// 40 minutes later the stream is still polling (a new plan proves it has looked since): no request by the person.
	e.clock.add(40 * time.Minute)
	e.plan("bob", "orders", "/0/price", "11")
	if ev := next(); ev != "plans" {
		t.Fatalf("after 40 minutes: %q", ev)
	}
	// 80 minutes after the last request the session has been idle for more than an hour.
	e.clock.add(40 * time.Minute)
	e.plan("bob", "orders", "/1/price", "21")
	if ev := next(); ev != "signed-out" {
		t.Errorf("80 minutes after the last request the stream says %q, want signed-out: the stream kept the session alive", ev)
	}
	cancel()
	if p := b.get("/ui/"); p.status != http.StatusSeeOther {
		t.Errorf("80 minutes after the last request the page answers %d, want a redirect to sign in", p.status)
	}
}

// TestTitleMarksBidi: the value page's title names the path, and a path is made of keys an agent wrote. The
// <h1> shows a bidirectional override as a mark, but <title> (the tab and window title, the history menu) carried
// it raw, so "/notes/\u202Etxt.exe" reads reversed there.
func TestTitleMarksBidi(t *testing.T) {
	e := newEnv(t, true, false)
	ctx := context.Background()
	shop, _ := e.dir.Open(ctx, "shop")
	if _, err := shop.Put(ctx, "notes", []byte(`{"a\u202Eexe.txt":1}`), writeAdmin()); err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	b.signIn(ritaToken)
	p := b.get("/ui/db/shop/value?at=main&path=" + url.QueryEscape("/notes/a\u202Eexe.txt"))
	if p.status != 200 {
		t.Fatalf("%d\n%s", p.status, p.body)
	}
	title := regexp.MustCompile(`<title>(.*)</title>`).FindStringSubmatch(p.body)
	if title == nil || strings.Contains(title[1], "\u202E") {
		t.Errorf("the page's title carries the bidirectional override raw: %q", title)
	}
}

// TestChangeCutAtCharacter: the change a plan keeps is shown cut past 64 KiB; the cut fell inside a
// character, which the page then showed as bytes that are not UTF-8 (⟨0xC3⟩), as if the agent had sent them.
func TestChangeCutAtCharacter(t *testing.T) {
	e := newEnv(t, true, false)
	for pad := range 2 {
		bob, _ := e.gate.As(e.settings.For("bob"))
		v, _ := bob.Open(context.Background(), "shop")
		val, _ := json.Marshal(strings.Repeat("x", pad) + strings.Repeat("é", 40_000))
		out, err := v.Write(context.Background(), gate.Change{Op: gate.OpPut, Resource: "notes", Value: val, Tool: "put"})
		if err != nil || out.Plan == nil {
			t.Fatalf("%+v %v", out, err)
		}
		b := e.browser()
		b.signIn(ritaToken)
		p := b.get("/ui/plans/shop/" + out.Plan.Plan.ID)
		if !strings.Contains(p.body, "cut: the change is larger than 64 KiB") {
			t.Fatalf("pad %d: the change is not cut", pad)
		}
		if m := regexp.MustCompile(`⟨0x[0-9A-F]{2}⟩`).FindString(p.body); m != "" {
			t.Errorf("pad %d: the cut change shows %s, a byte the agent never sent", pad, m)
		}
	}
}

// removalPlan puts orders as n orders, then has bob plan a put that keeps only the first: n-1 removes.
func removalPlan(t *testing.T, e *env, n int) string {
	t.Helper()
	ctx := context.Background()
	var items []string
	for i := range n {
		items = append(items, fmt.Sprintf(`{"id":%d}`, i))
	}
	shop, _ := e.dir.Open(ctx, "shop")
	if _, err := shop.Put(ctx, "orders", []byte("["+strings.Join(items, ",")+"]"), writeAdmin()); err != nil {
		t.Fatal(err)
	}
	bob, _ := e.gate.As(e.settings.For("bob"))
	v, _ := bob.Open(ctx, "shop")
	out, err := v.Write(ctx, gate.Change{Op: gate.OpPut, Resource: "orders", Value: json.RawMessage(`[{"id":0}]`), Tool: "put"})
	if err != nil || out.Plan == nil {
		t.Fatalf("put by bob: %+v %v, want a plan", out, err)
	}
	return out.Plan.Plan.ID
}

// TestQueueRemovesCount: the queue's Removes column says how many values a plan removes. A plan keeps the
// first 100 removed paths only, and the column showed the length of that list: a plan that removes 299 orders read
// "100: /orders/1, …" in the queue, and its page listed 100 paths with no sign that more follow.
func TestQueueRemovesCount(t *testing.T) {
	e := newEnv(t, true, false)
	id := removalPlan(t, e, 300)
	p := e.planState(id)
	if p.Counts.Removed != 299 {
		t.Fatalf("setup: the plan removes %d, want 299", p.Counts.Removed)
	}
	b := e.browser()
	b.signIn(ritaToken)
	q := b.get("/ui/plans").body
	if strings.Contains(q, "<td>100: ") || !strings.Contains(q, "299") {
		t.Errorf("the queue says how many values the plan removes wrong (it removes 299):\n%s", regexp.MustCompile(`(?s)<tbody>.*?</tbody>`).FindString(q))
	}
	pg := b.get("/ui/plans/shop/" + id).body
	removes := regexp.MustCompile(`(?s)<dt>Removes</dt><dd>(.*?)</dd>`).FindStringSubmatch(pg)
	if removes == nil || !strings.Contains(removes[1], "199 more") {
		t.Errorf("the plan's page lists its first 100 removed paths of 299 without saying 199 more follow: %.300s…", removes)
	}
}

// TestPlanCountsAtLeast: a plan's counts come from a diff stopped at 10,000 operations; for a plan that
// changes 10,500 prices the page said "10000 changed" as if exact (its note speaks only of the operations kept).
func TestPlanCountsAtLeast(t *testing.T) {
	e := newEnv(t, true, false)
	id := manyOpsPlan(t, e, 10_500)
	b := e.browser()
	b.signIn(ritaToken)
	pg := b.get("/ui/plans/shop/" + id).body
	counts := regexp.MustCompile(`(?s)<p class="counts">.*?</p>`).FindString(pg)
	if strings.Contains(counts, "10000 changed") && !strings.Contains(counts, "at least") {
		t.Errorf("the plan changes 10,500 values; its page says, as exact:\n%s", counts)
	}
}

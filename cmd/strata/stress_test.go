package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/itchyny/gojq"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/strata-db/strata/audit"
	"github.com/strata-db/strata/snapshots"
)

// The races review: one `strata serve` under eight agents, a reviewer on the review page, a subscriber and GC at
// once; then the invariants a user relies on.

const reviewRita = "rita-0123456789abcdefghijklmnopqrstuvwxyzAB"

func agentToken(i int) string { return fmt.Sprintf("agent%d-0123456789abcdefghijklmnopqrstuvwxyz", i) }

// stress collects what the test saw.
type stress struct {
	t      *testing.T
	ctx    context.Context
	mu     sync.Mutex
	fails  []string
	calls  map[string]int // principal tool → calls made
	shared []ack          // acknowledged writes on branch work and main
}

type ack struct {
	branch   string
	revision uint64
	path     string
	value    int
}

func (s *stress) failf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.fails) < 40 {
		s.fails = append(s.fails, fmt.Sprintf(format, args...))
	}
}

type stressAgent struct {
	s     *stress
	name  string
	cs    *mcpsdk.ClientSession
	model map[uint64]any // revision → the document r<i> at it (on w<i>)
	head  uint64         // head of w<i>
}

// call calls a tool and returns its data; code is the error code ("" for success).
func (a *stressAgent) call(tool string, args map[string]any) (map[string]any, string, string) {
	a.s.mu.Lock()
	a.s.calls[a.name+" "+tool]++
	a.s.mu.Unlock()
	b, _ := json.Marshal(args)
	res, err := a.cs.CallTool(a.s.ctx, &mcpsdk.CallToolParams{Name: tool, Arguments: json.RawMessage(b)})
	if err != nil {
		a.s.failf("%s %s %s: protocol error %v", a.name, tool, b, err)
		return nil, "PROTOCOL", ""
	}
	text := res.Content[0].(*mcpsdk.TextContent).Text
	if res.IsError {
		code, _, _ := strings.Cut(text, ":")
		return nil, code, text
	}
	var m map[string]any
	sb, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(sb, &m)
	return m, "", text
}

// must calls a tool that may fail only with one of the codes allowed.
func (a *stressAgent) must(tool string, args map[string]any, allowed ...string) (map[string]any, string) {
	m, code, text := a.call(tool, args)
	if code != "" && !slices.Contains(allowed, code) {
		b, _ := json.Marshal(args)
		a.s.failf("%s %s %s: unexpected %s", a.name, tool, b, text)
	}
	return m, code
}

func num(m map[string]any, k string) uint64 {
	f, _ := m[k].(float64)
	return uint64(f)
}

func canon(v any) string {
	b, _ := json.Marshal(v)
	var x any
	json.Unmarshal(b, &x)
	b, _ = json.Marshal(x)
	return string(b)
}

func gojqRun(t *testing.T, program string, doc any) []any {
	q, err := gojq.Parse(program)
	if err != nil {
		t.Fatal(err)
	}
	var in any
	json.Unmarshal([]byte(canon(doc)), &in)
	var out []any
	it := q.Run(in)
	for {
		v, ok := it.Next()
		if !ok {
			break
		}
		if err, ok := v.(error); ok {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func (a *stressAgent) doc(k int) map[string]any {
	items := []any{}
	for j := 0; j < 3+k%5; j++ {
		items = append(items, map[string]any{"id": j, "v": (j * (k + 1)) % 7})
	}
	return map[string]any{"items": items, "n": k}
}

// ownWrite writes r<i> on w<i> with put, update or patch, with expected_head.
func (a *stressAgent) ownWrite(i, k int) {
	res := "r" + a.name[len("agent"):]
	br := "w" + a.name[len("agent"):]
	var args map[string]any
	doc := a.doc(k)
	prev := a.model[a.head]
	switch k % 3 {
	case 0:
		args = map[string]any{"database": "shop", "resource": res, "value": doc, "branch": br, "expected_head": a.head}
	case 1:
		doc = cloneDoc(prev)
		doc["n"] = k
		args = map[string]any{"database": "shop", "resource": res, "path": "/n", "value": k, "branch": br, "expected_head": a.head}
	case 2:
		doc = cloneDoc(prev)
		doc["n"] = k
		items := doc["items"].([]any)
		doc["items"] = append(items, map[string]any{"id": len(items), "v": k % 7})
		args = map[string]any{"database": "shop", "resource": res, "branch": br, "expected_head": a.head, "operations": []any{
			map[string]any{"op": "replace", "path": "/n", "value": k},
			map[string]any{"op": "add", "path": "/items/-", "value": map[string]any{"id": len(items), "v": k % 7}}}}
	}
	tool := []string{"put", "update", "patch"}[k%3]
	m, code := a.must(tool, args)
	if code != "" {
		return
	}
	rev := num(m, "revision")
	if rev <= a.head {
		a.s.failf("%s %s: revision %d does not advance head %d", a.name, tool, rev, a.head)
	}
	a.head = rev
	a.model[rev] = doc
}

func cloneDoc(v any) map[string]any {
	var m map[string]any
	json.Unmarshal([]byte(canon(v)), &m)
	return m
}

// sharedWrite updates /a<i> of resource shared on branch (work or main) with expected_head, retrying on CONFLICT.
func (a *stressAgent) sharedWrite(branch string, k int) {
	for try := 0; try < 5; try++ {
		m, code := a.must("read", map[string]any{"database": "shop", "resource": "shared", "branch": branch})
		if code != "" {
			return
		}
		head := num(m, "revision")
		m, code = a.must("update", map[string]any{"database": "shop", "resource": "shared", "path": "/" + a.name, "value": k,
			"branch": branch, "expected_head": head}, "CONFLICT")
		if code == "CONFLICT" {
			continue
		}
		if m["plan_id"] != nil {
			a.applyPlan(m["plan_id"].(string), "/"+a.name, k)
			return
		}
		rev := num(m, "revision")
		if rev <= head {
			a.s.failf("%s update shared: revision %d not after expected head %d", a.name, rev, head)
		}
		a.s.mu.Lock()
		a.s.shared = append(a.s.shared, ack{branch, rev, "/" + a.name, k})
		a.s.mu.Unlock()
		return
	}
}

func (a *stressAgent) applyPlan(id, path string, k int) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		m, code := a.must("apply_plan", map[string]any{"plan_id": id}, "CONFIRMATION_REQUIRED", "PLAN_CHANGED", "CONFLICT")
		switch code {
		case "CONFIRMATION_REQUIRED":
			time.Sleep(20 * time.Millisecond)
			continue
		case "":
			a.s.mu.Lock()
			a.s.shared = append(a.s.shared, ack{"main", num(m, "revision"), path, k})
			a.s.mu.Unlock()
		}
		return
	}
	a.s.failf("%s: plan %s never approved", a.name, id)
}

// idemWrite sends one write twice at once with the same idempotency_key: one revision, once in history.
func (a *stressAgent) idemWrite(k int) {
	n := a.name[len("agent"):]
	doc := cloneDoc(a.model[a.head])
	doc["n"] = 1000 + k
	args := map[string]any{"database": "shop", "resource": "r" + n, "path": "/n", "value": 1000 + k, "branch": "w" + n,
		"idempotency_key": fmt.Sprintf("idem-%s-%d", n, k)}
	var wg sync.WaitGroup
	res := make([]map[string]any, 2)
	for j := range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); res[j], _ = a.must("update", args) }()
	}
	wg.Wait()
	if res[0] == nil || res[1] == nil {
		return
	}
	r0, r1 := num(res[0], "revision"), num(res[1], "revision")
	if r0 != r1 || res[0]["replayed"] == res[1]["replayed"] {
		a.s.failf("%s: one write sent twice with one idempotency_key: revisions %d and %d, replayed %v and %v", a.name, r0, r1, res[0]["replayed"], res[1]["replayed"])
	}
	if r0 > a.head {
		a.head = r0
		a.model[r0] = doc
	}
	if r1 > a.head {
		a.head = r1
		a.model[r1] = doc
	}
}

// branchWork: a temporary branch off w<i>, a change on it, promoted into w<i> (fast forward), deleted.
func (a *stressAgent) branchWork(k int) {
	n := a.name[len("agent"):]
	tmp := fmt.Sprintf("t%s-%d", n, k)
	if _, code := a.must("create_branch", map[string]any{"database": "shop", "name": tmp, "from_branch": "w" + n}); code != "" {
		return
	}
	doc := cloneDoc(a.model[a.head])
	doc["tmp"] = k
	m, code := a.must("patch", map[string]any{"database": "shop", "resource": "r" + n, "branch": tmp,
		"operations": []any{map[string]any{"op": "add", "path": "/tmp", "value": k}}})
	if code != "" {
		return
	}
	trev := num(m, "revision")
	m, code = a.must("promote", map[string]any{"database": "shop", "branch": tmp, "into": "w" + n, "expected_head": a.head})
	if code == "" {
		rev := num(m, "revision")
		// A fast-forward still makes a revision on into (docs/design.md), merging t's.
		if rev <= a.head || m["fast_forward"] != true || num(m, "merged") != trev {
			a.s.failf("%s promote %s: %v, want a fast forward bringing %d", a.name, tmp, m, trev)
		}
		a.head = rev
		a.model[rev] = doc
	}
	a.must("delete_branch", map[string]any{"database": "shop", "name": tmp})
}

// reads checks reads, queries (with paging), history, path_history and diff at a fixed earlier revision.
func (a *stressAgent) reads(rng *rand.Rand) {
	n := a.name[len("agent"):]
	revs := make([]uint64, 0, len(a.model))
	for r := range a.model {
		revs = append(revs, r)
	}
	slices.Sort(revs)
	rev := revs[rng.Intn(len(revs))]
	want := a.model[rev]
	for range 2 {
		m, code := a.must("read", map[string]any{"database": "shop", "resource": "r" + n, "revision": rev})
		if code == "" && canon(m["value"]) != canon(want) {
			a.s.failf("%s read r%s at %d: %s, want %s", a.name, n, rev, canon(m["value"]), canon(want))
		}
	}
	prog := `.items[] | select(.v % 2 == 0) | {id, v, n: $doc.n}`
	full := `. as $doc | ` + prog
	wantQ := gojqRun(a.s.t, full, want)
	var got []any
	cursor := ""
	for page := 0; page < 20; page++ {
		args := map[string]any{"database": "shop", "resource": "r" + n, "query": full, "revision": rev, "limit": 2}
		if cursor != "" {
			args = map[string]any{"database": "shop", "resource": "r" + n, "query": full, "revision": rev, "limit": 2, "cursor": cursor}
		}
		m, code := a.must("query", args)
		if code != "" {
			return
		}
		if num(m, "revision") != rev {
			a.s.failf("%s query at %d answered revision %d", a.name, rev, num(m, "revision"))
		}
		got = append(got, m["results"].([]any)...)
		cursor, _ = m["next_cursor"].(string)
		if m["more"] != true {
			break
		}
	}
	if canon(got) != canon(wantQ) && !(len(got) == 0 && len(wantQ) == 0) {
		a.s.failf("%s query at %d: %s, gojq says %s", a.name, rev, canon(got), canon(wantQ))
	}
	// The whole database at a revision of main: twice the same.
	m1, c1 := a.must("query", map[string]any{"database": "shop", "query": "[keys[], (.shared | keys)]", "branch": "main"})
	if c1 == "" {
		r := num(m1, "revision")
		m2, c2 := a.must("query", map[string]any{"database": "shop", "query": "[keys[], (.shared | keys)]", "revision": r})
		if c2 == "" && canon(m1["results"]) != canon(m2["results"]) {
			a.s.failf("%s query of main at %d: %s then %s", a.name, r, canon(m1["results"]), canon(m2["results"]))
		}
	}
	a.must("history", map[string]any{"database": "shop", "branch": "w" + n, "resource": "r" + n, "limit": 5})
	a.must("path_history", map[string]any{"database": "shop", "branch": "w" + n, "resource": "r" + n, "path": "/n", "limit": 5})
	from := revs[rng.Intn(len(revs))]
	d1, c := a.must("diff", map[string]any{"database": "shop", "resource": "r" + n, "from_revision": from, "to_revision": rev})
	if c == "" {
		d2, _ := a.must("diff", map[string]any{"database": "shop", "resource": "r" + n, "from_revision": from, "to_revision": rev})
		if canon(d1) != canon(d2) {
			a.s.failf("%s diff %d..%d differs between calls", a.name, from, rev)
		}
	}
	a.must("history", map[string]any{"database": "shop", "branch": "work", "limit": 10})
	// Programs that build modified values must not change what a plain read of the revision sees.
	a.must("query", map[string]any{"database": "shop", "resource": "r" + n, "query": `del(.items[0]) | .items[0].v = 99 | .n = "x"`, "revision": rev})
	m, code := a.must("query", map[string]any{"database": "shop", "resource": "r" + n, "query": ".", "revision": rev})
	if code == "" && canon(m["results"]) != canon([]any{want}) {
		a.s.failf("%s query . at %d after a modifying program: %s, want %s", a.name, rev, canon(m["results"]), canon(want))
	}
}

// TestRacesStress runs one strata serve under eight agents, a reviewer on the review page, GC and a metrics
// scraper at once (run it with -race), and checks what users rely on: every acknowledged write in history exactly
// once, stable reads at a revision, query results equal to gojq's over the model, one audit record per call, no
// unexpected error codes, no goroutines left. It takes 10-20 s under -race on two cores, so it runs with
// STRATA_LONG set.
func TestRacesStress(t *testing.T) {
	if os.Getenv("STRATA_LONG") == "" {
		t.Skip("a long test: set STRATA_LONG=1 to run it")
	}
	baseline := runtime.NumGoroutine()
	start := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	var clockMu sync.Mutex
	clock := start
	e := &environment{getenv: func(string) string { return "" }, user: func() string { return "ada" },
		now: func() time.Time {
			clockMu.Lock()
			defer clockMu.Unlock()
			clock = clock.Add(time.Millisecond)
			return clock
		}, loc: time.UTC, terminal: func(io.Writer) bool { return false }}
	s0 := &session{t: t, e: e, data: t.TempDir()}
	s0.must("", "db", "create", "shop")
	s0.must(`{"agent0":-1,"agent1":-1,"agent2":-1,"agent3":-1,"agent4":-1,"agent5":-1,"agent6":-1,"agent7":-1}`, "import", "shop", "shared", "-")
	for i := range 8 {
		s0.must(`{"items":[],"n":-1}`, "import", "shop", fmt.Sprintf("r%d", i), "-")
	}
	s0.must("", "branch", "shop", "work")
	for i := range 8 {
		s0.must("", "branch", "shop", fmt.Sprintf("w%d", i))
	}
	lines := []string{"rita " + reviewRita}
	for i := range 8 {
		lines = append(lines, fmt.Sprintf("agent%d %s", i, agentToken(i)))
	}
	cfg := writeFile(t, "strata.json", `{"writes":"branches","rate_limit":{"calls_per_second":100000,"burst":100000},"principals":{"rita":{"review":true}}}`, 0o600)
	sv := startServe(t, s0, "--config", cfg, "--token-file", tokenFile(t, lines...), "--metrics-listen", "127.0.0.1:0")
	base := strings.TrimSuffix(sv.url, "/mcp")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st := &stress{t: t, ctx: ctx, calls: map[string]int{}}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()

	// The subscriber: agent7's session subscribes to shared on main and the log.
	var notified atomic.Int64
	agents := make([]*stressAgent, 8)
	for i := range 8 {
		var opts *mcpsdk.ClientOptions
		if i == 7 {
			opts = &mcpsdk.ClientOptions{ResourceUpdatedHandler: func(context.Context, *mcpsdk.ResourceUpdatedNotificationRequest) {
				notified.Add(1)
			}}
		}
		client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "stress", Version: "1"}, opts)
		cs, err := client.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: sv.url,
			HTTPClient: &http.Client{Transport: &bearerTransport{token: agentToken(i), base: tr}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		a := &stressAgent{s: st, name: fmt.Sprintf("agent%d", i), cs: cs, model: map[uint64]any{}}
		m, code, text := a.call("read", map[string]any{"database": "shop", "resource": fmt.Sprintf("r%d", i), "branch": fmt.Sprintf("w%d", i)})
		if code != "" {
			t.Fatal(text)
		}
		a.head = num(m, "revision")
		a.model[a.head] = m["value"]
		agents[i] = a
	}
	for _, uri := range []string{"strata://shop/shared", "strata://shop/log"} {
		st.mu.Lock()
		st.calls["agent7 subscriptions/listen"]++ // the go-sdk client subscribes by subscriptions/listen
		st.mu.Unlock()
		if err := agents[7].cs.Subscribe(ctx, &mcpsdk.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
	}

	stop := make(chan struct{})
	var bg sync.WaitGroup
	// The reviewer: signed in on the review page, approving every pending plan it finds, reading pages.
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var pages atomic.Int64
	get := func(path string) (int, string) {
		pages.Add(1)
		res, err := hc.Get(base + path)
		if err != nil {
			st.failf("GET %s: %v", path, err)
			return 0, ""
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	post := func(path string, form url.Values) int {
		pages.Add(1)
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		res, err := hc.Do(req)
		if err != nil {
			st.failf("POST %s: %v", path, err)
			return 0
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	if code := post("/ui/login", url.Values{"token": {reviewRita}, "next": {"/ui/plans"}}); code != http.StatusSeeOther {
		t.Fatalf("sign in: %d", code)
	}
	pages.Add(-1) // sign-in is not a page call of a principal… counted below separately if audited
	csrfRE := regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	planRE := regexp.MustCompile(`/ui/plans/shop/([A-Za-z0-9_-]+)`)
	var approved atomic.Int64
	bg.Add(1)
	go func() {
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			code, body := get("/ui/plans")
			if code != 200 {
				st.failf("/ui/plans: %d %.300s", code, body)
				continue
			}
			csrf := csrfRE.FindStringSubmatch(body)
			seen := map[string]bool{}
			for _, m := range planRE.FindAllStringSubmatch(body, -1) {
				if seen[m[1]] || csrf == nil {
					continue
				}
				seen[m[1]] = true
				if c := post("/ui/plans/shop/"+m[1]+"/approve", url.Values{"csrf": {csrf[1]}}); c == http.StatusSeeOther {
					approved.Add(1)
				}
			}
			for _, p := range []string{"/ui/", "/ui/db/shop", "/ui/db/shop/history", "/ui/audit", "/ui/db/shop/diff?from=work&to=main"} {
				if code, body := get(p); code != 200 {
					st.failf("%s: %d %.300s", p, code, body)
				}
			}
		}
	}()
	// The live queue.
	var events atomic.Int64
	evctx, evcancel := context.WithCancel(ctx)
	bg.Add(1)
	go func() {
		defer bg.Done()
		req, _ := http.NewRequestWithContext(evctx, http.MethodGet, base+"/ui/events", nil)
		res, err := hc.Do(req)
		if err != nil {
			st.failf("/ui/events: %v", err)
			return
		}
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "event: ") {
				events.Add(1)
			}
		}
	}()
	// Prometheus, scraped all along.
	metricsRE := regexp.MustCompile(`metrics at (http://\S+/metrics)`)
	var metricsURL string
	for dl := time.Now().Add(5 * time.Second); metricsURL == "" && time.Now().Before(dl); time.Sleep(10 * time.Millisecond) {
		if m := metricsRE.FindStringSubmatch(sv.stderr.String()); m != nil {
			metricsURL = m[1]
		}
	}
	if metricsURL == "" {
		t.Fatalf("no metrics address in %s", sv.stderr.String())
	}
	var scrapes atomic.Int64
	bg.Add(1)
	go func() {
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(30 * time.Millisecond):
			}
			res, err := hc.Get(metricsURL)
			if err != nil {
				st.failf("metrics: %v", err)
				return
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != 200 {
				st.failf("metrics: %d %.200s", res.StatusCode, b)
			}
			scrapes.Add(1)
		}
	}()
	// GC, as `strata gc` in this process, again and again.
	var gcs atomic.Int64
	bg.Add(1)
	go func() {
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			out, errOut, code := s0.run("", "gc", "shop", "--grace", "1ms")
			if code != 0 {
				st.failf("gc: exit %d: %s %s", code, out, errOut)
				return
			}
			gcs.Add(1)
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()

	var wg sync.WaitGroup
	for i, a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(i)))
			for k := 0; k < 4; k++ {
				a.ownWrite(i, k)
				a.sharedWrite("work", k)
				if k%3 == 2 {
					a.branchWork(k)
				}
				if k%3 == 1 {
					a.idemWrite(k)
				}
				a.reads(rng)
				if k%3 == 0 {
					a.sharedWrite("main", k)
				}
			}
		}()
	}
	wg.Wait()
	// The subscriber saw main change (plans applied to it).
	deadline := time.Now().Add(5 * time.Second)
	for notified.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	evcancel()
	bg.Wait()
	for _, a := range agents {
		a.cs.Close()
	}
	t.Logf("approved %d plans, %d events, %d notifications, %d gc runs, %d page calls, %d scrapes", approved.Load(), events.Load(), notified.Load(), gcs.Load(), pages.Load(), scrapes.Load())
	if notified.Load() == 0 {
		st.failf("no resources/updated notification though main changed")
	}
	if err := sv.stop(); err != nil {
		t.Fatal(err)
	}
	tr.CloseIdleConnections()
	for _, f := range st.fails {
		t.Error(f)
	}

	// Every acknowledged write is in its branch's history exactly once, with the value written.
	d, err := snapshots.OpenDir(s0.data, nil)
	if err != nil {
		t.Fatal(err)
	}
	db, err := d.Open(context.Background(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	chain := func(branch string) map[uint64]int {
		out := map[uint64]int{}
		q := snapshots.HistoryQuery{Branch: branch, Limit: 1000}
		for {
			page, err := db.History(context.Background(), q)
			if err != nil {
				t.Fatalf("history of %s: %v", branch, err)
			}
			for _, r := range page.Revisions {
				out[r.Number]++
			}
			if page.Next == 0 {
				return out
			}
			q.Before, q.Head = page.Next, page.Head
		}
	}
	chains := map[string]map[uint64]int{"work": chain("work"), "main": chain("main")}
	for _, a := range agents {
		br := "w" + a.name[len("agent"):]
		c := chain(br)
		for r := range a.model {
			if c[r] != 1 {
				t.Errorf("%s: revision %d of %s is in its history %d times", a.name, r, br, c[r])
			}
		}
	}
	for _, w := range st.shared {
		if chains[w.branch][w.revision] != 1 {
			t.Errorf("acknowledged %v is in %s's history %d times", w, w.branch, chains[w.branch][w.revision])
			continue
		}
		out, errOut, code := s0.run("", "get", "shop", "shared"+w.path, "--at", fmt.Sprint(w.revision))
		if code != 0 || strings.TrimSpace(out) != fmt.Sprint(w.value) {
			t.Errorf("acknowledged %v: the revision holds %q (%s)", w, out, errOut)
		}
	}
	d.Close()

	// The audit log verifies and has one record per call.
	sum, err := audit.VerifyLog(audit.PathIn(s0.data), nil)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	got := map[string]int{}
	ritas := 0
	audit.ReadLog(audit.PathIn(s0.data), audit.Filter{}, func(r audit.Record) error {
		if r.Principal == "rita" {
			ritas++
		}
		if r.Transport == audit.TransportHTTP && strings.HasPrefix(r.Principal, "agent") {
			got[r.Principal+" "+r.Tool]++
		}
		return nil
	})
	if !reflect.DeepEqual(got, st.calls) {
		for k := range st.calls {
			if got[k] != st.calls[k] {
				t.Errorf("audit: %s: %d records, %d calls", k, got[k], st.calls[k])
			}
		}
		for k := range got {
			if _, ok := st.calls[k]; !ok {
				t.Errorf("audit: %s: %d records, no calls", k, got[k])
			}
		}
	}
	t.Logf("audit log: %d records", sum.Records)
	// The review page: one record per page and form (the events stream included), the sign-in's too.
	if want := int(pages.Load()) + 1 + 1; ritas != want {
		t.Errorf("audit: %d records of rita, %d page calls (sign-in and events included)", ritas, want)
	}

	// No goroutine outlives the server.
	deadline = time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > baseline+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > baseline+2 {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		os.WriteFile(os.TempDir()+"/races-goroutines.txt", buf, 0o644)
		t.Errorf("%d goroutines after shutdown, %d before (stacks in %s)", n, baseline, os.TempDir()+"/races-goroutines.txt")
	}
}

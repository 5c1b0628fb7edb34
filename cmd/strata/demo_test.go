package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// expectedStory works out, from the dataset alone and without the engine, what the demo must report.
type expectedStory struct {
	raised        int    // products in demoCategory: one replace each
	before, after string // the featured product's price before and after the agent's change
}

func expectStory(t *testing.T) expectedStory {
	t.Helper()
	var doc struct {
		Products []struct {
			Category string      `json:"category"`
			Price    json.Number `json:"price"`
		} `json:"products"`
	}
	if err := json.Unmarshal(catalogueJSON, &doc); err != nil {
		t.Fatal(err)
	}
	e := expectedStory{}
	for _, p := range doc.Products {
		if p.Category == demoCategory {
			e.raised++
		}
	}
	e.before = string(doc.Products[demoProductIndex].Price)
	// +10%, rounded half up to cents, in integer arithmetic.
	c, err := strconv.Atoi(strings.Replace(e.before, ".", "", 1))
	if err != nil || !strings.Contains(e.before, ".") || len(e.before)-strings.Index(e.before, ".") != 3 {
		t.Fatalf("featured price %q is not written with two decimals", e.before)
	}
	c = (c*11 + 5) / 10
	e.after = fmt.Sprintf("%d.%02d", c/100, c%100)
	return e
}

// demoTools are the tool calls of the story, in order.
var demoTools = []string{
	"read", "create_snapshot", "create_branch", "query", "patch", "update", "diff", "promote", "apply_plan",
	"read", "read", "read", "path_history", "bisect", "revert", "apply_plan", "read",
}

var (
	demoCallRE = regexp.MustCompile(`(?m)^\d+\. .*\n   → (\S+) `)
	// What changes from run to run: plan ids, times, durations.
	demoPlanRE = regexp.MustCompile(`plan-[a-z0-9]+`)
	demoTimeRE = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	demoMSRE   = regexp.MustCompile(`\d+(\.\d+)? ms`)
)

// newDemoSession is a session whose clock moves a second at each reading (the default minute would let the
// demo's plans expire between the call that makes one and apply_plan).
func newDemoSession(t *testing.T) *session {
	s := newSession(t, false, nil)
	clock := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	s.e.now = func() time.Time {
		clock = clock.Add(time.Second)
		return clock
	}
	return s
}

func normaliseDemo(s string) string {
	s = demoPlanRE.ReplaceAllString(s, "plan-ID")
	s = demoTimeRE.ReplaceAllString(s, "TIME")
	return demoMSRE.ReplaceAllString(s, "N ms")
}

// TestDemo runs `strata demo` twice through the command line and checks the story it tells, step by step, and the
// database it leaves.
func TestDemo(t *testing.T) {
	e := expectStory(t)
	s := newDemoSession(t)
	out := s.must("", "demo")
	t.Log("\n" + out)

	if !strings.Contains(out, `Created the database "demo"`) || strings.Contains(out, "Dropped") {
		t.Errorf("first run: the setup does not say it created the database:\n%s", out)
	}
	var tools []string
	for _, m := range demoCallRE.FindAllStringSubmatch(out, -1) {
		tools = append(tools, m[1])
	}
	if got, want := strings.Join(tools, " "), strings.Join(demoTools, " "); got != want {
		t.Fatalf("tool calls:\n got %s\nwant %s", got, want)
	}
	steps := splitDemoSteps(out)
	want := map[int][]string{
		2:  {"snapshot before-agent names revision 2"},
		3:  {"branch agent/tent-prices at revision 2"},
		4:  {fmt.Sprintf("%d results at revision 2", e.raised)},
		5:  {`"operations":[{"op":"replace"`, fmt.Sprintf("(%d prices replaced)", e.raised), "on agent/tent-prices"},
		6:  {"/discontinued", `"value":true`, "on agent/tent-prices"},
		7:  {fmt.Sprintf("%d replaced, 0 added, 0 removed", e.raised+1)},
		8:  {"← plan plan-", "nothing written", "confirmation required: true"},
		9:  {"? the client asks its user: Agent \"demo-agent\" asks to apply a change to database demo: promote agent/tent-prices into main", "the person reads it and confirms", "confirmed and committed: main is at revision 5"},
		10: {`"snapshot":"before-agent"`, "revision 2: " + e.before},
		11: {`"revision":2`, "revision 2: " + e.before},
		12: {"revision 5: " + e.after},
		13: {fmt.Sprintf("revision 5 by demo-agent: %s → %s", e.before, e.after)},
		14: {"first true at revision 5"},
		15: {"← plan plan-", "revert of main to before-agent", "nothing written"},
		16: {"? the client asks its user: Agent \"demo-agent\" asks to apply a change to database demo: revert", "the person reads it and confirms", "confirmed and committed: main is at revision 6"},
		17: {"revision 6: " + e.before},
	}
	for n, ws := range want {
		for _, w := range ws {
			if !strings.Contains(steps[n], w) {
				t.Errorf("step %d lacks %q:\n%s", n, w, steps[n])
			}
		}
	}
	// The plans' ids are used as they were given.
	if ids := demoPlanRE.FindAllString(steps[8], -1); len(ids) == 0 || !strings.Contains(steps[9], ids[0]) {
		t.Errorf("apply_plan does not apply the promote's plan:\n%s\n%s", steps[8], steps[9])
	}
	for _, w := range []string{"strata log demo", "strata diff demo before-agent main", "strata plans demo --all"} {
		if !strings.Contains(out, w) {
			t.Errorf("the end does not suggest %q", w)
		}
	}

	// The database it leaves: promoted, then reverted; the promoted state still readable.
	log := s.must("", "log", "demo")
	for _, w := range []string{"demo-agent", "promote", "revert", "strata demo"} {
		if !strings.Contains(log, w) {
			t.Errorf("strata log demo lacks %q:\n%s", w, log)
		}
	}
	price := fmt.Sprintf("catalogue/products/%d/price", demoProductIndex)
	if got := s.must("", "get", "demo", price); got != e.before+"\n" {
		t.Errorf("after the revert main has price %q, want %s", got, e.before)
	}
	if got := s.must("", "get", "demo", price, "--at", "5"); got != e.after+"\n" {
		t.Errorf("at the promotion the price is %q, want %s", got, e.after)
	}
	if got := s.must("", "diff", "demo", "before-agent", "main"); !strings.Contains(got, "no changes") {
		t.Errorf("diff before-agent main after the revert: %s", got)
	}
	if plans := s.must("", "plans", "demo", "--all"); strings.Count(plans, "applied") != 2 {
		t.Errorf("plans --all does not list two applied plans:\n%s", plans)
	}

	// Again: the demo's own database is made anew, and the story is the same.
	again := s.must("", "demo")
	if !strings.Contains(again, `Dropped the database "demo" an earlier strata demo made (6 revisions)`) {
		t.Errorf("second run: it does not say it dropped the earlier demo database:\n%s", again)
	}
	story := func(s string) string { return normaliseDemo(s[strings.Index(s, "\n1. "):]) }
	if a, b := story(out), story(again); a != b {
		t.Errorf("the second run told a different story:\n--- first\n%s\n--- second\n%s", a, b)
	}
	if got := s.must("", "get", "demo", price); got != e.before+"\n" {
		t.Errorf("after the second run main has price %q, want %s", got, e.before)
	}
}

// splitDemoSteps returns the text of each numbered step.
func splitDemoSteps(out string) map[int]string {
	steps := map[int]string{}
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if m := regexp.MustCompile(`^(\d+)\. `).FindStringSubmatch(l); m != nil {
			n, _ = strconv.Atoi(m[1])
		} else if l == "" {
			n = 0
		}
		if n > 0 {
			steps[n] += l + "\n"
		}
	}
	return steps
}

// TestDemoJSON: --json prints the transcript as JSON lines: setup, each call with its arguments and answer, the two
// confirmations, the end.
func TestDemoJSON(t *testing.T) {
	e := expectStory(t)
	s := newDemoSession(t)
	out := s.must("", "demo", "--json")
	var tools, events []string
	var confirms int
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev demoEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not a JSON line: %v\n%s", err, line)
		}
		events = append(events, ev.Event)
		switch ev.Event {
		case "call":
			tools = append(tools, ev.Tool)
			if len(ev.Arguments) == 0 || len(ev.Result) == 0 || ev.Summary == "" || ev.Narration == "" {
				t.Errorf("call %d (%s) lacks arguments, result, summary or narration: %s", ev.Step, ev.Tool, line)
			}
			if ev.Step == 12 {
				var r struct {
					Value json.RawMessage `json:"value"`
				}
				if err := json.Unmarshal(ev.Result, &r); err != nil || string(r.Value) != e.after {
					t.Errorf("step 12 read %s, want %s (exact number text)", r.Value, e.after)
				}
			}
		case "confirm":
			confirms++
			if ev.Answer != "accept" || !strings.Contains(ev.Question, "Apply it?") {
				t.Errorf("confirmation: %s", line)
			}
		}
	}
	if got, want := strings.Join(tools, " "), strings.Join(demoTools, " "); got != want {
		t.Fatalf("tool calls:\n got %s\nwant %s", got, want)
	}
	if confirms != 2 || events[0] != "setup" || events[len(events)-1] != "done" {
		t.Errorf("events %v, %d confirmations", events, confirms)
	}
}

// TestDemoRefusesForeignDatabase: a "demo" database the demo did not make is left alone.
func TestDemoRefusesForeignDatabase(t *testing.T) {
	s := newSession(t, false, nil)
	s.must("", "db", "create", "demo")
	s.must(`{"mine":true}`, "import", "demo", "notes", "-")
	out, errOut, code := s.run("", "demo")
	if code != exitConflict || !strings.Contains(errOut, "not made by strata demo") || !strings.Contains(errOut, "--data") || strings.Contains(out, "1. ") {
		t.Errorf("demo over someone's database: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := s.must("", "get", "demo", "notes"); got != `{"mine":true}`+"\n" {
		t.Errorf("the demo touched the database: %q", got)
	}
	if log := s.must("", "log", "demo"); strings.Count(log, "\n") != 2 {
		t.Errorf("the demo added revisions:\n%s", log)
	}
}

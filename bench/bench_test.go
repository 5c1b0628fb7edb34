package bench

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		in            []float64
		med, min, max float64
	}{
		{[]float64{5}, 5, 5, 5},
		{[]float64{3, 1, 2}, 2, 1, 3},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4},
		{[]float64{10, 10, 1, 100, 10}, 10, 1, 100},
	} {
		st := Summarize(tc.in)
		if st.Median != tc.med || st.Min != tc.min || st.Max != tc.max || st.Runs != len(tc.in) {
			t.Errorf("Summarize(%v) = %+v, want median %v, min %v, max %v", tc.in, st, tc.med, tc.min, tc.max)
		}
	}
	if st := Summarize(nil); st != (Stat{}) {
		t.Errorf("Summarize(nil) = %+v", st)
	}
	in := []float64{3, 1, 2}
	Summarize(in)
	if in[0] != 3 || in[1] != 1 {
		t.Error("Summarize sorted its argument")
	}
}

func TestFormatValue(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		unit string
		want string
	}{
		{0.0123, "ms", "12.3 µs"},
		{1.5, "ms", "1.50 ms"},
		{250, "ms", "250 ms"},
		{1500, "ms", "1.50 s"},
		{0.35, "x", "0.350×"},
		{106.4, "x", "106×"},
		{5632, "B", "5.50 KiB"},
		{150, "MB/s", "150 MB/s"},
	} {
		if got := FormatValue(tc.v, tc.unit); got != tc.want {
			t.Errorf("FormatValue(%v, %q) = %q, want %q", tc.v, tc.unit, got, tc.want)
		}
	}
	if got := cell(Summarize([]float64{1, 2, 3}), "ms"); got != "2.00 ms (1.00–3.00 ms)" {
		t.Errorf("cell = %q", got)
	}
	if got := cell(Summarize([]float64{0.5, 2}), "ms"); got != "1.25 ms (500 µs–2.00 ms)" {
		t.Errorf("cell across units = %q", got)
	}
	if got := cell(Summarize([]float64{7}), "x"); got != "7.00×" {
		t.Errorf("cell of one run = %q", got)
	}
}

// fakeReport is a report as Run would make it, without running anything.
func fakeReport() *Report {
	r := &Report{Started: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Machine: "test machine", N: []int{1000, 10000}, K: 100, Runs: 3,
		Systems: []string{"strata", "baseline", "git"}, Skipped: map[string]string{"dolt": "dolt not found on PATH"}}
	for _, n := range r.N {
		for _, m := range Metrics {
			for si, s := range r.Systems {
				if s != "strata" && (m.ID == "mcp" || m.ID == "jq-literal" || m.ID == "jq-after-commit") {
					continue
				}
				for run := 1; run <= 3; run++ {
					r.add(m.ID, s, n, float64((si+1)*run*n/1000))
				}
			}
		}
	}
	return r
}

func TestMarkdown(t *testing.T) {
	md := fakeReport().Markdown()
	lines := strings.Split(md, "\n")
	for _, want := range []string{"### N = 1,000", "### N = 10,000", "| metric | strata | baseline | git |", "Skipped: dolt (dolt not found on PATH).", "Machine: test machine"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	// Every metric has a row per N, with a cell per system (pipes in labels escaped).
	rows := 0
	for _, l := range lines {
		if !strings.HasPrefix(l, "| (") {
			continue
		}
		rows++
		cells := strings.Split(strings.ReplaceAll(l, `\|`, "¦"), "|")
		if len(cells) != 6 { // "", label, 3 systems, ""
			t.Errorf("row %q has %d cells", l, len(cells))
		}
	}
	if rows != 2*len(Metrics) {
		t.Errorf("%d metric rows, want %d", rows, 2*len(Metrics))
	}
	// Strata's commit at N=1,000: runs 1, 2, 3; baseline's: 2, 4, 6, so its ratio is 2.
	if !strings.Contains(md, "| (b) single-field commit, p50 of K | 2.00 ms (1.00–3.00 ms) | 4.00 ms (2.00–6.00 ms) ·2.00× |") {
		t.Errorf("commit row at N=1,000 not as expected:\n%s", md)
	}
	if !strings.Contains(md, `| (i) MCP round trip over pipes (as stdio), point read at K/2 | 2.00 ms (1.00–3.00 ms) | — | — |`) {
		t.Errorf("a figure a peer lacks is not a dash:\n%s", md)
	}
}

func TestJSONAndSVG(t *testing.T) {
	r := fakeReport()
	b, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var ms []map[string]any
	if err := json.Unmarshal(b, &ms); err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 {
		t.Fatal("no measurements")
	}
	for _, m := range ms {
		if len(m) != 6 || m["workload"] == "" || m["system"] == "" || m["n"] == nil || m["metric"] == "" || m["unit"] == "" {
			t.Fatalf("measurement %v", m)
		}
	}
	dir := t.TempDir()
	files, err := r.SVG(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(Metrics) {
		t.Errorf("%d charts, want %d", len(files), len(Metrics))
	}
	for _, f := range files {
		checkXML(t, f)
	}
	if _, err := os.Stat(filepath.Join(dir, "commit.svg")); err != nil {
		t.Error(err)
	}
}

func checkXML(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := xml.NewDecoder(f)
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
}

func TestWorkloadAnswers(t *testing.T) {
	w := newWorkload(1000, 100, 0)
	// Replaying the changes on the elements must agree with scoreAt, changedBetween and over90.
	elems := make([][]byte, len(w.doc.elems))
	copy(elems, w.doc.elems)
	for j, c := range w.changes {
		elems[c.i] = element(c.i, c.score)
		k := j + 1
		if err := w.checkElement(elems[c.i], k, c.i); err != nil {
			t.Fatal(err)
		}
	}
	n, err := diffElems(joinElems(w.doc.elems, false), joinElems(elems, true))
	if err != nil || n != w.changedBetween(0, 100) {
		t.Errorf("diffElems = %d, %v; changedBetween = %d", n, err, w.changedBetween(0, 100))
	}
	if got, err := gojqCount(t.Context(), joinElems(elems, false)); err != nil || got != w.over90(100) {
		t.Errorf("gojq counts %d (%v), over90 says %d", got, err, w.over90(100))
	}
	if string(joinElems(w.doc.elems, false)) != string(w.doc.json) || docSize(1000) != len(w.doc.json) {
		t.Error("joinElems or docSize disagree with the document")
	}
}

func TestReadJSON(t *testing.T) {
	r := fakeReport()
	b, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	// Split by N into two files, as two separate runs would write them, and merge them back.
	var ms []Measurement
	if err := json.Unmarshal(b, &ms); err != nil {
		t.Fatal(err)
	}
	var small, big []Measurement
	for _, m := range ms {
		if m.N == 1000 {
			small = append(small, m)
		} else {
			big = append(big, m)
		}
	}
	b1, _ := json.Marshal(small)
	b2, _ := json.Marshal(big)
	got, err := ReadJSON(b1, b2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.N) != 2 || got.N[0] != 1000 || len(got.Systems) != 3 || got.Runs != 3 {
		t.Fatalf("merged report: N %v, systems %v, runs %d", got.N, got.Systems, got.Runs)
	}
	for _, m := range Metrics {
		for _, s := range r.Systems {
			a, ok1 := r.Stat(m.ID, s, 10000)
			c, ok2 := got.Stat(m.ID, s, 10000)
			if ok1 != ok2 || a != c {
				t.Errorf("%s %s: %+v vs %+v", m.ID, s, a, c)
			}
		}
	}
}

// TestConcurrentCommits: (j) runs as many commits as fit in ~30 s a phase, between 16 and 400 (64 with --quick),
// in whole rounds of 8 writers.
func TestConcurrentCommits(t *testing.T) {
	full, quick := &Options{}, &Options{Quick: true}
	for _, c := range []struct {
		o        *Options
		commitMs float64
		want     int
	}{
		{full, 1, 400}, {full, 100, 296}, {full, 3600, 16}, {full, 0, 16},
		{quick, 1, 64}, {quick, 1000, 24},
	} {
		if got := c.o.concurrentCommits(c.commitMs); got != c.want {
			t.Errorf("quick=%v, commit %v ms: %d commits, want %d", c.o.Quick, c.commitMs, got, c.want)
		}
	}
}

// Every system's turn starts after the disks are flushed of what the turn before wrote.
func TestSettleBeforeEachSystem(t *testing.T) {
	var log strings.Builder
	was := settle
	settle = func() { log.WriteString("settle\n") }
	defer func() { settle = was }()
	rep, err := Run(context.Background(), Options{N: []int{200}, Runs: 2, K: 3, Quick: true,
		Systems: []string{"strata", "baseline"}, TempDir: t.TempDir(), Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Notes) > 0 {
		t.Fatalf("notes: %q", rep.Notes)
	}
	var turns []string
	for _, l := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		if l == "settle" || strings.HasPrefix(l, "bench: N=200 run ") {
			turns = append(turns, l)
		}
	}
	want := []string{}
	for _, s := range []string{"1/2: strata", "1/2: baseline", "2/2: strata", "2/2: baseline"} {
		want = append(want, "bench: N=200 run "+s, "settle")
	}
	if strings.Join(turns, "\n") != strings.Join(want, "\n") {
		t.Errorf("steps and flushes:\n%s\nwant:\n%s", strings.Join(turns, "\n"), strings.Join(want, "\n"))
	}
}

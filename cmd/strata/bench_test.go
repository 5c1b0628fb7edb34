package main

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/bench"
	"github.com/strata-db/strata/internal/testenv"
)

// TestBenchQuick runs `strata bench --quick` as CI does: a smoke test that asserts the output's shape, not speed.
func TestBenchQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("the benchmark suite's smoke test takes about half a minute")
	}
	dir := t.TempDir()
	jsonFile, plots := filepath.Join(dir, "bench.json"), filepath.Join(dir, "plots")
	t0 := time.Now()
	code, out, errOut := runCLI(t, "bench", "--quick", "--json", jsonFile, "--plot", plots, "--tmp", dir)
	if code != exitOK {
		t.Fatalf("bench --quick: exit %d, stderr %q\n%s", code, errOut, out)
	}
	t.Logf("bench --quick took %v\n%s", time.Since(t0).Round(time.Millisecond), out)
	if errOut != "" {
		t.Errorf("stderr is not a terminal, yet bench wrote %q", errOut)
	}

	// The table: a header naming the systems measured, a row per metric, a cell per system; strata, the baseline
	// and git always measured; every other system either measured or noted as skipped.
	var header string
	rows := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "| metric |") {
			header = line
			continue
		}
		if strings.HasPrefix(line, "| (") {
			cells := splitRow(line)
			rows[cells[0]] = cells[1:]
		}
	}
	if !strings.Contains(out, "### N = 10,000") {
		t.Errorf("no table for N = 10,000:\n%s", out)
	}
	systems := splitRow(header)
	if len(systems) < 4 || systems[0] != "metric" || systems[1] != "strata" || systems[2] != "baseline" || systems[3] != "git" {
		t.Fatalf("header %q", header)
	}
	systems = systems[1:]
	for _, s := range bench.Systems {
		skipped := strings.Contains(out, "Skipped: "+s+" (")
		if !contains(systems, s) && !skipped {
			t.Errorf("%s is neither measured nor noted as skipped", s)
		}
		if skipped && testenv.CI() {
			// Under CI every peer is installed (.ci/run): one the suite skipped is a peer whose code did not run.
			_, why, _ := strings.Cut(out, "Skipped: "+s+" (")
			why, _, _ = strings.Cut(why, ").\n")
			t.Errorf("the benchmark suite skipped %s (%s), and CI is set: every peer must run in CI (.ci/run installs them)", s, why)
		}
	}
	if len(rows) != len(bench.Metrics) {
		t.Errorf("%d metric rows, want %d", len(rows), len(bench.Metrics))
	}
	for label, cells := range rows {
		if len(cells) != len(systems) {
			t.Errorf("row %q: %d cells for %d systems", label, len(cells), len(systems))
		}
	}
	for _, m := range bench.Metrics {
		label := strings.ReplaceAll(strings.ReplaceAll(m.Label, "N/2", "5000"), "|", `\|`)
		if m.HigherBetter {
			label += " ↑"
		}
		cells := rows[label]
		if cells == nil {
			t.Errorf("no row for %s (%q)", m.ID, m.Label)
			continue
		}
		if cells[0] == "—" || cells[0] == "" {
			t.Errorf("%s: strata has no figure", m.ID)
		}
		// Every peer listed in notMeasured gives every other figure (when it ran: SQLite and PostgreSQL may be
		// absent). The rest is Strata's, or needs what only bbolt or Strata has.
		for i, s := range systems {
			if notMeasured[s] != nil && !notMeasured[s][m.ID] && cells[i] == "—" {
				t.Errorf("%s: %s has no figure", m.ID, s)
			}
		}
	}

	// The JSON file: an array of {workload, system, n, metric, value, unit}.
	b, err := os.ReadFile(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var ms []struct {
		Workload string   `json:"workload"`
		System   string   `json:"system"`
		N        *int     `json:"n"`
		Metric   string   `json:"metric"`
		Value    *float64 `json:"value"`
		Unit     string   `json:"unit"`
	}
	if err := dec.Decode(&ms); err != nil {
		t.Fatalf("--json file: %v", err)
	}
	seen := map[string]bool{}
	for _, m := range ms {
		if m.Workload == "" || m.System == "" || m.N == nil || *m.N != 10_000 || m.Metric == "" || m.Value == nil || m.Unit == "" {
			t.Fatalf("measurement %+v", m)
		}
		seen[m.Workload+"/"+m.System+"/"+m.Metric] = true
	}
	for _, s := range []string{"strata", "baseline", "git"} {
		for _, w := range []string{"load", "commit", "disk", "snapshot", "branch", "read-old", "diff", "materialise", "jq"} {
			for _, metric := range []string{"median", "min", "max", "run"} {
				if !seen[w+"/"+s+"/"+metric] {
					t.Errorf("--json file lacks %s %s %s", w, s, metric)
				}
			}
		}
	}

	// The charts parse as XML.
	svgs, err := filepath.Glob(filepath.Join(plots, "*.svg"))
	if err != nil || len(svgs) < 10 {
		t.Fatalf("%d charts in %s (%v)", len(svgs), plots, err)
	}
	for _, p := range svgs {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		d := xml.NewDecoder(f)
		for {
			if _, err := d.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
		}
		f.Close()
	}
}

// notMeasured are the figures a system has no way to give.
var notMeasured = map[string]map[string]bool{
	"baseline": {"mcp": true, "jq-literal": true, "jq-after-commit": true},
	"git":      {"mcp": true, "jq-literal": true, "jq-after-commit": true, "new-bytes": true, "disk-used": true, "concurrent": true, "materialise-values": true},
	"sqlite":   {"mcp": true, "jq-literal": true, "jq-after-commit": true, "new-bytes": true, "disk-used": true, "materialise-values": true},
	"postgres": {"mcp": true, "jq-literal": true, "jq-after-commit": true, "new-bytes": true, "disk-used": true, "materialise-values": true},
}

// splitRow returns a markdown table row's cells, trimmed (escaped pipes kept inside their cell).
func splitRow(line string) []string {
	line = strings.ReplaceAll(line, `\|`, "\x00")
	parts := strings.Split(strings.Trim(line, "|"), "|")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.TrimSpace(p), "\x00", `\|`)
	}
	return parts
}

func TestBenchUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--systems", "oracle"}, `unknown system "oracle"`},
		{[]string{"bench", "--n", "0"}, "a size must be at least 1"},
		{[]string{"bench", "extra"}, "usage: strata bench"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q, want %q", tc.args, code, errOut, tc.want)
		}
	}
}

package bench

import (
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// SystemLabels are the systems' names in tables and charts.
var SystemLabels = map[string]string{
	"strata":    "Strata",
	"baseline":  "baseline (full copy per revision in bbolt)",
	"git":       "git (file per commit)",
	"sqlite":    "SQLite (history table, WAL, synchronous=FULL)",
	"postgres":  "PostgreSQL (jsonb history table)",
	"strata-pg": "Strata on PostgreSQL (the same library, --data postgres://…)",
	"dolt":      "Dolt (whole document in one JSON column)",
	"dolt-rows": "Dolt (one table row per element)",
}

// FormatValue renders a value in its unit: times in µs, ms or s; rates and ratios with three significant digits.
func FormatValue(v float64, unit string) string {
	switch unit {
	case "ms":
		switch {
		case v < 1:
			return sig(v*1000) + " µs"
		case v < 1000:
			return sig(v) + " ms"
		default:
			return sig(v/1000) + " s"
		}
	case "x":
		return sig(v) + "×"
	case "B":
		switch {
		case v < 1024:
			return sig(v) + " B"
		case v < 1<<20:
			return sig(v/1024) + " KiB"
		default:
			return sig(v/(1<<20)) + " MiB"
		}
	}
	return sig(v) + " " + unit
}

// sig formats with three significant digits (and no exponent).
func sig(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	case a >= 0.1:
		return fmt.Sprintf("%.3f", v)
	default:
		return fmt.Sprintf("%.2g", v)
	}
}

// cell renders a figure: median (min–max over the runs).
func cell(st Stat, unit string) string {
	if st.Runs <= 1 || st.Min == st.Max {
		return FormatValue(st.Median, unit)
	}
	lo, hi := FormatValue(st.Min, unit), FormatValue(st.Max, unit)
	// One unit for the range when both ends have it: "1.2–3.4 ms".
	if i, j := strings.LastIndexByte(lo, ' '), strings.LastIndexByte(hi, ' '); i > 0 && j > 0 && lo[i:] == hi[j:] {
		lo = lo[:i]
	} else if strings.HasSuffix(lo, "×") && strings.HasSuffix(hi, "×") {
		lo = strings.TrimSuffix(lo, "×")
	}
	return fmt.Sprintf("%s (%s–%s)", FormatValue(st.Median, unit), lo, hi)
}

// escapeCell makes text safe inside a markdown table cell.
func escapeCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// Markdown renders a table per N: a row per metric, a column per system; each peer's cell ends with its ratio to
// Strata (peer ÷ Strata: above 1 is slower or bigger, except on rows where higher is better).
func (r *Report) Markdown() string {
	var b strings.Builder
	if !r.Started.IsZero() {
		fmt.Fprintf(&b, "Strata benchmark suite: %s\n\n", r.Started.UTC().Format("2006-01-02 15:04 MST"))
	}
	if r.Machine != "" {
		fmt.Fprintf(&b, "Machine: %s\n\n", r.Machine)
	}
	k, upTo := "K", "up to "
	if r.K > 0 {
		k, upTo = fmt.Sprintf("K = %d", r.K), ""
	}
	durable := "Every commit is durable (fsync)."
	if slices.ContainsFunc(r.Systems, func(s string) bool { return strings.HasPrefix(s, "dolt") }) {
		durable = "Every commit is durable (fsync), except Dolt's: 0.40.4 renames its files into place without an fsync."
	}
	fmt.Fprintf(&b, "%s single-field revisions after the load; each figure is the median of %s%d run%s (min–max over the runs); "+
		"within a run, a repeated operation counts its median. %s "+
		"Cells of peers end with ·N×: the peer's median over Strata's (rows marked ↑: higher is better).\n\n", k, upTo, r.Runs, plural(r.Runs), durable)
	for _, n := range r.N {
		fmt.Fprintf(&b, "### N = %s", thousands(n))
		if d, ok := r.Duration[n]; ok {
			fmt.Fprintf(&b, " (%s of JSON; this size took %s)", FormatValue(float64(docSize(n)), "B"), d.Round(1e8))
		}
		b.WriteString("\n\n| metric |")
		for _, s := range r.Systems {
			fmt.Fprintf(&b, " %s |", s)
		}
		b.WriteString("\n|---|")
		for range r.Systems {
			b.WriteString("---|")
		}
		b.WriteString("\n")
		for _, m := range Metrics {
			label := strings.ReplaceAll(m.Label, "N/2", itoa(n/2))
			if m.HigherBetter {
				label += " ↑"
			}
			fmt.Fprintf(&b, "| %s |", escapeCell(label))
			base, hasBase := r.Stat(m.ID, "strata", n)
			for _, s := range r.Systems {
				st, ok := r.Stat(m.ID, s, n)
				if !ok {
					b.WriteString(" — |")
					continue
				}
				c := cell(st, m.Unit)
				if s != "strata" && hasBase && base.Median > 0 {
					c += fmt.Sprintf(" ·%s×", sig(st.Median/base.Median))
				}
				fmt.Fprintf(&b, " %s |", c)
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	b.WriteString("Systems: ")
	for i, s := range r.Systems {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s = %s", s, SystemLabels[s])
	}
	b.WriteString(".\n")
	for _, s := range Systems {
		if why, ok := r.Skipped[s]; ok {
			fmt.Fprintf(&b, "\nSkipped: %s (%s).\n", s, why)
		}
	}
	for _, note := range r.Notes {
		fmt.Fprintf(&b, "\n%s\n", note)
	}
	return b.String()
}

// docSize is the size of the compact JSON of the document of n elements.
func docSize(n int) int {
	size := 2 + max(n-1, 0)
	for i := 0; i < n; i++ {
		size += len(element(i, i%100))
	}
	return size
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func thousands(n int) string {
	s := itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// JSON returns every measurement (Measurements) as a JSON array.
func (r *Report) JSON() ([]byte, error) {
	ms := r.Measurements()
	if ms == nil {
		ms = []Measurement{}
	}
	return json.MarshalIndent(ms, "", " ")
}

// SVG writes a chart per metric into dir (made if missing): the metric against N, both axes logarithmic, a line
// per system. It returns the files written.
func (r *Report) SVG(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, m := range Metrics {
		svg, ok := r.chart(m)
		if !ok {
			continue
		}
		p := filepath.Join(dir, m.ID+".svg")
		if err := os.WriteFile(p, []byte(svg), 0o644); err != nil {
			return files, err
		}
		files = append(files, p)
	}
	return files, nil
}

var palette = map[string]string{
	"strata": "#d62728", "baseline": "#1f77b4", "git": "#ff7f0e", "sqlite": "#2ca02c", "postgres": "#9467bd", "strata-pg": "#bcbd22", "dolt": "#8c564b", "dolt-rows": "#e377c2",
}

// chart draws one metric. Values that are not positive are left out (log axes).
func (r *Report) chart(m Metric) (string, bool) {
	type pt struct{ x, y float64 }
	series := map[string][]pt{}
	var xs, ys []float64
	for _, s := range r.Systems {
		for _, n := range r.N {
			st, ok := r.Stat(m.ID, s, n)
			if !ok || st.Median <= 0 {
				continue
			}
			series[s] = append(series[s], pt{float64(n), st.Median})
			xs = append(xs, float64(n))
			ys = append(ys, st.Median, st.Min, st.Max)
		}
	}
	if len(xs) == 0 {
		return "", false
	}
	const W, H, left, right, top, bottom = 560.0, 340.0, 70.0, 170.0, 30.0, 45.0
	pw, ph := W-left-right, H-top-bottom
	lo := func(v []float64) float64 {
		m := math.Inf(1)
		for _, x := range v {
			if x > 0 {
				m = math.Min(m, x)
			}
		}
		return math.Floor(math.Log10(m))
	}
	hi := func(v []float64) float64 {
		m := math.Inf(-1)
		for _, x := range v {
			m = math.Max(m, x)
		}
		return math.Ceil(math.Log10(m))
	}
	x0, x1 := lo(xs), hi(xs)
	if x1 <= x0 {
		x0, x1 = x0-0.5, x0+0.5
	}
	y0, y1 := lo(ys), hi(ys)
	if y1 <= y0 {
		y1 = y0 + 1
	}
	px := func(x float64) float64 { return left + (math.Log10(x)-x0)/(x1-x0)*pw }
	py := func(y float64) float64 { return top + ph - (math.Log10(math.Max(y, math.Pow(10, y0)))-y0)/(y1-y0)*ph }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	title := m.Label
	if m.HigherBetter {
		title += " (higher is better)"
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="13" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))
	fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#444"/>`+"\n", left, top, pw, ph)
	for e := y0; e <= y1; e++ {
		y := py(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#ddd"/>`, left, y, left+pw, y)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-4, y+4, html.EscapeString(FormatValue(math.Pow(10, e), m.Unit)))
	}
	for _, n := range r.N {
		x := px(float64(n))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#ddd"/>`, x, top, x, top+ph)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n", x, top+ph+14, thousands(n))
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">N (elements), log scale</text>`+"\n", left+pw/2, H-10)
	ly := top + 10
	for _, s := range r.Systems {
		p := series[s]
		if len(p) == 0 {
			continue
		}
		c := palette[s]
		var pts []string
		for _, q := range p {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(q.x), py(q.y)))
		}
		if len(pts) > 1 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		}
		for _, q := range p {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s N=%d: %s</title></circle>`+"\n", px(q.x), py(q.y), c, s, int(q.x), html.EscapeString(FormatValue(q.y, m.Unit)))
		}
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="%s" stroke-width="2"/><text x="%.0f" y="%.0f">%s</text>`+"\n", left+pw+10, ly, left+pw+28, ly, c, left+pw+32, ly+4, s)
		ly += 16
	}
	b.WriteString("</svg>\n")
	return b.String(), true
}

// ReadJSON rebuilds a report from files that JSON wrote (their "run" measurements), merging them: to render or plot
// runs made separately, such as N = 1,000,000 on its own. The machine, date and durations are not in the files.
func ReadJSON(files ...[]byte) (*Report, error) {
	r := &Report{Skipped: map[string]string{}}
	ns, systems := map[int]bool{}, map[string]bool{}
	runs := 0
	for _, data := range files {
		var ms []Measurement
		if err := json.Unmarshal(data, &ms); err != nil {
			return nil, err
		}
		for _, m := range ms {
			if m.Metric != "run" {
				continue
			}
			r.add(m.Workload, m.System, m.N, m.Value)
			ns[m.N], systems[m.System] = true, true
			runs = max(runs, len(r.samples[key{m.Workload, m.System, m.N}]))
		}
	}
	for n := range ns {
		r.N = append(r.N, n)
	}
	slices.Sort(r.N)
	for _, s := range Systems {
		if systems[s] {
			r.Systems = append(r.Systems, s)
		}
	}
	r.Runs = runs
	return r, nil
}

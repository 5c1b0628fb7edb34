package review

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"io"
	"io/fs"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/internal/safetext"
	"github.com/strata-db/strata/revision"
)

// ---- templates

type pageSet struct {
	pages map[string]*template.Template
}

var funcs = template.FuncMap{
	"text": func(s string) template.HTML { return visible(s, false) },
	"para": func(s string) template.HTML { return visible(s, true) },
	// plain is text with the marks visible shows, as text: for where no markup goes (the page's <title>).
	"plain": func(s string) string { return marked(s) },
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"num": func(n any) string { return fmt.Sprint(n) },
	"plural": func(n int, one, many string) string {
		if n == 1 {
			return one
		}
		return many
	},
	"revURL":  revURL,
	"dbURL":   dbURL,
	"planURL": planURL,
	"historyURL": func(db, branch string) string {
		return withQuery(dbURL(db, "history"), url.Values{"branch": {branch}})
	},
	"diffURL": func(db, from, to string) string {
		return withQuery(dbURL(db, "diff"), url.Values{"from": {from}, "to": {to}})
	},
	"u64":      func(n uint64) string { return strconv.FormatUint(n, 10) },
	"add":      func(a, b int) int { return a + b },
	"sizeText": sizeText,
}

func parsePages() (*pageSet, error) {
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/parts.html")
	if err != nil {
		return nil, err
	}
	entries, err := fs.ReadDir(templateFS, "templates")
	if err != nil {
		return nil, err
	}
	ps := &pageSet{pages: map[string]*template.Template{}}
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".html")
		if name == "layout" || name == "parts" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, "templates/"+e.Name())
		if err != nil {
			return nil, err
		}
		ps.pages[name] = t
	}
	return ps, nil
}

func (ps *pageSet) execute(w io.Writer, name string, data map[string]any) error {
	t := ps.pages[name]
	if t == nil {
		return fmt.Errorf("no template %q", name)
	}
	return t.ExecuteTemplate(w, "layout", data)
}

// ---- text an agent wrote

// visible escapes text for HTML and shows the characters that change how text reads without being seen — control
// characters, bidirectional embeddings, overrides and isolates, zero-width and other format characters, the Unicode
// tag block, line separators, and bytes that are not UTF-8 — as visible marks (⟨U+202E⟩) with a title naming them.
// multiline keeps newlines and tabs (in an element that preserves white space); otherwise they are marked too.
func visible(s string, multiline bool) template.HTML {
	var b strings.Builder
	run := 0 // start of the plain run not yet written
	prev := rune(0)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		mark := ""
		switch {
		case r == utf8.RuneError && size == 1:
			mark = fmt.Sprintf("⟨0x%02X⟩", s[i])
		case multiline && (r == '\n' || r == '\t'):
		case hidden(r) || hiddenSelector(s, i, size, r, prev):
			mark = fmt.Sprintf("⟨U+%04X⟩", r)
		}
		prev = r
		if mark != "" {
			b.WriteString(html.EscapeString(s[run:i]))
			fmt.Fprintf(&b, `<span class="esc" title="an invisible, control or bidirectional character, shown as its code">%s</span>`, mark)
			run = i + size
		}
		i += size
	}
	b.WriteString(html.EscapeString(s[run:]))
	return template.HTML(b.String())
}

// marked is s with the characters visible marks replaced by the same marks, as plain text (⟨U+202E⟩).
func marked(s string) string {
	var b strings.Builder
	prev := rune(0)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, "⟨0x%02X⟩", s[i])
		case hidden(r) || hiddenSelector(s, i, size, r, prev):
			fmt.Fprintf(&b, "⟨U+%04X⟩", r)
		default:
			b.WriteString(s[i : i+size])
		}
		prev = r
		i += size
	}
	return b.String()
}

// hidden reports the runes visible shows as marks: those the command line escapes (safetext.Unsafe), one set for
// every front end.
func hidden(r rune) bool { return safetext.Unsafe(r) }

// hiddenSelector reports a variation selector next to another one (r at s[i:i+size], after prev): a run of them
// hides text (safetext.SelectorRun).
func hiddenSelector(s string, i, size int, r, prev rune) bool {
	next, _ := utf8.DecodeRuneInString(s[i+size:])
	return safetext.SelectorRun(prev, r, next)
}

// ---- values

func prettyJSON(b []byte) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		return string(b)
	}
	return buf.String()
}

func sizeText(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// Thresholds of a value in a diff: shown whole up to inlineBytes (indented past shortBytes); up to expandBytes,
// its start with the whole value behind a disclosure; past that, its start and a link to the value page. A page
// holds pageBytes of values at most; past it, values are links.
const (
	shortBytes  = 120
	inlineBytes = 2000
	expandBytes = 64 << 10
	headBytes   = 300
	pageBytes   = 2 << 20
)

// valueView is one side of a changed path.
type valueView struct {
	Text   string // what is shown
	Multi  bool   // Text is indented JSON over several lines
	Full   string // the whole value, behind a disclosure ("" when shown whole or linked)
	Cut    bool   // Text is the start of a value too big to show
	Bytes  int
	Link   string // the value page, for a value too big for this page
	Marker bool   // a plan's preview left the value out (Text is its marker)
}

type budget struct{ used int }

func (bu *budget) value(raw json.RawMessage, link string, preview bool) *valueView {
	if raw == nil {
		return nil
	}
	n := len(raw)
	if preview && bytes.HasPrefix(raw, []byte(`{"$elided"`)) {
		var e gate.Elided
		if json.Unmarshal(raw, &e) == nil && e.Elided != "" {
			return &valueView{Text: string(raw), Bytes: int(e.Bytes), Marker: true, Link: link}
		}
	}
	switch {
	case n <= shortBytes:
		bu.used += n
		return &valueView{Text: string(raw), Bytes: n}
	case n <= inlineBytes && bu.used+n <= pageBytes:
		bu.used += n
		return &valueView{Text: prettyJSON(raw), Multi: true, Bytes: n}
	case n <= expandBytes && bu.used+n <= pageBytes:
		bu.used += n + headBytes
		return &valueView{Text: head(raw), Full: prettyJSON(raw), Bytes: n}
	}
	bu.used += headBytes
	return &valueView{Text: head(raw), Cut: true, Bytes: n, Link: link}
}

// head is the start of a value's JSON, cut at a character boundary.
func head(raw []byte) string {
	if len(raw) <= headBytes {
		return string(raw)
	}
	i := headBytes
	for i > 0 && !utf8.RuneStart(raw[i]) {
		i--
	}
	return string(raw[:i]) + " …"
}

// ---- diffs

// diffContext is where a diff's operations come from.
type diffContext struct {
	db       string
	prefix   string // the pointer of the compared value in the database's state ("" for whole states)
	from, to string // the revisions of the two sides, for links to whole values ("" when there is none)
	pageURL  string // the page, for links to the other pages of operations
	query    url.Values
	preview  bool // a plan's kept preview: values may be markers of values left out
}

type diffView struct {
	Counts         revision.Counts
	CountsComplete bool
	Sections       []diffSection
	Offset, Shown  int
	Next, Prev     string
	Preview        bool
	CountsAtLeast  bool // a plan's counts stopped at gate.PreviewOps: it may change more
	None           bool // nothing changed
}

type diffSection struct {
	Resource string
	Rows     []diffRow
}

type diffRow struct {
	Gap   bool // unchanged parts between two changes, collapsed
	Op    string
	Sign  string
	Label string
	Path  string // inside the resource ("" for the resource itself)
	From  string // a move's or copy's source
	Old   *valueView
	New   *valueView
}

var signs = map[string][2]string{
	"add":     {"+", "added"},
	"remove":  {"−", "removed"},
	"replace": {"~", "changed"},
	"move":    {"→", "moved"},
	"copy":    {"⧉", "copied"},
}

// buildDiff lays out one page of a diff's operations (from offset), grouped by resource, with gaps where
// unchanged parts lie between two changes.
func buildDiff(d *revision.DiffResult, offset int, c diffContext) *diffView {
	ops := d.Operations[min(offset, len(d.Operations)):]
	more := len(ops) > pageOps
	if more {
		ops = ops[:pageOps]
	}
	v := &diffView{Counts: d.Counts, CountsComplete: !d.Truncated, Offset: offset, Shown: len(ops), Preview: c.preview}
	v.None = len(d.Operations) == 0 && !d.Truncated
	if c.pageURL != "" {
		if more {
			v.Next = pageLink(c, offset+len(ops))
		}
		if offset > 0 {
			v.Prev = pageLink(c, max(offset-pageOps, 0))
		}
	}
	bu := &budget{}
	var sec *diffSection
	var prevPath revision.Pointer
	for _, o := range ops {
		full := c.prefix + o.Path
		ptr, err := revision.ParsePointer(full)
		if err != nil {
			ptr = revision.Pointer{full}
		}
		res, inner := "", ptr
		if c.prefix == "" && len(ptr) > 0 {
			res, inner = ptr[0], ptr[1:]
		} else if c.prefix != "" {
			pp, _ := revision.ParsePointer(c.prefix)
			if len(pp) > 0 {
				res, inner = pp[0], ptr[1:]
			}
		}
		if sec == nil || sec.Resource != res {
			v.Sections = append(v.Sections, diffSection{Resource: res})
			sec = &v.Sections[len(v.Sections)-1]
			prevPath = nil
		} else if !adjacent(prevPath, ptr) {
			sec.Rows = append(sec.Rows, diffRow{Gap: true})
		}
		prevPath = ptr
		sl := signs[o.Op]
		if sl[0] == "" {
			sl = [2]string{"?", o.Op}
		}
		row := diffRow{Op: o.Op, Sign: sl[0], Label: sl[1], Path: inner.String()}
		if o.From != "" {
			row.From = o.From
			if c.prefix != "" {
				row.From = c.prefix + o.From
			}
		}
		row.Old = bu.value(o.OldValue, c.valueLink(c.from, full), c.preview)
		newLink := ""
		if !c.preview {
			newLink = c.valueLink(c.to, full)
		}
		row.New = bu.value(o.Value, newLink, c.preview)
		sec.Rows = append(sec.Rows, row)
	}
	return v
}

func pageLink(c diffContext, offset int) string {
	q := url.Values{}
	for k, vs := range c.query {
		if len(vs) > 0 && vs[0] != "" {
			q[k] = vs
		}
	}
	if offset > 0 {
		q.Set("offset", strconv.Itoa(offset))
	}
	return withQuery(c.pageURL, q)
}

func (c diffContext) valueLink(at, path string) string {
	if at == "" || path == "" || path == "/" {
		return ""
	}
	return withQuery(dbURL(c.db, "value"), url.Values{"at": {at}, "path": {path}})
}

// adjacent reports whether two changed paths are next to each other: siblings in an array one index apart, or the
// same path. Anything else has unchanged data between them.
func adjacent(a, b revision.Pointer) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for i := 0; i < len(a)-1; i++ {
		if a[i] != b[i] {
			return false
		}
	}
	x, e1 := strconv.Atoi(a[len(a)-1])
	y, e2 := strconv.Atoi(b[len(b)-1])
	if e1 != nil || e2 != nil {
		return a[len(a)-1] == b[len(b)-1]
	}
	return y-x <= 1 && y-x >= -1
}

// Package formats converts between Strata's JSON values and the line-oriented formats people move data in: JSON
// Lines and CSV. Both directions stream. JSON Lines import and export live in package revision (ImportOptions.Lines,
// Forest.WriteJSONLines); this package adds CSV: CSVReader turns a CSV file into JSON Lines for that importer, and
// WriteCSV writes an array of flat objects as CSV.
package formats

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/strata-db/strata/revision"
)

// ErrInvalidCSV is wrapped by every error about CSV input that cannot be imported as asked.
var ErrInvalidCSV = errors.New("invalid CSV")

// ColumnType says what JSON value a CSV column's cells become.
type ColumnType int

const (
	String  ColumnType = iota // the cell's text, as a string (the default)
	Number                    // a JSON number, kept as its exact text; an empty cell is null
	Boolean                   // true or false, in any letter case; an empty cell is null
	JSON                      // JSON text of any value, checked as an import checks it; an empty cell is null
)

var typeNames = map[string]ColumnType{"string": String, "number": Number, "boolean": Boolean, "bool": Boolean, "json": JSON}

func (t ColumnType) String() string {
	switch t {
	case Number:
		return "number"
	case Boolean:
		return "boolean"
	case JSON:
		return "json"
	}
	return "string"
}

// ParseColumnTypes reads column types given as NAME=TYPE items (price=number, active=boolean, tags=json; string is
// the default), as the command line's --csv-types takes them.
func ParseColumnTypes(items []string) (map[string]ColumnType, error) {
	out := map[string]ColumnType{}
	for _, it := range items {
		i := strings.LastIndexByte(it, '=')
		if i < 0 {
			return nil, fmt.Errorf("%w: column type %q: write COLUMN=TYPE, such as price=number", ErrInvalidCSV, it)
		}
		name, tn := it[:i], strings.ToLower(strings.TrimSpace(it[i+1:]))
		t, ok := typeNames[tn]
		if !ok {
			return nil, fmt.Errorf("%w: column type %q: unknown type %q (use string, number, boolean or json)", ErrInvalidCSV, it, it[i+1:])
		}
		if prev, dup := out[name]; dup && prev != t {
			return nil, fmt.Errorf("%w: column %q is given two types, %s and %s", ErrInvalidCSV, name, prev, t)
		}
		out[name] = t
	}
	return out, nil
}

// CSVError is a CSV input that cannot be imported, at a line and column (1-based; the column counts bytes from
// the start of the line, as encoding/csv does) of the input.
type CSVError struct {
	Line, Column int
	Field        string // the column's name from the header, when known
	Msg          string
}

func (e *CSVError) Error() string {
	s := fmt.Sprintf("invalid CSV at line %d, column %d", e.Line, e.Column)
	if e.Field != "" {
		s += fmt.Sprintf(" (%q)", e.Field)
	}
	return s + ": " + e.Msg
}

func (e *CSVError) Unwrap() error { return ErrInvalidCSV }

// CSVReader reads CSV (RFC 4180: comma-separated, fields quoted with '"' when they hold commas, quotes or line
// breaks) and yields JSON Lines: one object per record after the header row, whose fields name the members. Values
// are strings unless the column has another type. The CSV must be UTF-8 (a leading byte-order mark is skipped),
// with a named, distinct column for every field of every record; anything else is a *CSVError naming the line and
// column, returned from Read. Memory holds one record at a time.
type CSVReader struct {
	cr     *csv.Reader
	types  map[string]ColumnType
	names  []string
	kinds  []ColumnType
	keys   [][]byte // each column's key, as JSON text followed by ':'
	buf    []byte
	pos    int
	err    error
	header bool
}

// NewCSVReader returns a CSVReader over r. types gives the columns that are not strings; naming a column the
// header does not have is an error (from the first Read).
func NewCSVReader(r io.Reader, types map[string]ColumnType) *CSVReader {
	cr := csv.NewReader(&quotedCRLF{r: &bomSkipper{r: r}})
	cr.ReuseRecord = true
	return &CSVReader{cr: cr, types: types}
}

// bomSkipper drops a leading UTF-8 byte-order mark, before encoding/csv sees it (a BOM before a quoted first
// header cell would otherwise make the quote "bare").
type bomSkipper struct {
	r    io.Reader
	done bool
}

func (b *bomSkipper) Read(p []byte) (int, error) {
	if b.done {
		return b.r.Read(p)
	}
	b.done = true
	var head [3]byte
	n, err := io.ReadFull(b.r, head[:])
	if n == 3 && string(head[:]) == "\uFEFF" {
		n = 0
	}
	if err == io.ErrUnexpectedEOF {
		err = io.EOF
	}
	b.r = io.MultiReader(bytes.NewReader(head[:n]), b.r)
	if err != nil && err != io.EOF {
		return 0, err
	}
	return b.r.Read(p)
}

// quotedCRLF keeps a CRLF inside a quoted field. encoding/csv turns every \r\n into \n, inside quotes too, so a
// string holding \r\n came back from an export and an import changed. On its way in, each \r\n inside quotes is
// marked \r\xff\n (the parser keeps a lone \r), and unmark turns the mark back. A 0xff byte of the input itself
// (never valid UTF-8) becomes 0xfe, never valid either, so that it is still refused where it is.
type quotedCRLF struct {
	r     io.Reader
	state byte // where in a record the last byte was: csvFieldStart, csvBare, csvQuoted or csvQuoteSeen
	cr    bool // the last byte was a \r inside quotes, held back: is the next one \n?
	in    []byte
	out   []byte
	off   int
	err   error
}

const (
	csvFieldStart = iota
	csvBare
	csvQuoted
	csvQuoteSeen
)

func (q *quotedCRLF) Read(p []byte) (int, error) {
	for q.off >= len(q.out) {
		if q.err != nil {
			if q.cr { // the input ended after a \r
				q.cr = false
				q.out, q.off = append(q.out[:0], '\r'), 0
				continue
			}
			return 0, q.err
		}
		if q.in == nil {
			q.in = make([]byte, 32<<10)
		}
		n, err := q.r.Read(q.in)
		q.err = err
		q.out, q.off = q.mark(q.out[:0], q.in[:n]), 0
	}
	n := copy(p, q.out[q.off:])
	q.off += n
	return n, nil
}

func (q *quotedCRLF) mark(out, in []byte) []byte {
	for _, b := range in {
		if q.cr {
			q.cr = false
			out = append(out, '\r')
			if b == '\n' {
				out = append(out, 0xff)
			}
		}
		if b == 0xff {
			b = 0xfe
		}
		switch q.state {
		case csvFieldStart:
			switch b {
			case '"':
				q.state = csvQuoted
			case ',', '\n':
			default:
				q.state = csvBare
			}
		case csvBare:
			if b == ',' || b == '\n' {
				q.state = csvFieldStart
			}
		case csvQuoted:
			switch b {
			case '"':
				q.state = csvQuoteSeen
			case '\r':
				q.cr = true
				continue
			}
		case csvQuoteSeen:
			switch b {
			case '"':
				q.state = csvQuoted
			case ',', '\n':
				q.state = csvFieldStart
			default:
				q.state = csvBare
			}
		}
		out = append(out, b)
	}
	return out
}

// unmark turns quotedCRLF's marks in a field back into \r\n.
func unmark(s string) string {
	if strings.IndexByte(s, 0xff) < 0 {
		return s
	}
	return strings.ReplaceAll(s, "\r\xff\n", "\r\n")
}

// Read implements io.Reader.
func (c *CSVReader) Read(p []byte) (int, error) {
	for c.pos >= len(c.buf) {
		if c.err != nil {
			return 0, c.err
		}
		c.buf, c.pos = c.buf[:0], 0
		c.err = c.fill(32 << 10)
	}
	n := copy(p, c.buf[c.pos:])
	c.pos += n
	return n, nil
}

// fill encodes records until buf holds at least want bytes or the input ends (io.EOF) or fails.
func (c *CSVReader) fill(want int) error {
	if !c.header {
		if err := c.readHeader(); err != nil {
			return err
		}
	}
	for len(c.buf) < want {
		rec, err := c.cr.Read()
		if err == io.EOF {
			return io.EOF
		}
		if err != nil {
			return c.readError(err)
		}
		if err := c.record(rec); err != nil {
			return err
		}
	}
	return nil
}

func (c *CSVReader) readError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		msg := pe.Err.Error()
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			msg = fmt.Sprintf("this record has a different number of fields from the header's %d", len(c.names))
		}
		if errors.Is(pe.Err, csv.ErrBareQuote) || errors.Is(pe.Err, csv.ErrQuote) {
			msg += ` (a field with a '"' in it must be quoted whole, its quotes doubled: "say ""hi""")`
		}
		return &CSVError{Line: pe.Line, Column: pe.Column, Msg: msg}
	}
	return err
}

func (c *CSVReader) readHeader() error {
	rec, err := c.cr.Read()
	if err == io.EOF {
		return &CSVError{Line: 1, Column: 1, Msg: "the input is empty: CSV needs a header row naming the columns"}
	}
	if err != nil {
		return c.readError(err)
	}
	c.header = true
	c.names = make([]string, len(rec))
	for i, n := range rec {
		c.names[i] = unmark(n)
	}
	if len(c.names) > 0 {
		c.names[0] = strings.TrimPrefix(c.names[0], "\uFEFF")
	}
	seen := map[string]int{}
	for i, n := range c.names {
		line, col := c.cr.FieldPos(i)
		if !utf8.ValidString(n) {
			return &CSVError{Line: line, Column: col, Msg: "the column name is not valid UTF-8: the CSV must be UTF-8 text"}
		}
		if j := strings.IndexByte(n, '\r'); j >= 0 && !strings.HasPrefix(n[j:], "\r\n") {
			return &CSVError{Line: line, Column: col, Msg: fmt.Sprintf("column %d of the header holds a carriage return: are the lines ended by CR alone (\"CSV (Macintosh)\")? End them with LF or CRLF", i+1)}
		}
		if n == "" {
			return &CSVError{Line: line, Column: col, Msg: fmt.Sprintf("column %d of the header has no name: every column needs one", i+1)}
		}
		if j, dup := seen[n]; dup {
			return &CSVError{Line: line, Column: col, Field: n, Msg: fmt.Sprintf("columns %d and %d have the same name: an object may name each member only once", j+1, i+1)}
		}
		seen[n] = i
	}
	var unknown []string
	for n := range c.types {
		if _, ok := seen[n]; !ok {
			unknown = append(unknown, fmt.Sprintf("%q", n))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		hint := ""
		for n := range c.types {
			if _, ok := seen[n]; !ok && strings.TrimSpace(n) != n {
				if _, ok := seen[strings.TrimSpace(n)]; ok {
					hint = "; a space after a comma is part of the next name: write price=number,name=string"
				}
			}
		}
		return fmt.Errorf("%w: a type is given for %s, but the header has no such column (its columns: %s)%s",
			ErrInvalidCSV, strings.Join(unknown, ", "), quoteAll(c.names), hint)
	}
	c.kinds = make([]ColumnType, len(c.names))
	c.keys = make([][]byte, len(c.names))
	for i, n := range c.names {
		c.kinds[i] = c.types[n]
		c.keys[i] = append(appendJSONString(nil, n), ':')
	}
	return nil
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// record appends one record as a line of JSON.
func (c *CSVReader) record(rec []string) error {
	c.buf = append(c.buf, '{')
	for i, cell := range rec {
		if i > 0 {
			c.buf = append(c.buf, ',')
		}
		c.buf = append(c.buf, c.keys[i]...)
		if err := c.cell(i, unmark(cell)); err != nil {
			line, col := c.cr.FieldPos(i)
			return &CSVError{Line: line, Column: col, Field: c.names[i], Msg: err.Error()}
		}
	}
	c.buf = append(c.buf, '}', '\n')
	return nil
}

func (c *CSVReader) cell(i int, cell string) error {
	t := c.kinds[i]
	if t == String {
		if !utf8.ValidString(cell) {
			return errors.New("the field is not valid UTF-8: the CSV must be UTF-8 text")
		}
		c.buf = appendJSONString(c.buf, cell)
		return nil
	}
	s := strings.TrimSpace(cell)
	if s == "" {
		c.buf = append(c.buf, "null"...)
		return nil
	}
	switch t {
	case Number:
		if !isJSONNumber(s) {
			return fmt.Errorf("%s is not a number (the column's type is number: write it as JSON does, like -12.5 or 1e3)", quoteCell(cell))
		}
		c.buf = append(c.buf, s...)
	case Boolean:
		switch {
		case strings.EqualFold(s, "true"):
			c.buf = append(c.buf, "true"...)
		case strings.EqualFold(s, "false"):
			c.buf = append(c.buf, "false"...)
		default:
			return fmt.Errorf("%s is not a boolean (the column's type is boolean: true or false)", quoteCell(cell))
		}
	case JSON:
		if err := revision.CheckJSON([]byte(s)); err != nil {
			return fmt.Errorf("the field is not JSON (the column's type is json): %v", err)
		}
		// One line, as JSON Lines needs: whitespace between tokens goes.
		var b bytes.Buffer
		if err := json.Compact(&b, []byte(s)); err != nil {
			return fmt.Errorf("the field is not JSON (the column's type is json): %v", err)
		}
		c.buf = append(c.buf, b.Bytes()...)
	}
	return nil
}

// quoteCell quotes a cell for a message, shortened if long.
func quoteCell(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// isJSONNumber reports whether s is a number as JSON writes them: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(s string) bool {
	i, n := 0, len(s)
	digits := func() bool {
		start := i
		for i < n && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < n && s[i] == '-' {
		i++
	}
	if i < n && s[i] == '0' {
		i++
	} else if !digits() {
		return false
	}
	if i < n && s[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < n && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < n && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	return i == n
}

// appendJSONString appends s, valid UTF-8, as a JSON string.
func appendJSONString(b []byte, s string) []byte { return revision.AppendJSONString(b, s) }

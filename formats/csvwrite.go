package formats

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/strata-db/strata/revision"
)

// ErrNotTabular is wrapped by WriteCSV's errors about a value that has no CSV form.
var ErrNotTabular = errors.New("not representable as CSV")

// WriteCSV streams array v as CSV: a header row of its first element's keys (in key byte order, as Strata keeps
// them), then a row for each element. Every element must be an object with exactly those keys, each holding a
// string, a number (its exact text), a boolean (true or false) or null (an empty field); an element that is not, or
// a nested value, stops the export with an error naming the element and key (rows before it are written). An empty
// array writes nothing.
func WriteCSV(ctx context.Context, f *revision.Forest, w io.Writer, v revision.Value) error {
	if v.Kind() != revision.Array {
		return fmt.Errorf("%w: CSV holds the elements of an array of objects, and this value is %s", ErrNotTabular, revision.KindPhrase(v.Kind()))
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	cw := csv.NewWriter(bw)
	var header, row []string
	i := -1
	err := f.Members(ctx, v, func(_ string, el revision.Value) error {
		i++
		if el.Kind() != revision.Object {
			return fmt.Errorf("%w: element %d is %s, not an object: each CSV row is an object of scalar values", ErrNotTabular, i, revision.KindPhrase(el.Kind()))
		}
		row = row[:0]
		var keys []string
		k := 0
		err := f.Members(ctx, el, func(key string, val revision.Value) error {
			if header != nil && (k >= len(header) || header[k] != key) {
				return errKeys
			}
			k++
			if header == nil {
				keys = append(keys, key)
			}
			cell, err := cellText(ctx, f, val)
			if err != nil {
				return fmt.Errorf("%w: element %d, key %q: %v", ErrNotTabular, i, key, err)
			}
			row = append(row, cell)
			return nil
		})
		if errors.Is(err, errKeys) || (err == nil && header != nil && k != len(header)) {
			return keysError(ctx, f, i, el, header)
		}
		if err != nil {
			return err
		}
		if header == nil && len(keys) == 0 {
			return fmt.Errorf("%w: element %d is an empty object: a CSV row needs at least one column", ErrNotTabular, i)
		}
		if header == nil {
			header = append([]string{}, keys...)
			if err := cw.Write(header); err != nil {
				return err
			}
		}
		if len(row) == 1 && row[0] == "" {
			// encoding/csv writes a lone empty field as an empty line, which every reader skips: quote it.
			cw.Flush()
			if err := cw.Error(); err != nil {
				return err
			}
			_, err := bw.WriteString("\"\"\n")
			return err
		}
		return cw.Write(row)
	})
	cw.Flush()
	if err == nil {
		err = cw.Error()
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

var errKeys = errors.New("keys differ")

// keysError says how element i's keys differ from the header's.
func keysError(ctx context.Context, f *revision.Forest, i int, el revision.Value, header []string) error {
	have := map[string]bool{}
	var got []string
	if err := f.Members(ctx, el, func(key string, _ revision.Value) error {
		have[key] = true
		got = append(got, key)
		return nil
	}); err != nil {
		return err
	}
	want := map[string]bool{}
	var missing, extra []string
	for _, k := range header {
		want[k] = true
		if !have[k] {
			missing = append(missing, fmt.Sprintf("%q", k))
		}
	}
	for _, k := range got {
		if !want[k] {
			extra = append(extra, fmt.Sprintf("%q", k))
		}
	}
	var what []string
	if len(missing) > 0 {
		what = append(what, "lacks "+strings.Join(missing, ", "))
	}
	if len(extra) > 0 {
		what = append(what, "has "+strings.Join(extra, ", ")+" besides")
	}
	return fmt.Errorf("%w: element %d %s the columns of the header (the first element's keys: %s): every row needs the same keys",
		ErrNotTabular, i, strings.Join(what, " and "), quoteAll(header))
}

// cellText is a scalar's text in a CSV field.
func cellText(ctx context.Context, f *revision.Forest, v revision.Value) (string, error) {
	switch v.Kind() {
	case revision.String:
		return f.Text(ctx, v)
	case revision.Number:
		return v.NumberText(), nil
	case revision.Bool:
		if v.Bool() {
			return "true", nil
		}
		return "false", nil
	case revision.Null:
		return "", nil
	}
	return "", fmt.Errorf("%s cannot be a CSV field (only strings, numbers, booleans and null can); export it as JSON Lines or JSON", revision.KindPhrase(v.Kind()))
}

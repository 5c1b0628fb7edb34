package revision

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/strata-db/strata/internal/workload"
)

// TestImportLines: JSON Lines become an array, element for element, equal to the same array imported as JSON.
func TestImportLines(t *testing.T) {
	f, _ := newForest(t)
	ctx := context.Background()
	var lines, doc bytes.Buffer
	doc.WriteByte('[')
	for i := range 3000 {
		e := workload.AppendElement(nil, i, i%100)
		lines.Write(e)
		lines.WriteString("\r\n")
		if i%500 == 0 {
			lines.WriteString("\n  \n") // blank lines are skipped
		}
		if i > 0 {
			doc.WriteByte(',')
		}
		doc.Write(e)
	}
	doc.WriteByte(']')
	v, _, err := f.ImportWith(ctx, &lines, &ImportOptions{Lines: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := mustImport(t, f, doc.String()); v != want {
		t.Fatalf("JSON Lines import differs from the array's: %d elements", v.Len())
	}
	for in, want := range map[string]string{"": `[]`, "\n\n": `[]`, `1`: `[1]`, "\"a\"\n{\"b\":[]}\nnull\n": `["a",{"b":[]},null]`} {
		v, _, err := f.ImportWith(ctx, strings.NewReader(in), &ImportOptions{Lines: true})
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if got := mustJSON(t, f, v); got != want {
			t.Errorf("%q: got %s, want %s", in, got, want)
		}
	}
}

// TestImportLinesErrors: a bad line is reported with its line, column, byte offset and the element's pointer, and
// nothing is returned.
func TestImportLinesErrors(t *testing.T) {
	f, _ := newForest(t)
	for in, want := range map[string]string{
		"1\n2\n{\"a\":[1,tru]}\n": `invalid JSON at line 3, column 12 (byte 15) in "/2/a": invalid literal: expected true`,
		"1\n{\"a\":1,\"a\":2}\n":  `invalid JSON at line 2, column 13 (byte 14) in "/1": duplicate key "a"`,
		"[1,\n2]\n":               `line 1, column 4 (byte 3) in "/0": line break inside a value`,
		"1 2\n":                   `line 1, column 3 (byte 2): a second value on the same line`,
	} {
		_, _, err := f.ImportWith(context.Background(), strings.NewReader(in), &ImportOptions{Lines: true})
		if !errors.Is(err, ErrInvalidJSON) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", in, err, want)
		}
	}
}

// TestImportDepth: a resource may nest MaxDepth levels, the database root above it not counted; a value imported to
// sit deeper inside its resource nests that much less, and JSON Lines elements one level less (the array they make).
func TestImportDepth(t *testing.T) {
	f, _ := newForest(t)
	ctx := context.Background()
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, tc := range []struct {
		depth, levels int
		lines, ok     bool
	}{
		{0, MaxDepth, false, true}, {0, MaxDepth + 1, false, false},
		{1, MaxDepth, false, true}, {1, MaxDepth + 1, false, false},
		{2, MaxDepth - 1, false, true}, {2, MaxDepth, false, false},
		{1, MaxDepth - 1, true, true}, {1, MaxDepth, true, false},
	} {
		_, _, err := f.ImportWith(ctx, strings.NewReader(nest(tc.levels)), &ImportOptions{Depth: tc.depth, Lines: tc.lines})
		if tc.ok && err != nil || !tc.ok && !errors.Is(err, ErrInvalidJSON) {
			t.Errorf("%d levels at depth %d (lines %v): %v", tc.levels, tc.depth, tc.lines, err)
		}
	}
}

// TestPlace: placing an imported tree builds only the nodes along the pointer, and reads as the same document as a
// patch that adds the value's text.
func TestPlace(t *testing.T) {
	f, ms := newForest(t)
	ctx := context.Background()
	root := mustImport(t, f, `{"a":1,"z":[1,2]}`)
	doc := workload.JSON(20000)
	big := mustImport(t, f, string(doc))
	before := ms.Len()
	c, err := f.Place(ctx, root, Pointer{"m"}, big)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) > 2 {
		t.Fatalf("placing a stored tree built %d nodes", len(c.Nodes))
	}
	if _, err := f.Save(ctx, c); err != nil {
		t.Fatal(err)
	}
	want := mustPatch(t, f, root, `[{"op":"add","path":"/m","value":`+string(doc)+`}]`)
	if c.Root != want {
		t.Fatal("Place and an add of the same text differ")
	}
	if ms.Len() > before+len(c.Nodes) {
		t.Fatalf("nodes %d -> %d", before, ms.Len())
	}
	// Replacing, and into arrays, as add does.
	c, err = f.Place(ctx, c.Root, Pointer{"a"}, big)
	if err != nil || mustJSON(t, f, must(f.Get(ctx, c.Root, Pointer{"a"}))) != canonical(t, doc) {
		t.Fatalf("replace: %v", err)
	}
	if _, err := f.Place(ctx, root, Pointer{"nope", "x"}, big); !errors.Is(err, ErrNotFound) {
		t.Fatalf("placing under a missing member: %v", err)
	}
}

// TestWriteJSONLinesAndText: an array's elements, one per line; strings long and short as text.
func TestWriteJSONLinesAndText(t *testing.T) {
	f, _ := newForest(t)
	ctx := context.Background()
	long := strings.Repeat("é\"x", 20000)
	v := mustImport(t, f, `[1,"a",{"b":[true,null]},`+string(workload.JSON(3))+`,"`+strings.ReplaceAll(long, `"`, `\"`)+`"]`)
	var b bytes.Buffer
	if err := f.WriteJSONLines(ctx, &b, v); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if len(lines) != 6 || lines[5] != "" || lines[0] != "1" || lines[2] != `{"b":[true,null]}` || lines[3] != canonical(t, workload.JSON(3)) {
		t.Fatalf("got %.300q", b.String())
	}
	s := must(f.Get(ctx, v, Pointer{"4"}))
	if got, err := f.Text(ctx, s); err != nil || got != long || !s.IsTree() {
		t.Fatalf("Text of a long string: %v", err)
	}
	if got, err := f.Text(ctx, must(f.Get(ctx, v, Pointer{"1"}))); err != nil || got != "a" {
		t.Fatalf("Text: %q %v", got, err)
	}
	if err := f.WriteJSONLines(ctx, &b, must(f.Get(ctx, v, Pointer{"2"}))); !errors.Is(err, ErrInvalidPath) || !strings.Contains(err.Error(), "an object") {
		t.Fatalf("JSON Lines of an object: %v", err)
	}
	b.Reset()
	if err := f.WriteJSONLines(ctx, &b, mustImport(t, f, `[]`)); err != nil || b.Len() != 0 {
		t.Fatalf("empty array: %q %v", b.String(), err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

package revision

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/strata-db/strata/revision/internal/codec"
)

func TestImportExactNumbersAndRoundTrip(t *testing.T) {
	f, _ := newForest(t)
	for _, doc := range []string{
		`12345678901234567891`, `1.0`, `1e3`, `-0`, `-9223372036854775808`, `9223372036854775807`, `9223372036854775808`,
		`0.1`, `1E+2`, `[1.50,-0.0,100]`, `{"n":12345678901234567891,"f":1.0}`,
		`"tab\tquote\"backslash\\ctl\u0001 ünï €"`, `{}`, `[]`, `null`, `true`, `false`,
	} {
		v := mustImport(t, f, doc)
		if got, want := mustJSON(t, f, v), canonical(t, []byte(doc)); got != want {
			t.Fatalf("%s: got %s want %s", doc, got, want)
		}
	}
	// Equal values are equal however they were written, and different number texts stay different.
	if mustImport(t, f, `{"b":1,"a":[true]}`) != mustImport(t, f, "{ \"a\" : [ true ] ,\n \"b\" : 1 }") {
		t.Fatal("key order or whitespace changed the value")
	}
	if mustImport(t, f, `1.0`) == mustImport(t, f, `1`) {
		t.Fatal("1.0 and 1 must keep their own text")
	}
}

func TestImportLargeValues(t *testing.T) {
	f, ms := newForest(t)
	long := strings.Repeat("abcdéfgh\n", 5000) // 50 KB with multi-byte characters and escapes
	v := mustImport(t, f, `{"s":"`+strings.ReplaceAll(long, "\n", `\n`)+`"}`)
	got, err := f.Materialize(context.Background(), v)
	if err != nil || got.(map[string]any)["s"] != long {
		t.Fatalf("long string did not round-trip: %v", err)
	}
	s, _ := f.Get(context.Background(), v, MustPointer("/s"))
	if !s.IsTree() || s.Len() != uint64(len(long)) {
		t.Fatalf("a 50 KB string should be a tree of fragments (len %d)", s.Len())
	}
	doc := userDoc(10000)
	v = mustImport(t, f, string(doc))
	if got := mustJSON(t, f, v); got != canonical(t, doc) {
		t.Fatal("large array did not round-trip")
	}
	if v.Len() != 10000 || v.Size() != uint64(len(canonical(t, doc))) {
		t.Fatalf("len %d size %d", v.Len(), v.Size())
	}
	if ms.Len() < 100 {
		t.Fatalf("a 1 MB document should span many nodes, got %d", ms.Len())
	}
}

func TestImportRefusesBadJSON(t *testing.T) {
	f, ms := newForest(t)
	cases := map[string]string{
		`{"a":1,"a":2}`:         `duplicate key "a"`,
		`{"x":[{"k":1,"k":1}]}`: `in "/x/0"`,
		"\"\xff\"":              "UTF-8",
		`[1,2`:                  "end of input",
		`{"a":1}{"b":2}`:        "after the top-level value",
		strings.Repeat("[", 513) + "1" + strings.Repeat("]", 513): "512",
		`01`:  "JSON",
		``:    "empty",
		`NaN`: "JSON",
	}
	for doc, want := range cases {
		before := ms.Len()
		_, _, err := f.ImportBytes(context.Background(), []byte(doc))
		if err == nil || !errors.Is(err, ErrInvalidJSON) || !strings.Contains(err.Error(), want) {
			t.Errorf("%.40q: got %v, want an invalid-JSON error mentioning %q", doc, err, want)
		}
		if ms.Len() != before {
			t.Errorf("%.40q: a refused document stored nodes", doc)
		}
	}
	// 512 levels are fine.
	mustImport(t, f, strings.Repeat("[", 512)+strings.Repeat("]", 512))
}

func TestCorruptNodeIsDetected(t *testing.T) {
	f, ms := newForest(t)
	v := mustImport(t, f, string(userDoc(5000)))
	ref, _ := codec.DecodeRef(v.Encoding())
	ms.Corrupt(ref.Hash, []byte{0, 1, 2, 3})
	f2 := New(ms, nil) // a cold cache reads the damaged node
	if _, err := f2.JSON(context.Background(), v); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("got %v", err)
	}
}

// TestDuplicateKeyPosition: a duplicate key is reported at the closing brace of the object holding it, and the
// message says so (found in review: the position was one byte past the brace, beyond the end of the document).
func TestDuplicateKeyPosition(t *testing.T) {
	f, _ := newForest(t)
	doc := "{\"a\":1,\n\"b\":2,\n\"a\":3,\n\"c\":4}"
	_, _, err := f.ImportBytes(context.Background(), []byte(doc))
	var je *JSONError
	if !errors.As(err, &je) {
		t.Fatalf("%v", err)
	}
	if je.Line != 4 || je.Column != 6 || je.Offset != int64(len(doc)-1) || !strings.Contains(je.Msg, "end of the object") {
		t.Errorf("duplicate key reported at line %d, column %d (byte %d) of a %d-byte document: %v", je.Line, je.Column, je.Offset, len(doc), err)
	}
}

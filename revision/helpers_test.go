package revision

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/strata-db/strata/store"
)

func newForest(t testing.TB) (*Forest, *store.Mem) {
	t.Helper()
	ms := store.NewMem()
	return New(ms, nil), ms
}

func mustImport(t testing.TB, f *Forest, doc string) Value {
	t.Helper()
	v, _, err := f.ImportBytes(context.Background(), []byte(doc))
	if err != nil {
		t.Fatalf("import %.200s: %v", doc, err)
	}
	return v
}

func mustJSON(t testing.TB, f *Forest, v Value) string {
	t.Helper()
	b, err := f.JSON(context.Background(), v)
	if err != nil {
		t.Fatalf("JSON: %v", err)
	}
	return string(b)
}

// canonical re-encodes JSON text the way Strata writes it: compact, keys sorted, numbers as written.
func canonical(t testing.TB, doc []byte) string {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", doc, err)
	}
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimRight(buf.Bytes(), "\n"))
}

func mustPatch(t testing.TB, f *Forest, root Value, patch string) Value {
	t.Helper()
	ops, err := ParsePatch([]byte(patch))
	if err != nil {
		t.Fatalf("parse patch %s: %v", patch, err)
	}
	v, _, err := f.Apply(context.Background(), root, ops)
	if err != nil {
		t.Fatalf("apply %s: %v", patch, err)
	}
	return v
}

func envSeed() int64 {
	var s int64
	fmt.Sscan(os.Getenv("STRATA_SEED"), &s)
	return s
}

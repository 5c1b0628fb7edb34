package revision

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestReadPointer(t *testing.T) {
	ctx := context.Background()
	f, _ := newForest(t)
	root := mustImport(t, f, `{"users":`+string(userDoc(20000))+`,"a/b":{"~x":1},"n":12345678901234567891,"f":1.0,"e":1e3,"z":-0}`)
	for ptr, want := range map[string]string{
		"/users/17777/name": `"user-17777"`,
		"/users/0/tags/1":   `"b"`,
		"/a~1b/~0x":         `1`,
		"/n":                `12345678901234567891`,
		"/f":                `1.0`,
		"/e":                `1e3`,
		"/z":                `-0`,
	} {
		v, err := f.Get(ctx, root, MustPointer(ptr))
		if err != nil {
			t.Fatalf("%s: %v", ptr, err)
		}
		if got := mustJSON(t, f, v); got != want {
			t.Fatalf("%s: got %s want %s", ptr, got, want)
		}
	}
	// Errors name what is wrong and suggest close names.
	_, err := f.Get(ctx, root, MustPointer("/users/3/nmae"))
	var pe *PathError
	if !errors.As(err, &pe) || !errors.Is(err, ErrNotFound) || len(pe.DidYouMean) == 0 || pe.DidYouMean[0] != "name" {
		t.Fatalf("got %v", err)
	}
	if _, err := f.Get(ctx, root, MustPointer("/users/20000")); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "20000 elements") {
		t.Fatalf("got %v", err)
	}
	if _, err := f.Get(ctx, root, MustPointer("/users/01")); !errors.Is(err, ErrInvalidPath) {
		t.Fatalf("got %v", err)
	}
	if _, err := f.Get(ctx, root, MustPointer("/n/x")); !errors.Is(err, ErrInvalidPath) || !strings.Contains(err.Error(), "is a number") {
		t.Fatalf("got %v", err)
	}
	if _, err := ParsePointer("users"); err == nil || !strings.Contains(err.Error(), "^") {
		t.Fatalf("pointer error should show a caret: %v", err)
	}
	if _, err := ParsePointer("/a~2"); err == nil || !errors.Is(err, ErrInvalidPath) {
		t.Fatalf("got %v", err)
	}
}

func TestReadShaped(t *testing.T) {
	ctx := context.Background()
	f, _ := newForest(t)
	root := mustImport(t, f, `{"users":`+string(userDoc(5000))+`,"cfg":{"deep":{"er":{"est":[1,2,3]}}}}`)

	res, err := f.Read(ctx, root, MustPointer("/users"), ReadOptions{Offset: 10, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(res.JSON, &got); err != nil || len(got) != 3 || got[0]["id"] != float64(10) {
		t.Fatalf("window: %s %v", res.JSON, err)
	}
	if !res.HasNext || res.Next != 13 || res.Count != 5000 {
		t.Fatalf("window continuation: %+v", res)
	}

	res, err = f.Read(ctx, root, Pointer{}, ReadOptions{MaxDepth: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"cfg":{"$elided":"object","path":"/cfg","count":1,"bytes":31},"users":{"$elided":"array","path":"/users","count":5000,"bytes":` + itoa(mustValue(t, f, root, "/users").Size()) + `}}`
	if string(res.JSON) != want || !res.Truncated {
		t.Fatalf("depth elision:\n got %.400s\nwant %s", res.JSON, want)
	}

	res, err = f.Read(ctx, root, MustPointer("/cfg"), ReadOptions{MaxElements: 2})
	if err != nil || string(res.JSON) != `{"deep":{"er":{"est":[1,2,{"$elided":"elements","path":"/cfg/deep/er/est","from":2,"count":1}]}}}` {
		t.Fatalf("element elision: %s %v", res.JSON, err)
	}

	res, err = f.Read(ctx, root, MustPointer("/users"), ReadOptions{MaxBytes: 1000})
	if err != nil || len(res.JSON) > 1000 || !res.HasNext || res.Next == 0 {
		t.Fatalf("byte cap: %d bytes, %+v, %v", len(res.JSON), res, err)
	}
	// Continuing from Next reads the rest without gaps.
	next, err := f.Read(ctx, root, MustPointer("/users"), ReadOptions{Offset: res.Next, Limit: 1})
	if err != nil || !strings.Contains(string(next.JSON), `"id":`+itoa(res.Next)+`,`) {
		t.Fatalf("continuation: %s %v", next.JSON, err)
	}
}

func mustValue(t *testing.T, f *Forest, root Value, p string) Value {
	v, err := f.Get(context.Background(), root, MustPointer(p))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func itoa(n uint64) string { b, _ := json.Marshal(n); return string(b) }

func TestZeroValueIsAnErrorNotAPanic(t *testing.T) {
	f, _ := newForest(t)
	if _, err := f.JSON(context.Background(), Value{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("JSON of the zero Value: %v", err)
	}
	if _, err := f.Materialize(context.Background(), Value{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Materialize of the zero Value: %v", err)
	}
}

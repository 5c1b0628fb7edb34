package revision

import (
	"context"
	"strings"
	"testing"
)

func TestMerge(t *testing.T) {
	ctx := context.Background()
	f, _ := newForest(t)
	cases := []struct {
		name, base, ours, theirs string
		want                     string // merged JSON, or "" when conflicts are expected
		conflicts                []string
	}{
		{"disjoint members", `{"a":1,"b":2}`, `{"a":10,"b":2}`, `{"a":1,"b":20}`, `{"a":10,"b":20}`, nil},
		{"same change both sides", `{"a":1}`, `{"a":2}`, `{"a":2}`, `{"a":2}`, nil},
		{"nested disjoint", `{"cfg":{"x":1,"y":1}}`, `{"cfg":{"x":2,"y":1}}`, `{"cfg":{"x":1,"y":3}}`, `{"cfg":{"x":2,"y":3}}`, nil},
		{"add and remove", `{"a":1,"b":2}`, `{"a":1,"b":2,"c":3}`, `{"a":1}`, `{"a":1,"c":3}`, nil},
		{"conflict", `{"a":1}`, `{"a":2}`, `{"a":3}`, "", []string{"/a"}},
		{"remove vs change", `{"a":{"x":1}}`, `{}`, `{"a":{"x":2}}`, "", []string{"/a"}},
		{"both add differently", `{}`, `{"n":1}`, `{"n":2}`, "", []string{"/n"}},
		{"array elementwise", `[1,2,3]`, `[9,2,3]`, `[1,2,8]`, `[9,2,8]`, nil},
		{"array length changed", `[1,2,3]`, `[1,2,3,4]`, `[0,2,3]`, "", []string{""}},
		{"type change", `{"a":[1]}`, `{"a":"x"}`, `{"a":[2]}`, "", []string{"/a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base, ours, theirs := mustImport(t, f, c.base), mustImport(t, f, c.ours), mustImport(t, f, c.theirs)
			ch, conflicts, err := f.Merge(ctx, base, ours, theirs)
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "" {
				if ch != nil || len(conflicts) != len(c.conflicts) {
					t.Fatalf("want conflicts at %v, got %v (change %v)", c.conflicts, conflicts, ch)
				}
				for i, p := range c.conflicts {
					if conflicts[i].Path != p || conflicts[i].Reason == "" {
						t.Fatalf("conflict %d: %+v, want path %q", i, conflicts[i], p)
					}
				}
				return
			}
			if len(conflicts) > 0 {
				t.Fatalf("unexpected conflicts %v", conflicts)
			}
			if _, err := f.Save(ctx, ch); err != nil {
				t.Fatal(err)
			}
			if got := mustJSON(t, f, ch.Root); got != canonical(t, []byte(c.want)) {
				t.Fatalf("got %s want %s", got, c.want)
			}
		})
	}
}

func TestMergeLargeDocuments(t *testing.T) {
	ctx := context.Background()
	f, _ := newForest(t)
	doc := `{"users":` + string(userDoc(30000)) + `,"config":{"mode":"a","limit":5}}`
	base := mustImport(t, f, doc)
	ours := mustPatch(t, f, base, `[{"op":"replace","path":"/users/100/name","value":"ours"},{"op":"replace","path":"/config/mode","value":"b"}]`)
	theirs := mustPatch(t, f, base, `[{"op":"replace","path":"/users/29000/score","value":-1},{"op":"add","path":"/config/new","value":true}]`)
	ch, conflicts, err := f.Merge(ctx, base, ours, theirs)
	if err != nil || len(conflicts) > 0 {
		t.Fatalf("merge: %v %v", err, conflicts)
	}
	if _, err := f.Save(ctx, ch); err != nil {
		t.Fatal(err)
	}
	want := mustPatch(t, f, ours, `[{"op":"replace","path":"/users/29000/score","value":-1},{"op":"add","path":"/config/new","value":true}]`)
	if ch.Root != want {
		t.Fatal("merged tree differs from applying both changes")
	}
	// Changing the same element two ways is a conflict naming the exact path and both values.
	theirs2 := mustPatch(t, f, base, `[{"op":"replace","path":"/users/100/name","value":"theirs"}]`)
	_, conflicts, err = f.Merge(ctx, base, ours, theirs2)
	if err != nil || len(conflicts) != 1 || conflicts[0].Path != "/users/100/name" {
		t.Fatalf("conflicts %v err %v", conflicts, err)
	}
	if o, th := mustJSON(t, f, conflicts[0].Ours), mustJSON(t, f, conflicts[0].Theirs); o != `"ours"` || th != `"theirs"` {
		t.Fatalf("conflict sides %s / %s", o, th)
	}
	if !strings.Contains(conflicts[0].String(), "changed on both sides") {
		t.Fatal(conflicts[0].String())
	}
}

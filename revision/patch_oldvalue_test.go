package revision

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// old_value is a precondition: the operation applies only where the value still equals it.
func TestPatchOldValue(t *testing.T) {
	ctx := context.Background()
	f, _ := newForest(t)
	root := mustImport(t, f, `{"price":10,"tags":["a","b"],"big":[`+strings.Repeat(`"xxxxxxxxxx",`, 40)+`"end"]}`)
	apply := func(patch string) (string, error) {
		t.Helper()
		ops, err := ParsePatch([]byte(patch))
		if err != nil {
			t.Fatalf("%s: %v", patch, err)
		}
		v, _, err := f.Apply(ctx, root, ops)
		if err != nil {
			return "", err
		}
		return mustJSON(t, f, v), nil
	}
	// Equal by value, as test compares: 10 and 10.0 are the same number.
	if got, err := apply(`[{"op":"replace","path":"/price","value":12,"old_value":10.0},{"op":"remove","path":"/tags/0","old_value":"a"}]`); err != nil || !strings.HasPrefix(got, `{"big":`) || !strings.Contains(got, `"price":12,"tags":["b"]`) {
		t.Fatalf("old_value that holds: %s, %v", got, err)
	}
	for _, tc := range []struct{ patch, have, want string }{
		{`[{"op":"replace","path":"/price","value":12,"old_value":11}]`, "10", "11"},
		{`[{"op":"remove","path":"/tags/1","old_value":"a"}]`, `"b"`, `"a"`},
		// checked after the operations before it, in order
		{`[{"op":"remove","path":"/tags/0"},{"op":"remove","path":"/tags/0","old_value":"a"}]`, `"b"`, `"a"`},
		{`[{"op":"remove","path":"/missing","old_value":1}]`, "", "1"},
		{`[{"op":"replace","path":"/big","value":1,"old_value":[]}]`, "(array of ", "[]"},
	} {
		_, err := apply(tc.patch)
		var pe *PathError
		if !errors.Is(err, ErrTestFailed) || !errors.As(err, &pe) {
			t.Fatalf("%s: %v, want a failed precondition", tc.patch, err)
		}
		if !strings.HasPrefix(pe.Have, tc.have) || pe.Want != tc.want || !strings.Contains(err.Error(), "old_value does not hold") {
			t.Errorf("%s: have %q want %q: %v", tc.patch, pe.Have, pe.Want, err)
		}
	}
}

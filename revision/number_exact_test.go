package revision

import (
	"context"
	"errors"
	"testing"
)

// A number with an exponent of more than 15 digits loses its sign: -1e9999999999999999 tests equal to 1e9999999999999999.
func TestNumberSignHugeExponent(t *testing.T) {
	f, _ := newForest(t)
	root := mustImport(t, f, `{"n":-1e9999999999999999}`)
	for _, patch := range []string{
		`[{"op":"test","path":"/n","value":1e9999999999999999}]`,
		`[{"op":"remove","path":"/n","old_value":1e9999999999999999}]`,
	} {
		ops, _ := ParsePatch([]byte(patch))
		if _, err := f.Patch(context.Background(), root, ops); !errors.Is(err, ErrTestFailed) {
			t.Errorf("%s on -1e9999999999999999: %v, want ErrTestFailed", patch, err)
		}
	}
	if numbersEqual("-1e9999999999999999", "1e9999999999999999") {
		t.Error("numbersEqual(-1e9999999999999999, 1e9999999999999999) = true")
	}
	if !numbersEqual("-0e9999999999999999", "0") {
		t.Error("numbersEqual(-0e9999999999999999, 0) = false")
	}
}

// TestNumbersEqualHugeExponents: numbers with exponents of any size compare by value, as RFC 6902 §4.6 asks:
// equal ones written differently are equal, and the sign counts.
func TestNumbersEqualHugeExponents(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"1e9999999999999999", "10e9999999999999998", true},
		{"1e9999999999999999", "0.1e10000000000000000", true},
		{"-1e99999999999999999999", "-1.0e99999999999999999999", true},
		{"1e99999999999999999999", "1e99999999999999999998", false},
		{"-1e-99999999999999999999", "1e-99999999999999999999", false},
		{"1e-9999999999999999", "100e-10000000000000001", true},
		{"0e99999999999999999999", "-0.0", true},
		{"1e+9999999999999999", "1E9999999999999999", true},
		{"123.45", "1.2345e2", true},
		{"1", "1.0", true},
	} {
		if got := numbersEqual(c.a, c.b); got != c.want {
			t.Errorf("numbersEqual(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := numbersEqual(c.b, c.a); got != c.want {
			t.Errorf("numbersEqual(%s, %s) = %v, want %v", c.b, c.a, got, c.want)
		}
	}
}

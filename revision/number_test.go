package revision

import "testing"

func TestNumbersEqual(t *testing.T) {
	for _, c := range []struct {
		a, b string
		eq   bool
	}{
		{"1", "1.0", true}, {"1", "10e-1", true}, {"100", "1e2", true}, {"1E+2", "100.00", true},
		{"-0", "0", true}, {"0.0", "0e10", true}, {"1e1000001", "10e1000000", true}, {"-2E-1000001", "-0.2e-1000000", true},
		{"1", "2", false}, {"1", "-1", false}, {"0.1", "0.01", false}, {"123", "1230e-1", true}, {"123", "1231e-1", false},
		{"12345678901234567891", "12345678901234567891.0", true}, {"12345678901234567891", "12345678901234567890", false},
	} {
		if got := numbersEqual(c.a, c.b); got != c.eq {
			t.Errorf("%s == %s: got %v", c.a, c.b, got)
		}
	}
}

package revision

import (
	"strconv"
	"strings"
)

// numbersEqual compares two JSON number texts by value (RFC 6902 §4.6: 1, 1.0 and 10e-1 are equal) in time linear in
// their length, whatever their exponents: the texts are reduced to sign, significant digits and a decimal exponent.
func numbersEqual(a, b string) bool {
	if a == b {
		return true
	}
	na, ok1 := normalizeNumber(a)
	nb, ok2 := normalizeNumber(b)
	return ok1 && ok2 && na == nb
}

type decimal struct {
	neg    bool
	digits string // significant digits, no leading or trailing zeros ("" for zero)
	exp    int64  // value = 0.digits × 10^exp
}

func normalizeNumber(s string) (decimal, bool) {
	var d decimal
	if strings.HasPrefix(s, "-") {
		d.neg = true
		s = s[1:]
	}
	mant, exp := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i+1:]
	}
	var e int64
	if exp != "" {
		// Exponents beyond ±1e15 are compared as texts; nothing real is that large.
		if len(strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")) > 15 {
			return decimal{digits: s}, true
		}
		var err error
		if e, err = strconv.ParseInt(exp, 10, 64); err != nil {
			return d, false
		}
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	digits := intPart + frac
	e += int64(len(intPart))
	trimmed := strings.TrimLeft(digits, "0")
	e -= int64(len(digits) - len(trimmed))
	trimmed = strings.TrimRight(trimmed, "0")
	if trimmed == "" {
		return decimal{}, true // zero, and -0 equals 0
	}
	d.digits, d.exp = trimmed, e
	return d, true
}

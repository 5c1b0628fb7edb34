package revision

import (
	"math/big"
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
	exp    int64  // value = 0.digits × 10^exp, when exp fits an int64 (big is "")
	big    string // else the exponent in decimal: JSON allows any, "1e99999999999999999999" included
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
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	digits := intPart + frac
	trimmed := strings.TrimLeft(digits, "0")
	shift := int64(len(intPart)) - int64(len(digits)-len(trimmed)) // what the mantissa adds to the exponent
	trimmed = strings.TrimRight(trimmed, "0")
	if trimmed == "" {
		return decimal{}, true // zero, whatever its exponent, and -0 equals 0
	}
	d.digits = trimmed
	if exp == "" {
		d.exp = shift
		return d, true
	}
	if len(strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")) <= 15 {
		e, err := strconv.ParseInt(exp, 10, 64)
		if err != nil {
			return d, false
		}
		d.exp = e + shift
		return d, true
	}
	// A huge exponent: exact arithmetic, so that equal values written differently compare equal (found in review:
	// such texts were compared as texts, and the sign was lost, so -1e9999999999999999 equalled 1e9999999999999999).
	var e big.Int
	if _, ok := e.SetString(strings.TrimPrefix(exp, "+"), 10); !ok {
		return d, false
	}
	e.Add(&e, big.NewInt(shift))
	if e.IsInt64() {
		d.exp = e.Int64()
	} else {
		d.big = e.String()
	}
	return d, true
}

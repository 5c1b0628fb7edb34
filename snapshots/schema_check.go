package snapshots

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/strata-db/strata/revision"
)

// Checking a value against a schema, at a cost that follows the change (docs/design.md §3.8).
//
// check(s, a, b) checks a value b against a schema s given the value a it replaces, which is known to satisfy s (or
// is the zero Value: then b is checked whole). Where a and b are the same value (same hash) nothing is read. Where
// they differ, the keywords of s are split in two:
//
//   - keywords that look into children — properties, patternProperties, additionalProperties, prefixItems, items,
//     and the in-place allOf, $ref and dependentSchemas — are applied only to the members and elements that
//     changed, each against the old child it replaces (revision.Forest.EachChangedMember, ArrayChanges);
//   - keywords about the container as a whole are re-checked on b: type, required, minProperties, maxProperties,
//     dependentRequired, propertyNames (for new names), minItems, maxItems, uniqueItems (by equality hashes of the
//     elements: a pass over the array, elements are not validated) and contains (only the removed and added
//     elements are matched, unless a match was lost or maxContains is set: then every element).
//
// A value smaller than wholeBelow (4 KiB of JSON) is checked whole by the library, as any scalar is. A schema with
// a keyword whose result depends on the whole value in a way that cannot be split — not, anyOf,
// oneOf, if/then/else, unevaluatedProperties, unevaluatedItems, const, enum and format (on an object or array) — is
// applied by the library to the whole of b at that place (materialised). A schema that uses $dynamicRef anywhere is always applied whole, at the root. The library
// (github.com/santhosh-tekuri/jsonschema/v6) judges everything that is not split; a differential test holds the
// two ways of checking to the same verdict (schema_check_test.go).

var printer = message.NewPrinter(language.English)

// wholeBelow is the size (as JSON) under which a value is checked whole by the library, changed or not: splitting
// the check of a small value costs more than it saves. Tests set it to 0 to split everything.
var wholeBelow uint64 = 4096

// collector counts violations and keeps the first MaxViolations in path order.
type collector struct {
	count int
	kept  []Violation
}

func (c *collector) add(v Violation) {
	c.count++
	i, found := slices.BinarySearchFunc(c.kept, v, compareViolations)
	if found {
		return
	}
	if len(c.kept) == MaxViolations {
		if i == MaxViolations {
			return
		}
		c.kept = c.kept[:MaxViolations-1]
	}
	c.kept = slices.Insert(c.kept, i, v)
}

// compareViolations orders violations by path (array indexes as numbers), then keyword and message.
func compareViolations(a, b Violation) int {
	pa, _ := revision.ParsePointer(a.Path)
	pb, _ := revision.ParsePointer(b.Path)
	for i := 0; i < len(pa) && i < len(pb); i++ {
		if pa[i] == pb[i] {
			continue
		}
		na, ea := strconv.ParseUint(pa[i], 10, 64)
		nb, eb := strconv.ParseUint(pb[i], 10, 64)
		if ea == nil && eb == nil {
			return cmp.Compare(na, nb)
		}
		return strings.Compare(pa[i], pb[i])
	}
	if c := cmp.Compare(len(pa), len(pb)); c != 0 {
		return c
	}
	if c := strings.Compare(a.Keyword, b.Keyword); c != 0 {
		return c
	}
	return strings.Compare(a.Message, b.Message)
}

type checker struct {
	ctx context.Context
	f   *revision.Forest
	out collector
}

func newChecker(ctx context.Context, f *revision.Forest) *checker { return &checker{ctx: ctx, f: f} }

// run checks b against a compiled schema, incrementally from a when a is valid (not the zero Value).
func (c *checker) run(cs *compiledSchema, a, b revision.Value) error {
	if cs.whole {
		return c.lib(cs.root, b, nil)
	}
	return c.check(cs.root, a, b, nil, nil)
}

// violation records a failure the checker found itself, with the library's wording.
func (c *checker) violation(p revision.Pointer, k jsonschema.ErrorKind) {
	c.out.add(Violation{Path: p.String(), Keyword: keywordOf(k), Message: kindMessage(k)})
}

// falseSchema records a value under a false schema, naming the keyword whose subschema it is (the library's kind
// names none: found in review, unevaluatedProperties: false answered "/b (false): false schema").
func (c *checker) falseSchema(p revision.Pointer, location string) {
	kw, at := falseKeyword(location)
	c.out.add(Violation{Path: p.String(), Keyword: kw, Message: falseMessage(kw, at)})
}

// falseKeyword is the keyword whose subschema is the false schema at location (an absolute schema URL), and the
// location's fragment.
func falseKeyword(location string) (string, string) {
	_, frag, _ := strings.Cut(location, "#")
	toks := strings.Split(frag, "/")
	if frag == "" || len(toks) < 2 {
		return "false", frag
	}
	parent := map[string]bool{"properties": true, "patternProperties": true, "prefixItems": true, "dependentSchemas": true,
		"allOf": true, "anyOf": true, "oneOf": true}
	if len(toks) >= 3 && parent[toks[len(toks)-2]] {
		return toks[len(toks)-2], frag
	}
	if len(toks) >= 3 && (toks[len(toks)-2] == "$defs" || toks[len(toks)-2] == "definitions") {
		// A definition's name is the author's, not a keyword: a definition applies only through a reference.
		return "$ref", frag
	}
	if last := toks[len(toks)-1]; last != "" && !strings.HasPrefix(last, "$") {
		if _, err := strconv.Atoi(last); err != nil {
			return last, frag
		}
	}
	return "false", frag
}

func falseMessage(kw, at string) string {
	if kw == "false" {
		return "false schema: no value is allowed here"
	}
	return fmt.Sprintf("no value is allowed here: the schema at %s is false", "#"+at)
}

// kindMessage is the library's message for a failure, with the numbers of the numeric keywords exact: the library
// prints them through float64 (found in review: one over a maximum of 2^53 read "got 9.007199254740992×10¹⁵, want
// 9.007199254740992×10¹⁵", one over 1e400 "got ∞, want ∞"), which Strata, storing numbers exactly, must not.
func kindMessage(k jsonschema.ErrorKind) string {
	var name string
	var got, want *big.Rat
	switch k := k.(type) {
	case *kind.Maximum:
		name, got, want = "maximum", k.Got, k.Want
	case *kind.Minimum:
		name, got, want = "minimum", k.Got, k.Want
	case *kind.ExclusiveMaximum:
		name, got, want = "exclusiveMaximum", k.Got, k.Want
	case *kind.ExclusiveMinimum:
		name, got, want = "exclusiveMinimum", k.Got, k.Want
	case *kind.MultipleOf:
		name, got, want = "multipleOf", k.Got, k.Want
	default:
		return k.LocalizedString(printer)
	}
	if got == nil || want == nil {
		return k.LocalizedString(printer)
	}
	return fmt.Sprintf("%s: got %s, want %s", name, ratText(got), ratText(want))
}

// ratText writes a number the validator compared (a decimal JSON number, so its denominator is 2^a·5^b) exactly:
// plainly when short, else as digits and a decimal exponent.
func ratText(r *big.Rat) string {
	d := new(big.Int).Set(r.Denom())
	a := d.TrailingZeroBits()
	d.Rsh(d, a)
	places := a
	if d.Cmp(big.NewInt(1)) != 0 {
		// d is 5^b: its bit length is floor(b·log2 5)+1.
		b := uint(math.Round(float64(d.BitLen()-1) / math.Log2(5)))
		found := false
		for _, x := range []uint{b, b + 1, b - 1} {
			if new(big.Int).Exp(big.NewInt(5), big.NewInt(int64(x)), nil).Cmp(d) == 0 {
				b, found = x, true
				break
			}
		}
		if !found { // not a decimal number: say so rather than round it silently
			return r.RatString()
		}
		places = max(places, b)
	}
	s := r.FloatString(int(places))
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	frac = strings.TrimRight(frac, "0")
	if len(intPart)+len(frac) <= 24 {
		if frac == "" {
			return sign + intPart
		}
		return sign + intPart + "." + frac
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	exp := len(intPart) - (len(intPart) + len(frac) - len(digits)) - 1 // of the first significant digit
	digits = strings.TrimRight(digits, "0")
	if len(digits) > 1 {
		digits = digits[:1] + "." + digits[1:]
	}
	return sign + digits + "e" + strconv.Itoa(exp)
}

func keywordOf(k jsonschema.ErrorKind) string {
	switch k.(type) {
	case *kind.Not:
		return "not"
	case *kind.AnyOf:
		return "anyOf"
	case *kind.OneOf:
		return "oneOf"
	case *kind.AllOf:
		return "allOf"
	case *kind.FalseSchema:
		return "false"
	case *kind.RefCycle:
		return "$ref"
	case *kind.InvalidJsonValue:
		return "type"
	}
	if kp := k.KeywordPath(); len(kp) > 0 {
		return kp[0]
	}
	return "schema"
}

// needsWhole reports whether s has a keyword that is applied to a whole container at once (see above).
func needsWhole(s *jsonschema.Schema) bool {
	return s.Not != nil || len(s.AnyOf) > 0 || len(s.OneOf) > 0 || s.If != nil || s.UnevaluatedProperties != nil ||
		s.UnevaluatedItems != nil || s.DynamicRef != nil || s.RecursiveRef != nil || len(s.Extensions) > 0 ||
		s.Dependencies != nil || s.Items != nil || s.AdditionalItems != nil || s.Const != nil || s.Enum != nil ||
		s.Format != nil || s.DraftVersion != 2020
}

// check checks b against s given a (see the top of this file). stack holds the schemas applied in place at this
// value on the way to s (through $ref, allOf, dependentSchemas), to find reference cycles as the library does.
func (c *checker) check(s *jsonschema.Schema, a, b revision.Value, p revision.Pointer, stack []*jsonschema.Schema) error {
	if a.IsValid() && a == b {
		return nil
	}
	if err := c.ctx.Err(); err != nil {
		return err
	}
	if s.Bool != nil {
		if !*s.Bool {
			c.falseSchema(p, s.Location)
		}
		return nil
	}
	if slices.Contains(stack, s) {
		c.violation(p, &kind.RefCycle{URL: s.Location, KeywordLocation1: "", KeywordLocation2: ""})
		return nil
	}
	k := b.Kind()
	if (k != revision.Object && k != revision.Array) || b.Size() <= wholeBelow || needsWhole(s) {
		return c.lib(s, b, p)
	}
	if s.Types != nil && !s.Types.IsEmpty() {
		want := s.Types.ToStrings()
		if !slices.Contains(want, k.String()) {
			c.violation(p, &kind.Type{Got: k.String(), Want: want})
			return nil
		}
	}
	if a.IsValid() && a.Kind() != k {
		a = revision.Value{}
	}
	stack = append(stack, s)
	if s.Ref != nil {
		if err := c.check(s.Ref, a, b, p, stack); err != nil {
			return err
		}
	}
	for _, x := range s.AllOf {
		if err := c.check(x, a, b, p, stack); err != nil {
			return err
		}
	}
	if k == revision.Object {
		return c.object(s, a, b, p, stack)
	}
	return c.array(s, a, b, p)
}

// has reports whether object v has a member named key.
func (c *checker) has(v revision.Value, key string) (bool, error) {
	_, err := c.f.Get(c.ctx, v, revision.Pointer{key})
	if errors.Is(err, revision.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (c *checker) missing(v revision.Value, names []string) ([]string, error) {
	var out []string
	for _, n := range names {
		ok, err := c.has(v, n)
		if err != nil {
			return nil, err
		}
		if !ok {
			out = append(out, n)
		}
	}
	return out, nil
}

func (c *checker) object(s *jsonschema.Schema, a, b revision.Value, p revision.Pointer, stack []*jsonschema.Schema) error {
	n := int(b.Len())
	if s.MinProperties != nil && n < *s.MinProperties {
		c.violation(p, &kind.MinProperties{Got: n, Want: *s.MinProperties})
	}
	if s.MaxProperties != nil && n > *s.MaxProperties {
		c.violation(p, &kind.MaxProperties{Got: n, Want: *s.MaxProperties})
	}
	if len(s.Required) > 0 {
		miss, err := c.missing(b, s.Required)
		if err != nil {
			return err
		}
		if len(miss) > 0 {
			c.violation(p, &kind.Required{Missing: miss})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.DependentRequired)) {
		if ok, err := c.has(b, name); err != nil {
			return err
		} else if !ok {
			continue
		}
		miss, err := c.missing(b, s.DependentRequired[name])
		if err != nil {
			return err
		}
		if len(miss) > 0 {
			c.violation(p, &kind.DependentRequired{Prop: name, Missing: miss})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.DependentSchemas)) {
		if ok, err := c.has(b, name); err != nil {
			return err
		} else if !ok {
			continue
		}
		aa := a
		if aa.IsValid() {
			if ok, err := c.has(a, name); err != nil {
				return err
			} else if !ok {
				aa = revision.Value{} // newly required: check b whole against it
			}
		}
		if err := c.check(s.DependentSchemas[name], aa, b, p, stack); err != nil {
			return err
		}
	}
	var additional []string
	err := c.f.EachChangedMember(c.ctx, a, b, func(key string, va, vb revision.Value) error {
		if !vb.IsValid() {
			return nil // a removal: the whole-object keywords above saw it
		}
		if !va.IsValid() && s.PropertyNames != nil {
			if verr := safeValidate(s.PropertyNames, key); verr != nil {
				c.violation(p, &kind.PropertyNames{Property: key})
			}
		}
		q := p.Child(key)
		evaluated := false
		if x, ok := s.Properties[key]; ok {
			evaluated = true
			if err := c.check(x, va, vb, q, nil); err != nil {
				return err
			}
		}
		for re, x := range s.PatternProperties {
			if re.MatchString(key) {
				evaluated = true
				if err := c.check(x, va, vb, q, nil); err != nil {
					return err
				}
			}
		}
		if !evaluated && s.AdditionalProperties != nil {
			switch ap := s.AdditionalProperties.(type) {
			case bool:
				if !ap {
					additional = append(additional, key)
				}
			case *jsonschema.Schema:
				return c.check(ap, va, vb, q, nil)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(additional) > 0 {
		c.violation(p, &kind.AdditionalProperties{Properties: additional})
	}
	return nil
}

func (c *checker) array(s *jsonschema.Schema, a, b revision.Value, p revision.Pointer) error {
	n := b.Len()
	if s.MinItems != nil && n < uint64(*s.MinItems) {
		c.violation(p, &kind.MinItems{Got: int(n), Want: *s.MinItems})
	}
	if s.MaxItems != nil && n > uint64(*s.MaxItems) {
		c.violation(p, &kind.MaxItems{Got: int(n), Want: *s.MaxItems})
	}
	prefix := uint64(len(s.PrefixItems))
	at := func(i uint64) *jsonschema.Schema {
		if i < prefix {
			return s.PrefixItems[i]
		}
		return s.Items2020
	}
	idx := func(i uint64) revision.Pointer { return p.Child(strconv.FormatUint(i, 10)) }

	if !a.IsValid() {
		// Whole: every element against its schema, one at a time.
		var i uint64
		err := c.f.Members(c.ctx, b, func(_ string, v revision.Value) error {
			defer func() { i++ }()
			if g := at(i); g != nil {
				return c.check(g, revision.Value{}, v, idx(i), nil)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if s.UniqueItems && n > 1 {
			if err := c.unique(b, p); err != nil {
				return err
			}
		}
		if s.Contains != nil {
			return c.containsWhole(s, b, p)
		}
		return nil
	}

	changes, err := c.f.ArrayChanges(c.ctx, a, b)
	if err != nil {
		return err
	}
	added, shifted := false, false
	var ins uint64
	for _, ch := range changes {
		for k, vb := range ch.Added {
			i := ch.B + uint64(k)
			g := at(i)
			if g == nil {
				continue
			}
			va := revision.Value{}
			if k < len(ch.Removed) && at(ch.A+uint64(k)) == g {
				va = ch.Removed[k]
			}
			if err := c.check(g, va, vb, idx(i), nil); err != nil {
				return err
			}
		}
		added = added || len(ch.Added) > 0
		shifted = shifted || len(ch.Added) != len(ch.Removed)
		ins += uint64(len(ch.Added))
	}
	if prefix > 0 && shifted {
		// Elements carried over but moved may have moved between prefixItems and items (or within prefixItems):
		// check those whose schema changed, whole. Only the first prefix+ins elements can have.
		if err := c.shiftedPrefix(at, changes, b, min(n, prefix+ins), idx); err != nil {
			return err
		}
	}
	if s.UniqueItems && n > 1 && added {
		if err := c.unique(b, p); err != nil {
			return err
		}
	}
	if s.Contains != nil {
		lost, gained := 0, 0
		for _, ch := range changes {
			for _, v := range ch.Removed {
				if ok, err := c.matches(s.Contains, v); err != nil {
					return err
				} else if ok {
					lost++
				}
			}
			for _, v := range ch.Added {
				if ok, err := c.matches(s.Contains, v); err != nil {
					return err
				} else if ok {
					gained++
				}
			}
		}
		if lost > 0 || (s.MaxContains != nil && gained > 0) {
			return c.containsWhole(s, b, p)
		}
	}
	return nil
}

// shiftedPrefix checks, whole, each element of b below limit that was carried over from a but now sits where
// another schema applies than where it was.
func (c *checker) shiftedPrefix(at func(uint64) *jsonschema.Schema, changes []revision.ArrayChange, b revision.Value, limit uint64, idx func(uint64) revision.Pointer) error {
	ci := 0
	var delta int64 // a's index minus b's for carried-over elements before the next change
	for i := uint64(0); i < limit; i++ {
		for ci < len(changes) && changes[ci].B+uint64(len(changes[ci].Added)) <= i {
			delta += int64(len(changes[ci].Removed)) - int64(len(changes[ci].Added))
			ci++
		}
		if ci < len(changes) && i >= changes[ci].B {
			continue // an added element: checked already
		}
		j := uint64(int64(i) + delta)
		g := at(i)
		if g == nil || g == at(j) {
			continue
		}
		v, err := c.f.Get(c.ctx, b, revision.Pointer{strconv.FormatUint(i, 10)})
		if err != nil {
			return err
		}
		if err := c.check(g, revision.Value{}, v, idx(i), nil); err != nil {
			return err
		}
	}
	return nil
}

// unique checks uniqueItems over every element of b, by equality hashes (equal hashes are compared exactly).
func (c *checker) unique(b revision.Value, p revision.Pointer) error {
	seen := map[uint64][]uint64{}
	var i uint64
	err := c.f.Members(c.ctx, b, func(_ string, v revision.Value) error {
		defer func() { i++ }()
		h, err := c.f.EqualityHash(c.ctx, v)
		if err != nil {
			return err
		}
		for _, j := range seen[h] {
			other, err := c.f.Get(c.ctx, b, revision.Pointer{strconv.FormatUint(j, 10)})
			if err != nil {
				return err
			}
			eq, err := c.equal(other, v)
			if err != nil {
				return err
			}
			if eq {
				c.violation(p, &kind.UniqueItems{Duplicates: [2]int{int(j), int(i)}})
				return errStopScan
			}
		}
		seen[h] = append(seen[h], i)
		return nil
	})
	if err == errStopScan {
		err = nil
	}
	return err
}

func (c *checker) equal(x, y revision.Value) (bool, error) {
	if x == y {
		return true, nil
	}
	mx, err := c.f.Materialize(c.ctx, x)
	if err != nil {
		return false, err
	}
	my, err := c.f.Materialize(c.ctx, y)
	if err != nil {
		return false, err
	}
	return jsonEqual(mx, my), nil
}

// jsonEqual is JSON Schema's equality of materialised values: numbers by value.
func jsonEqual(x, y any) bool {
	switch x := x.(type) {
	case map[string]any:
		y, ok := y.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, vx := range x {
			vy, ok := y[k]
			if !ok || !jsonEqual(vx, vy) {
				return false
			}
		}
		return true
	case []any:
		y, ok := y.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case int, json.Number:
		switch y.(type) {
		case int, json.Number:
		default:
			return false
		}
		rx, ok1 := new(big.Rat).SetString(fmt.Sprint(x))
		ry, ok2 := new(big.Rat).SetString(fmt.Sprint(y))
		return ok1 && ok2 && rx.Cmp(ry) == 0
	default:
		return x == y
	}
}

// matches reports whether v satisfies s (contains).
func (c *checker) matches(s *jsonschema.Schema, v revision.Value) (bool, error) {
	x, err := c.f.Materialize(c.ctx, v)
	if err != nil {
		return false, err
	}
	return safeValidate(s, x) == nil, nil
}

// containsWhole checks contains, minContains and maxContains by matching every element of b.
func (c *checker) containsWhole(s *jsonschema.Schema, b revision.Value, p revision.Pointer) error {
	var matched []int
	count := 0
	var i int
	err := c.f.Members(c.ctx, b, func(_ string, v revision.Value) error {
		defer func() { i++ }()
		ok, err := c.matches(s.Contains, v)
		if ok {
			count++
			if len(matched) < MaxViolations {
				matched = append(matched, i)
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	if s.MinContains != nil {
		if count < *s.MinContains {
			c.violation(p, &kind.MinContains{Got: matched, Want: *s.MinContains})
		}
	} else if count == 0 {
		c.violation(p, &kind.Contains{})
	}
	if s.MaxContains != nil && count > *s.MaxContains {
		c.violation(p, &kind.MaxContains{Got: matched, Want: *s.MaxContains})
	}
	return nil
}

// lib applies s to the whole of v with the library.
// maxCheckWhole bounds the value, in bytes of JSON, that a schema check reads whole into the validator. A value's size
// is not bounded by what requests carry (copy doubles a value in O(1), its nodes shared): found in review, a patch of
// a few copies under a schema whose keywords need the whole value (anyOf, say) held the writer for minutes.
const maxCheckWhole = 256 << 20

func (c *checker) lib(s *jsonschema.Schema, v revision.Value, p revision.Pointer) error {
	if n := v.Size(); n > maxCheckWhole {
		return fmt.Errorf("%w: the value at %q is %d bytes of JSON, more than the %d MiB its schema (%s) can be checked on whole; "+
			"nothing was written: write a smaller value there, or give it a schema whose keywords apply member by member",
			revision.ErrLimit, p.String(), n, maxCheckWhole>>20, s.Location)
	}
	x, err := c.f.Materialize(c.ctx, v)
	if err != nil {
		return err
	}
	verr := safeValidate(s, x)
	if verr == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(verr, &ve) {
		// The validator failed on the value (a number it cannot represent, say): refuse, naming where.
		at := p
		if q, ok := badNumber(x, nil); ok {
			at = append(slices.Clone(p), q...)
		}
		c.out.add(Violation{Path: at.String(), Keyword: "type", Message: verr.Error()})
		return nil
	}
	c.collect(ve, p)
	return nil
}

// collect records the failures a library error holds: the leaves under the conjunctive wrappers; an anyOf,
// oneOf, not, contains or propertyNames failure is one violation, its first causes quoted in its message.
func (c *checker) collect(ve *jsonschema.ValidationError, p revision.Pointer) {
	switch ve.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		for _, cause := range ve.Causes {
			c.collect(cause, p)
		}
		return
	}
	msg := kindMessage(ve.ErrorKind)
	if len(ve.Causes) > 0 {
		var leaves []string
		var walk func(*jsonschema.ValidationError)
		walk = func(e *jsonschema.ValidationError) {
			if len(leaves) == 3 {
				return
			}
			if len(e.Causes) == 0 {
				at := revision.Pointer(e.InstanceLocation).String()
				if at == "" {
					at = `""`
				}
				leaves = append(leaves, at+": "+kindMessage(e.ErrorKind))
				return
			}
			for _, x := range e.Causes {
				walk(x)
			}
		}
		for _, x := range ve.Causes {
			walk(x)
		}
		msg += " (" + strings.Join(leaves, "; ") + ")"
	}
	path := append(slices.Clone(p), ve.InstanceLocation...)
	if _, ok := ve.ErrorKind.(*kind.FalseSchema); ok {
		c.falseSchema(path, ve.SchemaURL)
		return
	}
	c.out.add(Violation{Path: path.String(), Keyword: keywordOf(ve.ErrorKind), Message: msg})
}

// safeValidate runs the library, turning a panic into an error: it dereferences numbers it could not parse
// (exponents beyond about a million), and nothing stored may stop the writer.
func safeValidate(s *jsonschema.Schema, x any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			// Not the panic's own text ("runtime error: invalid memory address or nil pointer dereference"): it is
			// the caller's answer, and says nothing they can act on (found in review).
			err = errors.New("the schema validator cannot check this value: it holds a number whose exponent is out of the validator's range (beyond ±1,000,000); write it with a smaller exponent")
		}
	}()
	return s.Validate(x)
}

// badNumber finds a number the validator cannot represent.
func badNumber(x any, at revision.Pointer) (revision.Pointer, bool) {
	switch x := x.(type) {
	case json.Number:
		if _, ok := new(big.Rat).SetString(string(x)); !ok {
			return at, true
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if q, ok := badNumber(x[k], at.Child(k)); ok {
				return q, true
			}
		}
	case []any:
		for i, v := range x {
			if q, ok := badNumber(v, at.Child(strconv.Itoa(i))); ok {
				return q, true
			}
		}
	}
	return nil, false
}

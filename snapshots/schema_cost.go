package snapshots

import (
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/strata-db/strata/revision"
)

// MaxSchemaWork bounds the subschema evaluations a schema may cost on any one value of a document (a node: the
// document itself, a member, an element). A schema's text is bounded by MaxSchemaBytes, but not what it costs:
// subschemas applied to the same value multiply — an allOf of two $refs to a schema that does the same, twenty
// deep, is about a kilobyte and costs a million evaluations on every value, forty deep a trillion — and a check
// runs on the database's one writer, where it cannot be interrupted. Such a schema is refused when it is set.
const MaxSchemaWork = 10_000

// schemaWork is the most subschema evaluations s can cost on one value of a document, over every document Strata
// can store (nesting at most revision.MaxDepth deep), computed on an over-approximation of the validator:
//
//   - in place (the same value): $ref, $dynamicRef (each anchor it may resolve to: the largest), $recursiveRef,
//     not, if, then, else, allOf, anyOf, oneOf, dependentSchemas, dependencies — all evaluated, as if none
//     stopped early;
//   - on a member or element (one level down): the subschemas that may apply to one child — properties[k] for one
//     k, every patternProperties, additionalProperties and unevaluatedProperties; or prefixItems[i] or items,
//     with contains, additionalItems and unevaluatedItems; or propertyNames on a key — the costliest choice.
//
// A cycle of in-place references is cut: the validator refuses such a loop instead of running it. The result
// stops growing at limit+1: over is all that matters then.
func schemaWork(root *jsonschema.Schema, limit int) int {
	type node struct {
		inplace [][]int // groups: each costs its costliest member (several only for a $dynamicRef)
		choices [][]int // the child slots: each costs the sum of its members; a child costs the costliest slot
	}
	index := map[*jsonschema.Schema]int{}
	var all []*jsonschema.Schema
	var add func(s *jsonschema.Schema)
	add = func(s *jsonschema.Schema) {
		if s == nil {
			return
		}
		if _, ok := index[s]; ok {
			return
		}
		index[s] = len(all)
		all = append(all, s)
		for _, c := range subschemas(s) {
			add(c)
		}
	}
	add(root)
	anchors := map[string][]int{} // $dynamicAnchor name → the schemas that carry it
	var recursive []int           // schemas with $recursiveAnchor
	for i, s := range all {
		if s.DynamicAnchor != "" {
			anchors[s.DynamicAnchor] = append(anchors[s.DynamicAnchor], i)
		}
		if s.RecursiveAnchor {
			recursive = append(recursive, i)
		}
	}
	ids := func(ss ...*jsonschema.Schema) []int {
		var out []int
		for _, s := range ss {
			if s != nil {
				out = append(out, index[s])
			}
		}
		return out
	}
	nodes := make([]node, len(all))
	for i, s := range all {
		n := &nodes[i]
		one := func(ss ...*jsonschema.Schema) {
			for _, id := range ids(ss...) {
				n.inplace = append(n.inplace, []int{id})
			}
		}
		one(s.Ref, s.Not, s.If, s.Then, s.Else)
		one(s.AllOf...)
		one(s.AnyOf...)
		one(s.OneOf...)
		for _, c := range s.DependentSchemas {
			one(c)
		}
		for _, c := range s.Dependencies {
			if c, ok := c.(*jsonschema.Schema); ok {
				one(c)
			}
		}
		if s.DynamicRef != nil {
			g := ids(s.DynamicRef.Ref)
			if s.DynamicRef.Anchor != "" {
				g = append(g, anchors[s.DynamicRef.Anchor]...)
			}
			if len(g) > 0 {
				n.inplace = append(n.inplace, g)
			}
		}
		if s.RecursiveRef != nil {
			n.inplace = append(n.inplace, append(ids(s.RecursiveRef), recursive...))
		}
		objCommon := ids(s.UnevaluatedProperties)
		if a, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
			objCommon = append(objCommon, index[a])
		}
		for _, c := range s.PatternProperties {
			objCommon = append(objCommon, index[c])
		}
		n.choices = append(n.choices, objCommon)
		for _, c := range s.Properties {
			n.choices = append(n.choices, append(ids(c), objCommon...))
		}
		arrCommon := ids(s.Contains, s.UnevaluatedItems, s.Items2020)
		var prefix []*jsonschema.Schema
		switch it := s.Items.(type) {
		case *jsonschema.Schema:
			arrCommon = append(arrCommon, index[it])
		case []*jsonschema.Schema:
			prefix = it
		}
		if a, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
			arrCommon = append(arrCommon, index[a])
		}
		n.choices = append(n.choices, arrCommon)
		for _, c := range append(prefix, s.PrefixItems...) {
			n.choices = append(n.choices, append(ids(c), arrCommon...))
		}
		n.choices = append(n.choices, ids(s.PropertyNames))
	}

	// An order of the in-place graph, each schema after what it applies in place (back edges of cycles cut).
	order := make([]int, 0, len(all))
	state := make([]byte, len(all)) // 0 unseen, 1 on the path, 2 done
	var visit func(i int)
	visit = func(i int) {
		state[i] = 1
		for _, g := range nodes[i].inplace {
			for _, c := range g {
				if state[c] == 0 {
					visit(c)
				}
			}
		}
		state[i] = 2
		order = append(order, i)
	}
	for i := range all {
		if state[i] == 0 {
			visit(i)
		}
	}
	pos := make([]int, len(all))
	for p, i := range order {
		pos[i] = p
	}

	// q[i]: the evaluations schema i costs on the values exactly d levels below the one it is applied to (the
	// costliest such value). d = 0 counts i itself.
	capped := func(x int) int { return min(x, limit+1) }
	step := func(prev []int) []int {
		q := make([]int, len(all))
		for _, i := range order {
			sum := 0
			if prev == nil {
				sum = 1
			} else {
				best := 0
				for _, ch := range nodes[i].choices {
					s := 0
					for _, c := range ch {
						s = capped(s + prev[c])
					}
					best = max(best, s)
				}
				sum = best
			}
			for _, g := range nodes[i].inplace {
				best := 0
				for _, c := range g {
					if pos[c] < pos[i] { // not a cut back edge
						best = max(best, q[c])
					}
				}
				sum = capped(sum + best)
			}
			q[i] = sum
		}
		return q
	}
	r := index[root]
	q := step(nil)
	worst := q[r]
	for d := 1; d <= revision.MaxDepth && worst <= limit; d++ {
		next := step(q)
		worst = max(worst, next[r])
		if equalInts(next, q) || allZero(next) {
			break // constant from here on, or nothing applies this deep
		}
		q = next
	}
	return worst
}

func equalInts(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func allZero(a []int) bool {
	for _, x := range a {
		if x != 0 {
			return false
		}
	}
	return true
}

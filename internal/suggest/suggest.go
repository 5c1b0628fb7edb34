// Package suggest finds the names closest to a misspelt one, for "did you mean" hints everywhere in Strata: unknown
// databases, resources, branches, snapshots, object members and tool arguments all use the same rule.
package suggest

import (
	"slices"
	"strings"
)

// Closest returns up to three of names near name, nearest first. Case, '_' and '-' do not count (so expectedHead
// finds expected_head); names within a small edit distance (up to a third of the name's length, at most 3) qualify,
// and so does a name that one of the two begins with, for names of at least 3 characters.
func Closest(name string, names []string) []string {
	n := norm(name)
	limit := min(3, len([]rune(n))/3+1)
	type cand struct {
		s string
		d int
	}
	var cs []cand
	for _, c := range names {
		cn := norm(c)
		switch d := distance(n, cn, limit); {
		case d <= limit:
			cs = append(cs, cand{c, d})
		case len(n) >= 3 && (strings.HasPrefix(cn, n) || strings.HasPrefix(n, cn)):
			cs = append(cs, cand{c, limit + 1})
		}
	}
	slices.SortStableFunc(cs, func(x, y cand) int { return x.d - y.d })
	var out []string
	for i := 0; i < len(cs) && i < 3; i++ {
		out = append(out, cs[i].s)
	}
	return out
}

var dropSeparators = strings.NewReplacer("_", "", "-", "")

func norm(s string) string { return strings.ToLower(dropSeparators.Replace(s)) }

// distance is the Levenshtein distance between a and b in runes, or limit+1 as soon as it must exceed limit. Only
// the cells within limit of the diagonal are computed (a cell further off costs more than limit), so it takes
// O(len · limit), not O(len²): two long names that share a long prefix took minutes (found in review).
func distance(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > limit || -d > limit {
		return limit + 1
	}
	over := limit + 1
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = min(j, over)
	}
	for i := 1; i <= len(ra); i++ {
		lo, hi := max(1, i-limit), min(len(rb), i+limit)
		if lo > 1 {
			cur[lo-1] = over
		} else {
			cur[0] = min(i, over)
		}
		rowMin := cur[lo-1]
		for j := lo; j <= hi; j++ {
			c := 1
			if ra[i-1] == rb[j-1] {
				c = 0
			}
			up := over
			if j <= i-1+limit {
				up = prev[j]
			}
			cur[j] = min(up+1, cur[j-1]+1, prev[j-1]+c, over)
			rowMin = min(rowMin, cur[j])
		}
		if hi < len(rb) {
			cur[hi+1] = over
		}
		if rowMin > limit {
			return over
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

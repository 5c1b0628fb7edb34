package snapshots

import (
	"regexp"
	"sort"
	"strings"
)

var (
	databaseName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	resourceName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	refName      = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$`)
	allDigits    = regexp.MustCompile(`^[0-9]+$`)
)

// ValidDatabaseName checks a database name: lower-case letters, digits, '_' and '-', starting with a letter or digit,
// at most 64 characters.
func ValidDatabaseName(name string) error {
	if !databaseName.MatchString(name) {
		return invalid("database name %q is not valid: use 1 to 64 lower-case letters, digits, '_' or '-', starting with a letter or digit (for example \"catalog\")", clip(name))
	}
	return nil
}

// ValidResourceName checks a resource name: letters, digits, '.', '_' and '-', starting with a letter or digit, at
// most 128 characters.
func ValidResourceName(name string) error {
	if !resourceName.MatchString(name) {
		return invalid("resource name %q is not valid: use 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit (for example \"config\")", clip(name))
	}
	return nil
}

// ValidRefName checks a branch or snapshot name: letters, digits, '.', '_', '-' and '/', starting with a letter or
// digit, at most 128 characters, and not all digits (those are revision numbers).
func ValidRefName(kind, name string) error {
	if !refName.MatchString(name) || allDigits.MatchString(name) || strings.Contains(name, "..") {
		return invalid("%s name %q is not valid: use 1 to 128 letters, digits, '.', '_', '-' or '/', starting with a letter or digit, not only digits (for example \"try-discounts\")", kind, clip(name))
	}
	return nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// closest returns up to three names near name, nearest first.
func closest(name string, names []string) []string {
	type cand struct {
		n string
		d int
	}
	limit := min(3, len(name)/3+1)
	var cs []cand
	for _, n := range names {
		if d := distance(strings.ToLower(name), strings.ToLower(n)); d <= limit {
			cs = append(cs, cand{n, d})
		} else if len(name) >= 3 && strings.HasPrefix(n, name) {
			cs = append(cs, cand{n, limit + 1})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	var out []string
	for i := 0; i < len(cs) && i < 3; i++ {
		out = append(out, cs[i].n)
	}
	return out
}

func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

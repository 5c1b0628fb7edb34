package suggest

import (
	"math/rand"
	"strings"
	"testing"
)

// plainDistance is the full Levenshtein table, capped at limit+1.
func plainDistance(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			c := 1
			if ra[i-1] == rb[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(rb)], limit+1)
}

// TestDistanceIsLinear: the banded distance answers as the full table does (20,000 random pairs), and two long
// names that share a long prefix are compared (BenchmarkClosestLongNames times it).
func TestDistanceIsLinear(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for n := 0; n < 20000; n++ {
		mk := func() string {
			b := make([]byte, r.Intn(9))
			for i := range b {
				b[i] = "abc"[r.Intn(3)]
			}
			return string(b)
		}
		a, b, limit := mk(), mk(), r.Intn(4)
		if got, want := min(distance(a, b, limit), limit+1), plainDistance(a, b, limit); got != want {
			t.Fatalf("distance(%q, %q, %d) = %d, want %d", a, b, limit, got, want)
		}
	}
	long := strings.Repeat("k", 32<<10)
	if got := Closest(long+"x", []string{long}); len(got) != 1 {
		t.Fatalf("Closest: %d names", len(got))
	}
}

// BenchmarkClosestLongNames: two 32 KiB names that share all but their last letter (a stored key and a path one
// letter longer). Only the band around the diagonal is computed: ~2.2 ms here (2026-12-07, a loaded run), against
// 2.2 s for the full table.
func BenchmarkClosestLongNames(b *testing.B) {
	long := strings.Repeat("k", 32<<10)
	for b.Loop() {
		if got := Closest(long+"x", []string{long}); len(got) != 1 {
			b.Fatalf("Closest: %d names", len(got))
		}
	}
}

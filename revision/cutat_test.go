package revision

import (
	"math"
	"math/rand"
	"testing"

	"github.com/zeebo/xxh3"
)

// TestCutDecisionMatchesFormula checks that cutDecision's shortcut never decides differently from the format's
// formula: on random hashes and sizes, and on hashes at and around the formula's own threshold, where a rounding
// slip in the shortcut would show.
func TestCutDecisionMatchesFormula(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	iters := 2_000_000
	if testing.Short() {
		iters = 300_000
	}
	cuts, fast := 0, 0
	check := func(h uint64, start, end int) {
		t.Helper()
		if got := cutDecision(h, start, end); got {
			cuts++
		}
		if float64(h) >= (1-math.Exp(-math.Pow(float64(end)/weibullLambda, weibullK)))*(1<<64) {
			fast++
		}
		if got, want := cutDecision(h, start, end), cutFormula(h, start, end); got != want {
			t.Fatalf("cutDecision(%#x, %d, %d) = %v, formula says %v", h, start, end, got, want)
		}
	}
	for i := 0; i < iters; i++ {
		end := minChunk + rng.Intn(maxChunk-minChunk)
		var start int
		switch i % 4 {
		case 0: // a small entry
			start = end - 1 - rng.Intn(64)
		case 1: // any entry
			start = end - 1 - rng.Intn(end)
		case 2: // a one-byte step
			start = end - 1
		default: // the whole node at once
			start = 0
		}
		if start < 0 {
			start = 0
		}
		check(rng.Uint64(), start, end)
		if i%16 != 0 {
			continue
		}
		// Hashes at the threshold: the formula's p·2^64 and its neighbours as floats and as integers.
		a := math.Pow(float64(start)/weibullLambda, weibullK)
		b := math.Pow(float64(end)/weibullLambda, weibullK)
		thr := (1 - math.Exp(a-b)) * (1 << 64)
		for _, f := range []float64{thr, math.Nextafter(thr, 0), math.Nextafter(thr, math.Inf(1)), thr * (1 + 1e-12), thr * (1 - 1e-12)} {
			if f >= 1<<64 {
				check(math.MaxUint64, start, end)
				continue
			}
			h := uint64(f)
			for _, dh := range []uint64{0, 1, 2, 1 << 10, 1 << 11, 1 << 12} {
				check(h+dh, start, end)
				check(h-dh, start, end)
			}
		}
	}
	// Extremes of the hash and of the sizes.
	for _, h := range []uint64{0, 1, math.MaxUint64, math.MaxUint64 - 1, 1 << 63} {
		for end := minChunk; end < maxChunk; end += 7 {
			for _, start := range []int{0, 1, end / 2, end - 64, end - 1} {
				check(h, start, end)
			}
		}
	}
	if cuts == 0 || fast == 0 {
		t.Fatalf("%d cuts and %d draws certainly above the threshold: the test misses a side", cuts, fast)
	}
}

// TestCutAtMatchesFormula pins a few hundred thousand cutAt decisions against the formula computed directly from
// the hash, the way cutAt decided before its shortcut.
func TestCutAtMatchesFormula(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	var id [40]byte
	for i := 0; i < 300_000; i++ {
		rng.Read(id[:])
		s := string(id[:1+rng.Intn(len(id)-1)])
		level := rng.Intn(4)
		end := rng.Intn(maxChunk + 1024)
		start := end - 1 - rng.Intn(200)
		if start < 0 {
			start = 0
		}
		want := end >= maxChunk
		if end >= minChunk && end < maxChunk {
			want = cutFormula(xxh3.HashStringSeed(s, 0x5bd1e995+uint64(level)*0x9e3779b97f4a7c15), start, end)
		}
		if got := cutAt(s, level, start, end); got != want {
			t.Fatalf("cutAt(%x, %d, %d, %d) = %v, want %v", s, level, start, end, got, want)
		}
	}
}

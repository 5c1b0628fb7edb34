package revision

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// randomJSON writes a random document meant to reach every path of the importer: inline and tree containers, arrays
// that spill, objects wide enough for the sorted path, keys and strings with escapes and multi-byte characters,
// strings long enough to be split into fragments, and numbers in every form.
// The document stops growing containers at about 2 MB.
func randomJSON(rng *rand.Rand, b *strings.Builder, depth int) {
	strs := []string{"", "a", "é", "\\n", "\\\"q\\\"", "\\u0001x", "\\u00e9t\\u00e9", "tab\\there", "€uro", "user-12345"}
	nums := []string{"0", "-1", "7", "12345678901234567891", "-9223372036854775808", "9223372036854775808", "1.0", "1e3", "-0", "0.25", "1E+2", "-0.0"}
	r := rng.Intn(20)
	if b.Len() > 2<<20 {
		depth = 0
	}
	switch {
	case depth > 0 && r < 4:
		n := rng.Intn(30)
		if rng.Intn(8) == 0 && depth <= 2 {
			n = 200 + rng.Intn(3000) // wide: many nodes, sorted by the slice sort
		}
		b.WriteByte('{')
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(b, `"%s%d%s":`, strs[rng.Intn(len(strs))], rng.Intn(1<<20), strs[rng.Intn(len(strs))])
			randomJSON(rng, b, depth-1)
		}
		b.WriteByte('}')
	case depth > 0 && r < 8:
		n := rng.Intn(20)
		if rng.Intn(6) == 0 && depth <= 2 {
			n = 500 + rng.Intn(5000) // long: spills and spans nodes
		}
		b.WriteByte('[')
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			randomJSON(rng, b, depth-1)
		}
		b.WriteByte(']')
	case r < 11:
		b.WriteString(nums[rng.Intn(len(nums))])
	case r < 12:
		b.WriteString([]string{"null", "true", "false"}[rng.Intn(3)])
	case r < 13:
		b.WriteByte('"')
		for n := 3000 + rng.Intn(20000); n > 0; n -= 10 {
			b.WriteString(strs[rng.Intn(len(strs))])
			b.WriteString("abcdefghij"[:rng.Intn(10)])
		}
		b.WriteByte('"')
	default:
		fmt.Fprintf(b, `"%s%d"`, strs[rng.Intn(len(strs))], rng.Int())
	}
}

// TestImportCarriedSizes checks the compact JSON size the importer carries for every value it builds against a walk
// of the value's encoding (the chunker used to walk each entry), and the root's size against the value written out.
func TestImportCarriedSizes(t *testing.T) {
	checkSizes = true
	defer func() { checkSizes = false }()
	f, _ := newForest(t)
	ctx := context.Background()
	docs := append([]string{}, importSeeds...)
	nSeeds := len(docs)
	docs = append(docs, string(userDoc(3000)))
	rng := rand.New(rand.NewSource(envSeed()))
	for i := 0; i < 60; i++ {
		var b strings.Builder
		randomJSON(rng, &b, 1+rng.Intn(4))
		docs = append(docs, b.String())
	}
	for i, doc := range docs {
		v, _, err := f.ImportBytes(ctx, []byte(doc))
		if err != nil {
			if i < nSeeds {
				continue // the seeds include invalid documents
			}
			t.Fatalf("import: %v: %.200s", err, doc)
		}
		if got := mustJSON(t, f, v); v.Size() != uint64(len(got)) {
			t.Fatalf("size %d, written out the value is %d bytes: %.200s", v.Size(), len(got), doc)
		}
	}
}

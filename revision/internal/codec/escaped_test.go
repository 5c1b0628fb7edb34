package codec

import (
	"math/rand"
	"testing"
)

// TestEscapedLenMatchesBytewise checks EscapedLen's eight-bytes-at-a-time path against the byte table.
func TestEscapedLenMatchesBytewise(t *testing.T) {
	slow := func(s string) uint64 {
		n := uint64(0)
		for i := 0; i < len(s); i++ {
			n += uint64(escapeLen[s[i]])
		}
		return n
	}
	rng := rand.New(rand.NewSource(3))
	alphabets := []string{"abcxyz09@.-", "\"\\\n\t\x00\x1f ~\x7f\x80\xff\x20\x21\x5b\x5d", "\u00e9\u4e16 a"}
	for i := 0; i < 200_000; i++ {
		b := make([]byte, rng.Intn(40))
		for j := range b {
			switch a := alphabets[i%len(alphabets)]; rng.Intn(8) {
			case 0:
				b[j] = byte(rng.Intn(256))
			default:
				b[j] = a[rng.Intn(len(a))]
			}
		}
		s := string(b)
		if got, want := EscapedLen(s), slow(s); got != want {
			t.Fatalf("EscapedLen(%q) = %d, want %d", s, got, want)
		}
	}
	// Every byte value at every position of a 17-byte string.
	for c := 0; c < 256; c++ {
		for p := 0; p < 17; p++ {
			b := []byte("abcdefghijklmnopq")
			b[p] = byte(c)
			if got, want := EscapedLen(string(b)), slow(string(b)); got != want {
				t.Fatalf("EscapedLen(%q) = %d, want %d", b, got, want)
			}
		}
	}
}

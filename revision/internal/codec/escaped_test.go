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

// TestAppendEscapedMatchesBytewise checks AppendEscaped's eight-bytes-at-a-time path against escaping byte by byte.
func TestAppendEscapedMatchesBytewise(t *testing.T) {
	slow := func(s string) string {
		var b []byte
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, `\n`...)
			case c == '\r':
				b = append(b, `\r`...)
			case c == '\t':
				b = append(b, `\t`...)
			case c == '\b':
				b = append(b, `\b`...)
			case c == '\f':
				b = append(b, `\f`...)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
		}
		return string(b)
	}
	for c := 0; c < 256; c++ {
		for p := 0; p < 17; p++ {
			b := []byte("abcdefghijklmnopq")
			b[p] = byte(c)
			if got, want := string(AppendEscaped([]byte("x"), string(b))), "x"+slow(string(b)); got != want {
				t.Fatalf("AppendEscaped(%q) = %q, want %q", b, got, want)
			}
		}
	}
	rng := rand.New(rand.NewSource(5))
	for i := 0; i < 100_000; i++ {
		b := make([]byte, rng.Intn(40))
		for j := range b {
			b[j] = "ab\"\\\n\x01\x1f\x20\x7f\x80\xff"[rng.Intn(11)]
		}
		if got, want := string(AppendEscaped(nil, string(b))), slow(string(b)); got != want {
			t.Fatalf("AppendEscaped(%q) = %q, want %q", b, got, want)
		}
	}
}

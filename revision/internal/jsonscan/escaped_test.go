package jsonscan

import (
	"strings"
	"testing"
)

// TestEscaped checks that Escaped tells strings read as written from strings decoded from escapes, in both the
// fast path and readString, for keys and values, from memory and through a tiny streaming buffer.
func TestEscaped(t *testing.T) {
	doc := `{"plain":"text","é":"ü€","a\nb":"x\"y","":"","k":"\u00e9","z":["\\",""]}`
	want := []bool{false, false, false, false, true, true, false, false, false, true, false, true, false}
	for _, bufSize := range []int{0, 1, 3} {
		var s *Scanner
		if bufSize == 0 {
			s = NewBytes([]byte(doc), 0)
		} else {
			s = newReader(strings.NewReader(doc), 0, bufSize)
		}
		var got []bool
		for {
			k, b, err := s.Next()
			if err != nil {
				break
			}
			if k == String || k == Key {
				got = append(got, s.Escaped(b))
			}
		}
		if len(got) != len(want) {
			t.Fatalf("buf %d: %d strings, want %d", bufSize, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("buf %d: string %d: Escaped %v, want %v", bufSize, i, got[i], want[i])
			}
		}
	}
}

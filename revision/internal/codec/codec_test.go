package codec

import (
	"strconv"
	"testing"
)

func TestAppendNumberUsesIntOnlyForCanonicalText(t *testing.T) {
	for text, wantInt := range map[string]bool{
		"0": true, "7": true, "-7": true, "9223372036854775807": true, "-9223372036854775808": true,
		"9223372036854775808": false, "-9223372036854775809": false, "-0": false, "1.0": false, "1e3": false,
		"00": false, "01": false, "12345678901234567891": false,
	} {
		enc := string(AppendNumber(nil, []byte(text)))
		if got := enc[0] == TagInt; got != wantInt {
			t.Errorf("%s: int form %v, want %v", text, got, wantInt)
		}
		// The JSON size of the encoding is the length of the text it came from.
		if n := ValueSize(enc); n != uint64(len(text)) {
			t.Errorf("%s: ValueSize %d", text, n)
		}
		if wantInt {
			if v := DecodeInt(enc); strconv.FormatInt(v, 10) != text {
				t.Errorf("%s: decoded %d", text, v)
			}
		} else if Payload(enc) != text {
			t.Errorf("%s: payload %q", text, Payload(enc))
		}
	}
}

func TestEscaping(t *testing.T) {
	s := "a\"b\\c\n\x01\x7fé\u2028"
	got := string(AppendJSONString(nil, s))
	want := `"a\"b\\c\n\u0001` + "\x7fé\u2028" + `"`
	if got != want {
		t.Fatalf("got %q want %q", got, want)
	}
	if EscapedLen(s)+2 != uint64(len(got)) {
		t.Fatalf("EscapedLen %d for %d bytes", EscapedLen(s), len(got))
	}
}

// FuzzParseNode: arbitrary bytes never panic the node decoder, and what it accepts re-encodes to the same bytes.
func FuzzParseNode(f *testing.F) {
	f.Add([]byte{NodeObjLeaf, 1, 1, 'a', TagInt, 2})
	f.Add([]byte{NodeArrLeaf, 2, TagNull, TagStr, 1, 'x'})
	f.Add([]byte{NodeArrInner, 1, 1})
	f.Add([]byte{NodeStrLeaf, 'h', 'i'})
	f.Add([]byte{NodeObjLeaf, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ParseNode(string(b))
		if err != nil {
			return
		}
		var out []byte
		switch n.Kind {
		case NodeObjLeaf, NodeArrLeaf:
			out = AppendUvarint([]byte{n.Kind}, uint64(len(n.Entries)))
			for _, e := range n.Entries {
				out = AppendEntry(out, n.Kind, e.Key, e.Val)
				_ = ValueSize(e.Val)
				_ = WalkRefs(e.Val, func(Ref) error { return nil })
			}
		case NodeObjInner, NodeArrInner, NodeStrInner:
			out = AppendUvarint([]byte{n.Kind, byte(n.Level)}, uint64(len(n.Children)))
			for _, c := range n.Children {
				out = AppendChild(out, n.Kind, c)
			}
		case NodeStrLeaf:
			out = append([]byte{n.Kind}, n.Frag...)
		}
		// Varints have more than one spelling, so only the decoded form is compared.
		n2, err := ParseNode(string(out))
		if err != nil || n2.Len() != n.Len() || n2.Kind != n.Kind {
			t.Fatalf("re-encoded node does not decode the same: %v", err)
		}
	})
}

// TestNoRefs: ParseNode and ParseLeafSized mark a leaf NoRefs exactly when none of its entries holds a tree
// reference, at any depth (newNodes skips the entries of such leaves).
func TestNoRefs(t *testing.T) {
	ref := string(AppendRef(nil, TagStrRef, [HashLen]byte{1}, 1, 5000))
	plain := string(AppendString(nil, []byte("x")))
	nested := string(AppendUvarint([]byte{TagArr}, 2)) + plain + ref // [ "x", <ref> ]
	for _, c := range []struct {
		name string
		vals []string
		want bool
	}{
		{"plain", []string{plain, plain}, true},
		{"reference", []string{plain, ref}, false},
		{"reference inside an inline array", []string{nested}, false},
	} {
		raw := AppendUvarint([]byte{NodeArrLeaf}, uint64(len(c.vals)))
		for _, v := range c.vals {
			raw = AppendEntry(raw, NodeArrLeaf, "", v)
		}
		n, err := ParseNode(string(raw))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		m, _, err := ParseLeafSized(string(raw))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if n.NoRefs != c.want || m.NoRefs != c.want {
			t.Errorf("%s: NoRefs %v (ParseNode), %v (ParseLeafSized), want %v", c.name, n.NoRefs, m.NoRefs, c.want)
		}
	}
}

package safetext

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile holds every kind of character that can drive a terminal or hide text.
var hostile = []string{
	"\x1b]0;owned\x07",    // set the window title
	"\x1b[2J\x1b[H",       // clear the screen
	"\x1b[1A\x1b[2K",      // cursor up, erase the line: hides the line above
	"a\rb",                // carriage return overwrites
	"x\x7fy",              // DEL
	"\u009b31m",           // C1 CSI (8-bit)
	"\u0085next",          // C1 NEL
	"evil\u202etxt.exe",   // right-to-left override
	"\u2066iso\u2069",     // isolates
	"zero\u200bwidth",     // zero-width space
	"tag\U000E0041",       // Unicode tag
	"line\u2028sep",       // line separator
	"multi\nline\tcol",    // newline, tab
	"\xff\x9b[2Jbad-utf8", // bytes that are not UTF-8 (0x9b alone is an 8-bit CSI)
}

func clean(t *testing.T, form, s string) {
	t.Helper()
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			t.Errorf("%s: a byte that is not UTF-8 at %d in %q", form, i, s)
		} else if Unsafe(r) {
			t.Errorf("%s: unsafe %U at %d in %q", form, r, i, s)
		}
		i += size
	}
}

func TestTextAndFieldEscapeEverything(t *testing.T) {
	for _, h := range hostile {
		clean(t, "Text", Text(h))
		clean(t, "Field", Field(h))
		clean(t, "Lines", strings.ReplaceAll(Lines(h), "\n", ""))
	}
	for in, want := range map[string]string{
		"plain":          "plain",
		"\x1b[2J":        `\x1b[2J`,
		"evil\u202etxt":  `evil\u202etxt`,
		"\u009b":         `\u009b`,
		"a\nb":           `a\nb`,
		"\xffz":          `\xffz`,
		"café — ok":      "café — ok",
		"emoji 🎉 and 中文": "emoji 🎉 and 中文",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"alice":        "alice",
		"":             "",
		"two words":    `"two words"`,
		`say "hi"`:     `"say \"hi\""`,
		"tab\there":    `"tab\there"`,
		"\x1b]0;t\x07": `"\x1b]0;t\a"`,
	} {
		if got := Field(in); got != want {
			t.Errorf("Field(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Lines("one\x1b[2J\ntwo"); got != "one\\x1b[2J\ntwo" {
		t.Errorf("Lines kept or lost the wrong things: %q", got)
	}
}

func TestJSONMeansTheSame(t *testing.T) {
	for _, h := range hostile {
		in, err := json.Marshal(map[string]string{"k" + h: h})
		if err != nil {
			t.Fatal(err)
		}
		out := JSON(in)
		clean(t, "JSON", string(out))
		if !utf8.ValidString(h) {
			continue // json.Marshal already made it U+FFFD
		}
		var a, b map[string]string
		if err := json.Unmarshal(in, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, &b); err != nil {
			t.Fatalf("JSON(%s) = %s: %v", in, out, err)
		}
		if a["k"+h] != b["k"+h] || len(a) != len(b) {
			t.Errorf("JSON changed the value: %s became %s", in, out)
		}
	}
	plain := []byte(`{"a":"café","b":[1,2]}`)
	if out := JSON(plain); &out[0] != &plain[0] {
		t.Error("JSON copied text that needed nothing")
	}
	if got := string(JSON([]byte("\"\xff\x9b\""))); got != `"\ufffd\ufffd"` {
		t.Errorf("bytes that are not UTF-8: %q", got)
	}
}

func FuzzText(f *testing.F) {
	for _, h := range hostile {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, s string) {
		clean(t, "Text", Text(s))
		clean(t, "Field", Field(s))
		if b, err := json.Marshal(s); err == nil {
			out := JSON(b)
			clean(t, "JSON", string(out))
			var back string
			if err := json.Unmarshal(out, &back); err != nil {
				t.Fatalf("JSON(%s) = %s is not JSON: %v", b, out, err)
			}
			var want string
			json.Unmarshal(b, &want)
			if back != want {
				t.Fatalf("JSON changed %q to %q", want, back)
			}
		}
	})
}

func TestWriterSplitsNoCharacter(t *testing.T) {
	in := "{\"a\":\"evil\u202e\u0085🎉\x1b\"}\nline two\n"
	for _, json := range []bool{true, false} {
		want := Lines(in)
		if json {
			want = string(JSON([]byte(in)))
		}
		for step := 1; step <= len(in); step++ {
			var b strings.Builder
			w := NewWriter(&b, json)
			for i := 0; i < len(in); i += step {
				if _, err := w.Write([]byte(in[i:min(i+step, len(in))])); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if b.String() != want {
				t.Errorf("json=%v, writes of %d bytes: got %q, want %q", json, step, b.String(), want)
			}
		}
	}
}

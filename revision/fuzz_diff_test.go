package revision

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDiff: for any two JSON documents Strata accepts, applying diff(a, b) to a gives exactly b, the counts match the
// operations, and remove/replace carry old values. Each input is also tried wrapped in a large array and object, so
// that trees of nodes (not only inline values) are diffed.
func FuzzDiff(f *testing.F) {
	for _, s := range [][2]string{
		{`{"a":1}`, `{"a":2}`},
		{`[1,2,3]`, `[3,2,1]`},
		{`{"a":[1,{"b":null}],"c":"x"}`, `{"a":[{"b":null},1],"d":"x"}`},
		{`[{"id":1},{"id":2},{"id":3}]`, `[{"id":1},{"id":3},{"id":4}]`},
		{`"x"`, `{"x":1}`},
		{`{"n":12345678901234567891}`, `{"n":1.0}`},
		{`[]`, `[[],[[]],{}]`},
	} {
		f.Add(s[0], s[1], uint8(0))
		f.Add(s[0], s[1], uint8(7))
	}
	f.Fuzz(func(t *testing.T, a, b string, pad uint8) {
		if !acceptable(a) || !acceptable(b) {
			return
		}
		fo, _ := newForest(t)
		ctx := context.Background()
		if pad > 0 {
			// Put the documents inside 2,000 shared elements, so the diff must skip equal subtrees by hash.
			filler := strings.Repeat(`{"k":"filler element","n":1},`, 2000)
			at := int(pad) % 2
			if at == 0 {
				a, b = `[`+filler+a+`]`, `[`+filler+b+`]`
			} else {
				a, b = `{"x":[`+filler+`0],"doc":`+a+`}`, `{"x":[`+filler+`0],"doc":`+b+`}`
			}
		}
		va, _, err := fo.ImportBytes(ctx, []byte(a))
		if err != nil {
			return
		}
		vb, _, err := fo.ImportBytes(ctx, []byte(b))
		if err != nil {
			return
		}
		checkDiffRoundTrip(t, fo, va, vb)
	})
}

// acceptable reports whether Strata's importer must accept s: valid JSON, valid UTF-8, no duplicate keys, not too deep.
func acceptable(s string) bool {
	if !json.Valid([]byte(s)) || !utf8.ValidString(s) || len(s) > 4096 {
		return false
	}
	return checkJSON([]byte(s)) == nil && bytes.Count([]byte(s), []byte("[")) < 100
}

package revision

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/strata-db/strata/store"
)

// Fuzz targets. Run one with, e.g.:
//
//	go test -run='^$' -fuzz=FuzzImportRoundTrip -fuzztime=60s ./revision/
//
// Without -fuzz, `go test` runs every target on its inline seeds and on the files in testdata/fuzz/<Target>/.

// ---------------------------------------------------------------------------------------------------------------
// Facts about a JSON text, found independently of Strata's scanner.

// jsonFacts describes a text that encoding/json accepts.
type jsonFacts struct {
	dupKeys       bool // an object names a member twice
	loneSurrogate bool // a \u escape encodes an unpaired UTF-16 surrogate
	lineSep       bool // a string or key holds U+2028 or U+2029 (encoding/json escapes them, Strata does not)
	depth         int  // deepest nesting of objects and arrays
}

// inspectJSON walks a text that json.Valid accepts.
func inspectJSON(data []byte) (jsonFacts, error) {
	var fx jsonFacts
	fx.loneSurrogate = hasLoneSurrogate(data)
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	type open struct {
		obj    bool
		keys   map[string]bool
		wantKy bool
	}
	var stack []open
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return fx, nil
		}
		if err != nil {
			return fx, err
		}
		isKey := len(stack) > 0 && stack[len(stack)-1].obj && stack[len(stack)-1].wantKy
		switch x := tok.(type) {
		case json.Delim:
			switch x {
			case '{', '[':
				if len(stack) > 0 && stack[len(stack)-1].obj {
					stack[len(stack)-1].wantKy = true
				}
				stack = append(stack, open{obj: x == '{', keys: map[string]bool{}, wantKy: true})
				fx.depth = max(fx.depth, len(stack))
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			if strings.ContainsAny(x, "\u2028\u2029") {
				fx.lineSep = true
			}
			if isKey {
				top := &stack[len(stack)-1]
				if top.keys[x] {
					fx.dupKeys = true
				}
				top.keys[x] = true
				top.wantKy = false
				continue
			}
		}
		if len(stack) > 0 && stack[len(stack)-1].obj {
			stack[len(stack)-1].wantKy = true
		}
	}
}

// hasLoneSurrogate reports whether a valid JSON text has a \u escape for an unpaired surrogate.
func hasLoneSurrogate(data []byte) bool {
	hex4 := func(i int) int {
		if i+4 > len(data) {
			return -1
		}
		v, err := strconv.ParseUint(string(data[i:i+4]), 16, 16)
		if err != nil {
			return -1
		}
		return int(v)
	}
	in := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if !in {
			if c == '"' {
				in = true
			}
			continue
		}
		switch c {
		case '"':
			in = false
		case '\\':
			if i+1 < len(data) && data[i+1] == 'u' {
				r := hex4(i + 2)
				switch {
				case r >= 0xD800 && r <= 0xDBFF:
					if i+7 < len(data) && data[i+6] == '\\' && data[i+7] == 'u' {
						if lo := hex4(i + 8); lo >= 0xDC00 && lo <= 0xDFFF {
							i += 11
							continue
						}
					}
					return true
				case r >= 0xDC00 && r <= 0xDFFF:
					return true
				}
				i += 5
			} else {
				i++
			}
		}
	}
	return false
}

// decodeNumbers decodes JSON text with json.Number for every number.
func decodeNumbers(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the value")
	}
	return v, nil
}

// normalizeMaterialized turns Materialize's ints into json.Number, so that its result compares with decodeNumbers'.
func normalizeMaterialized(v any) any {
	switch x := v.(type) {
	case int:
		return json.Number(strconv.Itoa(x))
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeMaterialized(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalizeMaterialized(e)
		}
	}
	return v
}

// checkValue checks everything a Value says about itself against the JSON text it should hold.
func checkValue(t *testing.T, f *Forest, v Value, want []byte) {
	t.Helper()
	ctx := context.Background()
	out, err := f.JSON(ctx, v)
	if err != nil {
		t.Fatalf("JSON: %v", err)
	}
	var sb bytes.Buffer
	if err := f.WriteJSON(ctx, &sb, v); err != nil {
		t.Fatalf("WriteJSON: %v", err)
	}
	if !bytes.Equal(sb.Bytes(), out) {
		t.Fatalf("WriteJSON and JSON differ:\n%q\n%q", sb.Bytes(), out)
	}
	if v.Size() != uint64(len(out)) {
		t.Fatalf("Size() = %d, but the JSON text has %d bytes: %.300q", v.Size(), len(out), out)
	}
	wantV, err := decodeNumbers(want)
	if err != nil {
		t.Fatalf("decode %q: %v", want, err)
	}
	gotV, err := decodeNumbers(out)
	if err != nil {
		t.Fatalf("Strata wrote invalid JSON %.300q: %v", out, err)
	}
	if !reflect.DeepEqual(gotV, wantV) {
		t.Fatalf("JSON output differs from the input:\n got %.300q\nwant %.300q", out, want)
	}
	m, err := f.Materialize(ctx, v)
	if err != nil {
		t.Fatalf("Materialize: %v", err)
	}
	if !reflect.DeepEqual(normalizeMaterialized(m), wantV) {
		t.Fatalf("Materialize differs from the input %.300q", want)
	}
	var n uint64
	switch x := wantV.(type) {
	case map[string]any:
		n = uint64(len(x))
	case []any:
		n = uint64(len(x))
	case string:
		n = uint64(len(x))
	}
	if v.Len() != n {
		t.Fatalf("Len() = %d, want %d", v.Len(), n)
	}
}

// ---------------------------------------------------------------------------------------------------------------
// FuzzImportRoundTrip

var importSeeds = []string{
	`null`, `true`, `false`, `0`, `-0`, `1`, `-1`, `1.0`, `1e3`, `1E+3`, `-0.0e-0`, `9223372036854775807`,
	`9223372036854775808`, `-9223372036854775808`, `-9223372036854775809`, `123456789012345678901234567890`,
	`1e400`, `""`, `"a"`, `"\u0000\u001f\b\f\n\r\t\"\\\/"`, `"\ud83d\ude00 é ☃"`, `"<&>"`, `"\u007f"`,
	`[]`, `{}`, `[[]]`, `{"":{}}`, `[1,[2,[3,[4]]]]`, ` { "b" : 1 , "a" : [ true , null ] } `,
	`{"é":1,"e":2,"z":3,"Z":4,"":5,"\u0000":6}`,
	`{"a":1,"a":2}`, `"\ud800"`, `"\udc00"`, `"\ud800\u0041"`, `"\u2028"`, "\"\xff\"", "[1,]", `{"a"}`, `[01]`,
	`1.`, `.1`, `-`, `+1`, `"\x"`, "\"\t\"", `[1 2]`, `nul`, "\xef\xbb\xbf1", "", " ", `[1]]`, `{"a":1}{}`,
	strings.Repeat("[", 512) + strings.Repeat("]", 512),
	strings.Repeat("[", 513) + strings.Repeat("]", 513),
	`"` + strings.Repeat("ab\\n€", 2000) + `"`,
	string(userDoc(3)),
	string(userDoc(40)),
}

func FuzzImportRoundTrip(f *testing.F) {
	for _, s := range importSeeds {
		f.Add([]byte(s))
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			t.Skip("input over 1 MiB")
		}
		fo, _ := newForest(t)
		v, _, err := fo.ImportBytes(ctx, data)

		valid := json.Valid(data) && utf8.Valid(data)
		var facts jsonFacts
		if valid {
			var ierr error
			if facts, ierr = inspectJSON(data); ierr != nil {
				t.Fatalf("encoding/json.Valid accepted %q but its decoder fails: %v", data, ierr)
			}
		}
		if !valid || facts.dupKeys || facts.loneSurrogate || facts.depth > MaxDepth {
			if err == nil {
				t.Fatalf("Import accepted invalid JSON %.300q (valid=%v %+v)", data, valid, facts)
			}
			if !errors.Is(err, ErrInvalidJSON) {
				t.Fatalf("Import of %.300q: error %v does not wrap ErrInvalidJSON", data, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Import rejected valid JSON %.300q: %v", data, err)
		}
		out, err := fo.JSON(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		if !facts.lineSep {
			if want := canonical(t, data); string(out) != want {
				t.Fatalf("JSON output is not canonical(input):\ninput %.300q\n  got %.300q\n want %.300q", data, out, want)
			}
		}
		checkValue(t, fo, v, data)
		v2, _, err := fo.ImportBytes(ctx, out)
		if err != nil {
			t.Fatalf("re-import of Strata's own output %.300q: %v", out, err)
		}
		if v2 != v {
			t.Fatalf("re-importing the output gives a different value for %.300q", data)
		}
		// From a fresh cache, straight from the store: every node the value needs was written.
		if out2, err := New(fo.Store(), nil).JSON(ctx, v); err != nil || !bytes.Equal(out2, out) {
			t.Fatalf("reading back from the store: %v (%.300q)", err, out2)
		}

		// The same value many times inside large containers: exercises the chunker and the trees with arbitrary
		// content. Every copy must read back as the same Value as the one imported alone.
		if len(data) > 8<<10 || facts.depth >= MaxDepth {
			return
		}
		k := min(2000, max(2, (16<<10)/(len(out)+1)))
		var arr, obj bytes.Buffer
		arr.WriteByte('[')
		obj.WriteByte('{')
		for i := 0; i < k; i++ {
			if i > 0 {
				arr.WriteByte(',')
				obj.WriteByte(',')
			}
			arr.Write(data)
			fmt.Fprintf(&obj, `"k%05d":`, (i*7919)%k) // keys out of order
			obj.Write(data)
		}
		arr.WriteByte(']')
		obj.WriteByte('}')
		for _, big := range [][]byte{arr.Bytes(), obj.Bytes()} {
			bv, _, err := fo.ImportBytes(ctx, big)
			if err != nil {
				t.Fatalf("import of %d copies of %.300q: %v", k, data, err)
			}
			checkValue(t, fo, bv, big)
			bout := mustJSON(t, fo, bv)
			if !facts.lineSep {
				if want := canonical(t, big); bout != want {
					t.Fatalf("%d copies of %.300q: output is not canonical", k, data)
				}
			}
			if again, _, err := fo.ImportBytes(ctx, []byte(bout)); err != nil || again != bv {
				t.Fatalf("%d copies of %.300q: re-import differs (%v)", k, data, err)
			}
			for _, i := range []int{0, k / 2, k - 1} {
				p := Pointer{strconv.Itoa(i)}
				if big[0] == '{' {
					p = Pointer{fmt.Sprintf("k%05d", i)}
				}
				got, err := fo.Get(ctx, bv, p)
				if err != nil {
					t.Fatalf("Get %s: %v", p, err)
				}
				if got != v {
					t.Fatalf("%d copies of %.300q: element %s is not the same Value as the value imported alone", k, data, p)
				}
			}
		}
	})
}

// ---------------------------------------------------------------------------------------------------------------
// FuzzPointer

// pointerDoc is a document with awkward member names and a large array (a tree), shared by FuzzPointer runs.
var pointerDoc = func() []byte {
	var b bytes.Buffer
	b.WriteString(`{"":{"":0,"0":1},"a/b":2,"m~n":3,"~1":4,"~01":5,"/":6," ":7,"é":8,"a":{"b":[10,{"c":"d"}]},`)
	b.WriteString(`"01":9,"-":10,"arr":[`)
	for i := 0; i < 3000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"i":%d,"s":"v%d","a":[%d]}`, i, i, i%7)
	}
	b.WriteString(`],"obj":{`)
	for i := 0; i < 2000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":{"v":%d}`, i, i)
	}
	b.WriteString(`},"long":"` + strings.Repeat("x", 9000) + `"}`)
	return b.Bytes()
}()

var (
	pointerOnce sync.Once
	pointerF    *Forest
	pointerRoot Value
	pointerAny  any
)

func FuzzPointer(f *testing.F) {
	for _, s := range []string{"", "/", "//", "/a", "/a/b/0/c", "/a~1b", "/m~0n", "/~01", "/~1", "/~0", "~", "/~",
		"/~2", "/a~", "a", "/arr/0/s", "/arr/2999/a/0", "/arr/3000", "/arr/-", "/arr/01", "/arr/1e3", "/arr/-1",
		"/arr/18446744073709551616", "/arr/99999999999999999999", "/obj/k1999/v", "/obj/k2000", "/long/0", "/ ",
		"/é", "/\xff", "/0", "/01", "/-", "/a/b/1/c/d"} {
		f.Add(s)
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, s string) {
		pointerOnce.Do(func() {
			ms := store.NewMem()
			pointerF = New(ms, nil)
			var err error
			if pointerRoot, _, err = pointerF.ImportBytes(ctx, pointerDoc); err != nil {
				panic(err)
			}
			if pointerAny, err = decodeNumbers(pointerDoc); err != nil {
				panic(err)
			}
		})
		p, err := ParsePointer(s)
		toks, ok := refParsePointer(s)
		if err != nil {
			if ok {
				t.Fatalf("ParsePointer(%q) failed but the pointer is valid (%q): %v", s, toks, err)
			}
			if !errors.Is(err, ErrInvalidPath) {
				t.Fatalf("ParsePointer(%q): error %v does not wrap ErrInvalidPath", s, err)
			}
			_ = err.Error() // the caret rendering must not panic
			return
		}
		if !ok {
			t.Fatalf("ParsePointer(%q) accepted an invalid pointer: %q", s, p)
		}
		if len(p) != len(toks) || (len(p) > 0 && !reflect.DeepEqual([]string(p), toks)) {
			t.Fatalf("ParsePointer(%q) = %q, want %q", s, p, toks)
		}
		if p.String() != s {
			t.Fatalf("ParsePointer(%q).String() = %q", s, p.String())
		}
		q, err := ParsePointer(p.String())
		if err != nil || len(q) != len(p) || (len(p) > 0 && !reflect.DeepEqual(q, p)) {
			t.Fatalf("ParsePointer(%q) = %q, but ParsePointer(String()) = %q, %v", s, p, q, err)
		}
		for i := range p {
			if !p[:i].IsPrefixOf(p) || (i < len(p) && p.IsPrefixOf(p[:i])) {
				t.Fatalf("IsPrefixOf is wrong for %q", s)
			}
		}

		// Reading the pointer agrees with a reference walk over Go values.
		got, err := pointerF.Get(ctx, pointerRoot, p)
		want, found := refGet(pointerAny, toks)
		switch {
		case found && err != nil:
			t.Fatalf("Get(%q): %v, but the reference finds %.200v", s, err, want)
		case !found && err == nil:
			t.Fatalf("Get(%q) found %s, but the reference does not", s, mustJSON(t, pointerF, got))
		case !found:
			if !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrInvalidPath) {
				t.Fatalf("Get(%q): error %v wraps neither ErrNotFound nor ErrInvalidPath", s, err)
			}
			_ = err.Error()
		default:
			out := mustJSON(t, pointerF, got)
			gv, err := decodeNumbers([]byte(out))
			if err != nil || !reflect.DeepEqual(gv, want) {
				t.Fatalf("Get(%q) = %.200s, want %.200v", s, out, want)
			}
		}
	})
}

// ---------------------------------------------------------------------------------------------------------------
// A small, independent RFC 6901 / RFC 6902 reference over encoding/json values (json.Number for numbers). It never
// mutates a value: edits copy the containers on the path.

func refParsePointer(s string) ([]string, bool) {
	if s == "" {
		return []string{}, true
	}
	if s[0] != '/' {
		return nil, false
	}
	parts := strings.Split(s[1:], "/")
	for i, part := range parts {
		var b strings.Builder
		for j := 0; j < len(part); j++ {
			if part[j] != '~' {
				b.WriteByte(part[j])
				continue
			}
			if j+1 == len(part) {
				return nil, false
			}
			switch part[j+1] {
			case '0':
				b.WriteByte('~')
			case '1':
				b.WriteByte('/')
			default:
				return nil, false
			}
			j++
		}
		parts[i] = b.String()
	}
	return parts, true
}

// refIndex parses an array index: "0", or digits not starting with 0; below limit.
func refIndex(tok string, limit int) (int, bool) {
	if tok == "" || (tok[0] == '0' && len(tok) > 1) {
		return 0, false
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(tok, 10, 63)
	if err != nil || n >= uint64(limit) {
		return 0, false
	}
	return int(n), true
}

func refGet(v any, p []string) (any, bool) {
	for _, tok := range p {
		switch x := v.(type) {
		case map[string]any:
			e, ok := x[tok]
			if !ok {
				return nil, false
			}
			v = e
		case []any:
			i, ok := refIndex(tok, len(x))
			if !ok {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// refEdit applies leaf to the container at p[:len(p)-1] and rebuilds the path above it.
func refEdit(v any, p []string, leaf func(container any, tok string) (any, bool)) (any, bool) {
	if len(p) == 1 {
		return leaf(v, p[0])
	}
	child, ok := refGet(v, p[:1])
	if !ok {
		return nil, false
	}
	nc, ok := refEdit(child, p[1:], leaf)
	if !ok {
		return nil, false
	}
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = e
		}
		m[p[0]] = nc
		return m, true
	case []any:
		i, _ := refIndex(p[0], len(x))
		a := append([]any(nil), x...)
		a[i] = nc
		return a, true
	}
	return nil, false
}

func refAdd(v any, p []string, val any) (any, bool) {
	if len(p) == 0 {
		return val, true
	}
	return refEdit(v, p, func(c any, tok string) (any, bool) {
		switch x := c.(type) {
		case map[string]any:
			m := make(map[string]any, len(x)+1)
			for k, e := range x {
				m[k] = e
			}
			m[tok] = val
			return m, true
		case []any:
			i := len(x)
			if tok != "-" {
				var ok bool
				if i, ok = refIndex(tok, len(x)+1); !ok {
					return nil, false
				}
			}
			a := make([]any, 0, len(x)+1)
			a = append(a, x[:i]...)
			a = append(a, val)
			return append(a, x[i:]...), true
		}
		return nil, false
	})
}

func refRemove(v any, p []string) (any, bool) {
	if len(p) == 0 {
		return nil, false // Strata refuses to remove the whole document
	}
	return refEdit(v, p, func(c any, tok string) (any, bool) {
		switch x := c.(type) {
		case map[string]any:
			if _, ok := x[tok]; !ok {
				return nil, false
			}
			m := make(map[string]any, len(x))
			for k, e := range x {
				if k != tok {
					m[k] = e
				}
			}
			return m, true
		case []any:
			i, ok := refIndex(tok, len(x))
			if !ok {
				return nil, false
			}
			a := make([]any, 0, len(x)-1)
			a = append(a, x[:i]...)
			return append(a, x[i+1:]...), true
		}
		return nil, false
	})
}

func refReplace(v any, p []string, val any) (any, bool) {
	if _, ok := refGet(v, p); !ok {
		return nil, false
	}
	if len(p) == 0 {
		return val, true
	}
	return refEdit(v, p, func(c any, tok string) (any, bool) {
		switch x := c.(type) {
		case map[string]any:
			m := make(map[string]any, len(x))
			for k, e := range x {
				m[k] = e
			}
			m[tok] = val
			return m, true
		case []any:
			i, _ := refIndex(tok, len(x))
			a := append([]any(nil), x...)
			a[i] = val
			return a, true
		}
		return nil, false
	})
}

// refNumber is a JSON number reduced to sign, significant digits and a power of ten: equal values, equal forms.
func refNumber(text string) (neg bool, digits string, exp *big.Int) {
	s := text
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	exp = new(big.Int)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp.SetString(strings.TrimPrefix(s[i+1:], "+"), 10)
		s = s[:i]
	}
	if i := strings.IndexByte(s, '.'); i >= 0 {
		exp.Sub(exp, big.NewInt(int64(len(s)-i-1)))
		s = s[:i] + s[i+1:]
	}
	s = strings.TrimLeft(s, "0")
	if s == "" {
		return false, "", new(big.Int) // zero, whatever its sign
	}
	t := strings.TrimRight(s, "0")
	exp.Add(exp, big.NewInt(int64(len(s)-len(t))))
	return neg, t, exp
}

func refEqual(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		n1, d1, e1 := refNumber(string(x))
		n2, d2, e2 := refNumber(string(y))
		return n1 == n2 && d1 == d2 && e1.Cmp(e2) == 0
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, e := range x {
			f, ok := y[k]
			if !ok || !refEqual(e, f) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !refEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return a == b // nil, bool, string
}

// refPatch applies a parsed patch to doc; ok is false if any operation fails.
func refPatch(doc any, ops []Operation) (any, bool) {
	for _, op := range ops {
		path, ok := refParsePointer(op.Path)
		if !ok {
			return nil, false
		}
		var val any
		if op.HasValue && (op.Op == "add" || op.Op == "replace" || op.Op == "test") {
			var err error
			if val, err = decodeNumbers(op.Value); err != nil {
				return nil, false
			}
		}
		switch op.Op {
		case "add":
			doc, ok = refAdd(doc, path, val)
		case "remove":
			doc, ok = refRemove(doc, path)
		case "replace":
			doc, ok = refReplace(doc, path, val)
		case "test":
			var cur any
			if cur, ok = refGet(doc, path); ok {
				ok = refEqual(cur, val)
			}
		case "move", "copy":
			from, ok2 := refParsePointer(op.From)
			if !ok2 {
				return nil, false
			}
			var x any
			if x, ok = refGet(doc, from); !ok {
				return nil, false
			}
			if op.Op == "move" {
				if reflect.DeepEqual(from, path) {
					continue
				}
				if len(from) < len(path) && reflect.DeepEqual(from, path[:len(from)]) {
					return nil, false // into its own child
				}
				if doc, ok = refRemove(doc, from); !ok {
					return nil, false
				}
			}
			doc, ok = refAdd(doc, path, x)
		default:
			return nil, false
		}
		if !ok {
			return nil, false
		}
	}
	return doc, true
}

// jsonDepth is the deepest nesting of objects and arrays in v.
func jsonDepth(v any) int {
	d := 0
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			d = max(d, jsonDepth(e))
		}
		return d + 1
	case []any:
		for _, e := range x {
			d = max(d, jsonDepth(e))
		}
		return d + 1
	}
	return 0
}

// ---------------------------------------------------------------------------------------------------------------
// FuzzPatch

// padDoc grows a document so that small fuzzed documents also exercise trees: an array gets pad filler elements
// after its own, an object pad filler members.
func padDoc(doc any, pad int) any {
	switch x := doc.(type) {
	case []any:
		a := append(make([]any, 0, len(x)+pad), x...) // never nil: nil encodes as null
		for i := 0; i < pad; i++ {
			a = append(a, map[string]any{"i": json.Number(strconv.Itoa(i)), "s": fmt.Sprint("filler-", i*31)})
		}
		return a
	case map[string]any:
		m := make(map[string]any, len(x)+pad)
		for k, e := range x {
			m[k] = e
		}
		for i := 0; i < pad; i++ {
			k := fmt.Sprintf("pad%04d", i*7)
			if _, ok := m[k]; !ok {
				m[k] = []any{json.Number(strconv.Itoa(i)), "filler"}
			}
		}
		return m
	}
	return doc
}

func encodeNoEscape(t testing.TB, v any) []byte {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

type patchSeed struct {
	doc, patch string
	pad        uint16
}

var patchSeeds = []patchSeed{
	{`{"a":1}`, `[{"op":"add","path":"/b","value":2}]`, 0},
	{`{"a":1}`, `[{"op":"remove","path":"/a"}]`, 0},
	{`{"a":1}`, `[{"op":"replace","path":"","value":[1,2]}]`, 0},
	{`{"a":{"b":[1,2,3]}}`, `[{"op":"move","from":"/a/b/0","path":"/a/b/-"}]`, 0},
	{`{"a":{"b":[1,2,3]}}`, `[{"op":"copy","from":"/a","path":"/a/b/1"}]`, 0},
	{`{"a":{"b":[1,2,3]}}`, `[{"op":"move","from":"/a","path":"/a/b"}]`, 0},
	{`{"a":1.0}`, `[{"op":"test","path":"/a","value":1},{"op":"add","path":"/ok","value":true}]`, 0},
	{`{"a":[1,{"x":1e2}]}`, `[{"op":"test","path":"/a","value":[1.00,{"x":100}]}]`, 0},
	{`{"a":"x"}`, `[{"op":"test","path":"/a","value":"y"}]`, 0},
	{`[1,2,3]`, `[{"op":"add","path":"/1","value":"new"},{"op":"remove","path":"/0"}]`, 300},
	{`[1,2,3]`, `[{"op":"remove","path":"/1"},{"op":"remove","path":"/1"}]`, 2000},
	{`[1,2,3]`, `[{"op":"replace","path":"/2","value":{"deep":[[[]]]}}]`, 1500},
	{`[0]`, `[{"op":"add","path":"/-","value":1},{"op":"move","from":"/0","path":"/5"}]`, 900},
	{`{"a":1}`, `[{"op":"add","path":"/pad0070/1","value":"x"},{"op":"remove","path":"/pad0007"}]`, 1200},
	{`{"a":1}`, `[{"op":"copy","from":"","path":"/self"}]`, 400},
	{`{"a":1}`, `[{"op":"move","from":"/a","path":"/a"}]`, 0},
	{`{"a":1}`, `[{"op":"move","from":"","path":"/x"}]`, 0},
	{`[]`, `[{"op":"add","path":"/01","value":1}]`, 0},
	{`[]`, `[{"op":"add","path":"/-1","value":1}]`, 0},
	{`{}`, `[{"op":"add","path":"/a/b","value":1}]`, 0},
	{`{}`, `[{"op":"remove","path":""}]`, 0},
	{`{}`, `[{"op":"bogus","path":""}]`, 0},
	{`{}`, `[{"op":"add","path":"/a","value":1,"value":2}]`, 0},
	{`{}`, `{"op":"add"}`, 0},
	{`{}`, `[{"op":"add","path":"~","value":1}]`, 0},
	{`{"x":"` + strings.Repeat("é", 3000) + `"}`, `[{"op":"test","path":"/x","value":"` + strings.Repeat("é", 3000) + `"}]`, 0},
	{`{"x":"` + strings.Repeat("é", 3000) + `"}`, `[{"op":"copy","from":"/x","path":"/y"}]`, 600},
}

func FuzzPatch(f *testing.F) {
	for _, s := range patchSeeds {
		f.Add([]byte(s.doc), []byte(s.patch), s.pad)
	}
	// The RFC 6902 conformance cases (testdata/json-patch-tests).
	for _, file := range []string{"tests.json", "spec_tests.json"} {
		raw, err := os.ReadFile(filepath.Join(patchTestsDir, file))
		if err != nil {
			f.Fatal(err)
		}
		var cases []patchCase
		if err := json.Unmarshal(raw, &cases); err != nil {
			f.Fatalf("%s: %v", file, err)
		}
		for _, c := range cases {
			if !c.Disabled && c.Doc != nil && c.Patch != nil {
				f.Add([]byte(c.Doc), []byte(c.Patch), uint16(0))
			}
		}
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, doc, patch []byte, pad uint16) {
		if len(doc)+len(patch) > 64<<10 {
			t.Skip("input over 64 KiB")
		}
		fo, ms := newForest(t)
		if _, _, err := fo.ImportBytes(ctx, doc); err != nil {
			return // FuzzImportRoundTrip covers bad documents
		}
		docAny, err := decodeNumbers(doc)
		if err != nil {
			t.Fatalf("Strata accepted %q but encoding/json does not: %v", doc, err)
		}
		docAny = padDoc(docAny, int(pad%2048))
		docText := encodeNoEscape(t, docAny)
		root, _, err := fo.ImportBytes(ctx, docText)
		if err != nil {
			t.Fatalf("import of the padded document: %v", err)
		}
		before := mustJSON(t, fo, root)
		nodesBefore := ms.Len()

		ops, err := ParsePatch(patch)
		if err != nil {
			if !errors.Is(err, ErrInvalidPatch) {
				t.Fatalf("ParsePatch(%q): error %v does not wrap ErrInvalidPatch", patch, err)
			}
			return
		}
		change, err := fo.Patch(ctx, root, ops)
		want, refOK := refPatch(docAny, ops)
		if err != nil {
			_ = err.Error()
			var pe *PatchError
			if !errors.As(err, &pe) || pe.Index < 0 || pe.Index >= len(ops) {
				t.Fatalf("Patch error %v is not a *PatchError naming an operation", err)
			}
			// Refusing a result nested deeper than MaxDepth is fine (Import refuses such documents too).
			if refOK && jsonDepth(want) <= MaxDepth {
				t.Fatalf("Patch failed but the reference succeeds:\ndoc   %.300s\npatch %.300s\nerror %v", docText, patch, err)
			}
			if got := mustJSON(t, fo, root); got != before || ms.Len() != nodesBefore {
				t.Fatalf("a failed patch changed the document or the store")
			}
			return
		}
		if !refOK {
			t.Fatalf("Patch succeeded but the reference fails:\ndoc   %.300s\npatch %.300s\ngot   %.300s", docText, patch, mustJSON(t, fo, change.Root))
		}
		if got := mustJSON(t, fo, root); got != before || ms.Len() != nodesBefore {
			t.Fatalf("Patch changed the original document or wrote to the store before Save")
		}
		for _, n := range change.Nodes {
			if store.HashOf(n.Data) != n.Hash {
				t.Fatalf("Change has a node whose data does not match its hash")
			}
		}
		if _, err := fo.Save(ctx, change); err != nil {
			t.Fatal(err)
		}
		// Read the result from a fresh forest, so that it must come from the store: Change.Nodes is complete.
		fresh := New(ms, nil)
		wantText := encodeNoEscape(t, want)
		checkValue(t, fresh, change.Root, wantText)
		// The edited tree is the canonical tree of its content: the same Value as the result imported afresh. (So
		// Strata must also be able to import every document it lets a patch make.)
		out := mustJSON(t, fresh, change.Root)
		again, _, err := fresh.ImportBytes(ctx, []byte(out))
		if err != nil {
			t.Fatalf("re-import of the patched document (nesting depth %d):\ndoc   %.300s\npatch %.300s\nerror %.300v", jsonDepth(want), docText, patch, err)
		}
		if again != change.Root {
			t.Fatalf("patched tree is not canonical (differs from a fresh import of its JSON):\ndoc   %.300s\npatch %.300s", docText, patch)
		}
	})
}

// ---------------------------------------------------------------------------------------------------------------
// Regression tests for bugs found while writing the fuzz targets (the seeds regression-* in testdata/fuzz/FuzzPatch
// reproduce the first two as well).

// A patch must not build a document nested deeper than MaxDepth: Strata would then refuse to import its own JSON
// output. Either Patch refuses such a result, or the result must re-import.
func TestPatchResultDeeperThanMaxDepth(t *testing.T) {
	ctx := context.Background()
	f, _ := newForest(t)
	const d = 260 // 2*d > MaxDepth
	root := mustImport(t, f, strings.Repeat("[", d)+strings.Repeat("]", d))
	path := strings.Repeat("/0", d-1) + "/-" // append into the innermost array
	ops, err := ParsePatch([]byte(`[{"op":"copy","from":"","path":"` + path + `"}]`))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := f.Patch(ctx, root, ops)
	if err != nil {
		return // refusing is fine
	}
	if _, err := f.Save(ctx, ch); err != nil {
		t.Fatal(err)
	}
	out := mustJSON(t, f, ch.Root)
	if _, _, err := f.ImportBytes(ctx, []byte(out)); err != nil {
		t.Fatalf("Patch built a document %d deep (MaxDepth %d) that Import then refuses: %.200v", 2*d, MaxDepth, err)
	}
}

// RFC 6902 §4.6: numbers are equal when their values are, however large their exponents. (A comparison through
// big.Rat.SetString, which refuses decimal exponents beyond ±1e6, found these unequal.)
func TestPatchTestNumberHugeExponent(t *testing.T) {
	ctx := context.Background()
	f, _ := newForest(t)
	root := mustImport(t, f, `{"a":1e1000001,"b":-2E-1000001}`)
	for _, p := range []string{
		`[{"op":"test","path":"/a","value":10e1000000}]`,
		`[{"op":"test","path":"/a","value":1.0e1000001}]`,
		`[{"op":"test","path":"/b","value":-0.2e-1000000}]`,
	} {
		ops, err := ParsePatch([]byte(p))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Patch(ctx, root, ops); err != nil {
			t.Errorf("%s on %s: %v", p, `{"a":1e1000001,"b":-2E-1000001}`, err)
		}
	}
}

// Comparing numbers must not cost more than their text: through big.Rat each pair with an exponent near 1e6 took
// ~57 ms (10^999999 is built), and test compared whole containers without looking at the context, so a 435-byte
// patch on a 360-byte document kept a core busy for 2.3 s past a 100 ms deadline.
func TestPatchTestNumberCost(t *testing.T) {
	ctx := context.Background()
	f, _ := newForest(t)
	const n = 40
	root := mustImport(t, f, "["+strings.Repeat("1e999999,", n-1)+"1e999999]")
	ops, err := ParsePatch([]byte(`[{"op":"test","path":"","value":[` + strings.Repeat("10e999998,", n-1) + `10e999998]}]`))
	if err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = f.Patch(c, root, ops)
	if el := time.Since(start); el > time.Second {
		t.Fatalf("one test operation over %d numbers took %v with a 100 ms deadline (err %v)", n, el.Round(time.Millisecond), err)
	}
}

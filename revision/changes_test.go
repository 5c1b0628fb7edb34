package revision

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// TestArrayChangesRebuildB checks that applying the runs ArrayChanges reports to a gives b exactly, on arrays small
// (inline) and large (trees) with random edits, and that a point edit in a big array reads a handful of nodes.
func TestArrayChangesRebuildB(t *testing.T) {
	ctx := context.Background()
	f, _ := newForest(t)
	rng := rand.New(rand.NewSource(envSeed()))
	for round := 0; round < 200; round++ {
		n := rng.Intn(30)
		if round%10 == 0 {
			n = 2000 + rng.Intn(2000)
		}
		a := make([]string, n)
		for i := range a {
			a[i] = fmt.Sprintf(`{"id":%d,"v":"%d"}`, i, rng.Intn(5))
		}
		b := slices.Clone(a)
		for e := rng.Intn(6); e > 0; e-- {
			switch i := rng.Intn(len(b) + 1); rng.Intn(3) {
			case 0:
				b = slices.Insert(b, i, fmt.Sprintf(`{"new":%d}`, rng.Intn(1000)))
			case 1:
				if i < len(b) {
					b = slices.Delete(b, i, i+1)
				}
			default:
				if i < len(b) {
					b[i] = fmt.Sprintf(`{"id":%d,"v":"changed %d"}`, i, rng.Intn(1000))
				}
			}
		}
		va := mustImport(t, f, "["+strings.Join(a, ",")+"]")
		vb := mustImport(t, f, "["+strings.Join(b, ",")+"]")
		cs, err := f.ArrayChanges(ctx, va, vb)
		if err != nil {
			t.Fatal(err)
		}
		// Rebuild b from a and the runs.
		var got []string
		at := uint64(0)
		for _, c := range cs {
			if c.A < at || c.B != uint64(len(got))+(c.A-at) {
				t.Fatalf("round %d: run at a %d, b %d out of order (a at %d, b built %d)", round, c.A, c.B, at, len(got))
			}
			got = append(got, a[at:c.A]...)
			for _, v := range c.Added {
				got = append(got, mustJSON(t, f, v))
			}
			for k, v := range c.Removed {
				if want := canonical(t, []byte(a[c.A+uint64(k)])); mustJSON(t, f, v) != want {
					t.Fatalf("round %d: removed %s, a has %s there", round, mustJSON(t, f, v), want)
				}
			}
			at = c.A + uint64(len(c.Removed))
		}
		got = append(got, a[at:]...)
		for i := range got {
			got[i] = canonical(t, []byte(got[i]))
		}
		want := make([]string, len(b))
		for i := range b {
			want[i] = canonical(t, []byte(b[i]))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: a with the runs applied is not b:\n got %v\nwant %v", round, got, want)
		}
	}
}

func TestEqualityHash(t *testing.T) {
	ctx := context.Background()
	f, _ := newForest(t)
	long := strings.Repeat("x", 5000)
	same := [][2]string{
		{`1`, `1.0`}, {`1`, `10e-1`}, {`-0`, `0`}, {`100`, `1e2`}, {`{"a":1,"b":[2]}`, `{"b":[2.00],"a":1}`},
		{`"` + long + `"`, `"` + long + `"`}, {`[` + strings.Repeat(`1.0,`, 400) + `1]`, `[` + strings.Repeat(`1,`, 400) + `1]`},
	}
	differ := [][2]string{
		{`1`, `"1"`}, {`1`, `2`}, {`[1]`, `{"0":1}`}, {`true`, `false`}, {`null`, `false`}, {`{"a":1}`, `{"a":1,"b":1}`},
		{`"ab"`, `"a"`}, {`[[1],2]`, `[[1,2]]`}, {`0.1`, `1`}, {`-1`, `1`},
	}
	hash := func(doc string) uint64 {
		h, err := f.EqualityHash(ctx, mustImport(t, f, doc))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	for _, p := range same {
		if hash(p[0]) != hash(p[1]) {
			t.Errorf("%.40s and %.40s are equal JSON but hash apart", p[0], p[1])
		}
	}
	for _, p := range differ {
		if hash(p[0]) == hash(p[1]) {
			t.Errorf("%s and %s differ but hash alike", p[0], p[1])
		}
	}
}

func TestEachChangedMember(t *testing.T) {
	ctx := context.Background()
	f, _ := newForest(t)
	var big strings.Builder
	big.WriteString("{")
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&big, `"k%05d":%d,`, i, i)
	}
	a := mustImport(t, f, big.String()+`"z":0}`)
	b := mustPatch(t, f, a, `[{"op":"replace","path":"/k01234","value":"x"},{"op":"remove","path":"/k00007"},{"op":"add","path":"/new","value":1}]`)
	var got []string
	err := f.EachChangedMember(ctx, a, b, func(k string, va, vb Value) error {
		got = append(got, fmt.Sprintf("%s:%v>%v", k, va.IsValid(), vb.IsValid()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"k00007:true>false", "k01234:true>true", "new:false>true"}; !slices.Equal(got, want) {
		t.Fatalf("changed members %v, want %v", got, want)
	}
}

//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package audit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestReadNewest: reading backwards gives exactly the records Read gives, newest first, across block boundaries
// and long lines; before and maxScan page through the log; a torn last line is skipped.
func TestReadNewest(t *testing.T) {
	l, path := openTemp(t)
	for i := range 1200 {
		r := sample([]string{"ada", "bob", "cy"}[i%3], i)
		if i%7 == 0 {
			r.Client = strings.Repeat("c", 400) // long lines, so that lines straddle the 64 KiB blocks
		}
		if _, err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []Filter{{}, {Principal: "bob"}, {Principal: "nobody"}} {
		var forward []uint64
		if err := Read(bytes.NewReader(data), f, func(r Record) error { forward = append(forward, r.Seq); return nil }); err != nil {
			t.Fatal(err)
		}
		slices.Reverse(forward)
		// Page through, 100 at a time, with a scan bound.
		var back []uint64
		before := uint64(0)
		for pages := 0; ; pages++ {
			if pages > 1000 {
				t.Fatal("paging does not end")
			}
			n := 0
			last, err := ReadNewest(bytes.NewReader(data), int64(len(data)), f, before, 500, func(r Record) error {
				back = append(back, r.Seq)
				if n++; n == 100 {
					return ErrStop
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if last == 0 {
				break
			}
			before = last
		}
		if !slices.Equal(back, forward) {
			t.Errorf("filter %+v: %d records backwards, %d forwards (first %v, want %v)", f, len(back), len(forward), back[:min(5, len(back))], forward[:min(5, len(forward))])
		}
	}
	// A torn append at the end is skipped, as Read skips it.
	torn := append(slices.Clone(data), []byte(`{"time":"2026`)...)
	var got []uint64
	if _, err := ReadNewest(bytes.NewReader(torn), int64(len(torn)), Filter{}, 0, 0, func(r Record) error {
		got = append(got, r.Seq)
		return ErrStop
	}); err != nil || !slices.Equal(got, []uint64{1200}) {
		t.Errorf("with a torn tail: %v %v", got, err)
	}
	// An empty log, and garbage.
	if last, err := ReadNewest(bytes.NewReader(nil), 0, Filter{}, 0, 0, func(Record) error { return fmt.Errorf("called") }); last != 0 || err != nil {
		t.Errorf("an empty log: %d %v", last, err)
	}
	if _, err := ReadNewest(strings.NewReader("not json\n"), 9, Filter{}, 0, 0, func(Record) error { return nil }); err == nil {
		t.Error("garbage read as records")
	}
}

// pagesNewest reads l with Log.ReadNewest a page of up to size matching records at a time, as the review page
// does, and returns the seqs it saw, newest first.
func pagesNewest(t *testing.T, l *Log, f Filter, size int) []uint64 {
	t.Helper()
	var seqs []uint64
	before := uint64(0)
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("paging does not end")
		}
		n := 0
		next, err := l.ReadNewest(context.Background(), f, before, 0, func(r Record) error {
			seqs = append(seqs, r.Seq)
			if n++; n == size {
				return ErrStop
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if next == 0 {
			return seqs
		}
		before = next
	}
}

// wantNewest checks that seqs are n down to 1, or those of them that keep says.
func wantNewest(t *testing.T, seqs []uint64, n int, keep func(uint64) bool) {
	t.Helper()
	var want []uint64
	for s := uint64(n); s >= 1; s-- {
		if keep == nil || keep(s) {
			want = append(want, s)
		}
	}
	if fmt.Sprint(seqs) != fmt.Sprint(want) {
		t.Fatalf("read %v\nwant %v", seqs, want)
	}
}

// TestLogReadNewestAcrossFiles: a rotated log reads newest first as one, page after page, from the current file on
// through every rotated file, with a filter too.
func TestLogReadNewestAcrossFiles(t *testing.T) {
	l, path := openRotating(t, 2000, nil)
	appendN(t, l, "ada", 20)
	appendN(t, l, "bob", 20)
	if files, err := Files(path); err != nil || len(files) < 5 {
		t.Fatalf("files %q (%v): want several rotated files", files, err)
	}
	wantNewest(t, pagesNewest(t, l, Filter{}, 7), 40, nil)
	wantNewest(t, pagesNewest(t, l, Filter{}, 100), 40, nil)
	wantNewest(t, pagesNewest(t, l, Filter{Principal: "ada"}, 3), 40, func(s uint64) bool { return s <= 20 })
}

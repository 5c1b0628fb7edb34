//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package audit

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A database name (from an MCP call's raw arguments, or a review page URL such as /ui/db/%FF) holding invalid
// UTF-8 is appended without complaint, but the log then fails `strata audit --verify` at that line forever.
func TestInvalidUTF8FieldBreaksVerify(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendN(t, l, "ada", 2)
	rec := sample("ada", 2)
	rec.Database = "shop\xff"
	if _, err := l.Append(rec); err != nil {
		t.Fatalf("append: %v", err)
	}
	appendN(t, l, "ada", 2)
	if sum, err := VerifyLog(path, nil); err != nil || sum.Records != 5 {
		t.Fatalf("VerifyLog of an untampered log = %+v, %v; want 5 records, no error", sum, err)
	}
}

// A rotation cut short by a crash after os.Link (the old file under both names), followed by an append that does
// not rotate and a later rotation, leaves two rotated names for one file: the untampered log then fails
// verification forever, and ReadLog returns its records twice.
func TestCrashedRotationThenLaterRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	l, err := OpenWith(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, "ada", 5)
	// What rotate leaves when it dies after os.Link.
	if err := os.Link(path, RotatedName(path, 1, 5)); err != nil {
		t.Fatal(err)
	}
	// After the restart the next record fits (or this writer does not rotate): it goes into audit.log.
	appendN(t, l, "ada", 1)
	l.Close()
	// Later a rotation happens.
	l, err = OpenWith(path, Options{MaxBytes: 100, Warn: func(err error) { t.Errorf("warning: %v", err) }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if r, err := l.Append(sample("bob", 0)); err != nil || r.Seq != 7 {
		t.Fatalf("append: %+v, %v", r, err)
	}
	readsAndVerifies(t, path, 7)
}

// In the state a rotation cut short by a crash leaves (the current file also under its rotated name), ReadLog and
// VerifyLog skip the duplicate, but Log.ReadNewest (the review page's audit log) shows every record twice.
func TestReadNewestDuplicatesAfterCrashedRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	l, err := OpenWith(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendN(t, l, "ada", 5)
	if err := os.Link(path, RotatedName(path, 1, 5)); err != nil {
		t.Fatal(err)
	}
	seqs := newestSeqs(t, l)
	if len(seqs) != 5 {
		t.Fatalf("ReadNewest: seqs %v; want 5 4 3 2 1", seqs)
	}
}

// A log already left with one file under two rotated names (by a rotation cut short, before rotate removed the
// shorter name) reads and verifies as one file.
func TestOneFileUnderTwoRotatedNames(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	l, err := OpenWith(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, "ada", 6)
	l.Close()
	for _, name := range []string{RotatedName(path, 1, 5), RotatedName(path, 1, 6)} {
		if err := os.Link(path, name); err != nil {
			t.Fatal(err)
		}
	}
	// The rotation went on to start a new, empty current file.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	readsAndVerifies(t, path, 6)
}

// ReadNewest (the review page's audit view) reads such a file once too.
func TestReadNewestOneFileUnderTwoRotatedNames(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	l, err := OpenWith(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendN(t, l, "ada", 3)
	for _, name := range []string{RotatedName(path, 1, 2), RotatedName(path, 1, 3)} {
		if err := os.Link(path, name); err != nil {
			t.Fatal(err)
		}
	}
	seqs := newestSeqs(t, l)
	if len(seqs) != 3 {
		t.Fatalf("ReadNewest: seqs %v; want 3 2 1", seqs)
	}
}

// readsAndVerifies checks that the log at path reads as n records, and verifies.
func readsAndVerifies(t *testing.T, path string, n int) {
	t.Helper()
	got := 0
	if err := ReadLog(path, Filter{}, func(Record) error { got++; return nil }); err != nil || got != n {
		t.Errorf("ReadLog: %d records, %v; want %d", got, err, n)
	}
	if sum, err := VerifyLog(path, nil); err != nil || sum.Records != n {
		t.Fatalf("VerifyLog of an untampered log = %+v, %v; want %d records", sum, err, n)
	}
}

// newestSeqs is what ReadNewest (the review page's audit view) lists, newest first.
func newestSeqs(t *testing.T, l *Log) []uint64 {
	t.Helper()
	var seqs []uint64
	if _, err := l.ReadNewest(context.Background(), Filter{}, 0, 0, func(r Record) error {
		seqs = append(seqs, r.Seq)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return seqs
}

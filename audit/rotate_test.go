//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package audit

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func openRotating(t *testing.T, max int64, key *Key) (*Log, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	l, err := OpenWith(path, Options{MaxBytes: max, Key: key, Warn: func(err error) { t.Errorf("warning: %v", err) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, path
}

// readAll is every record of the log at path, through ReadLog.
func readAll(t *testing.T, path string) []Record {
	t.Helper()
	var out []Record
	if err := ReadLog(path, Filter{}, func(r Record) error { out = append(out, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAuditRotation: past MaxBytes the log goes on in a new file chained to the old one; every file stays within the
// size, is named after the records it holds, and the log verifies and reads as one.
func TestAuditRotation(t *testing.T) {
	const max = 2000
	l, path := openRotating(t, max, nil)
	recs := appendN(t, l, "ada", 40)
	files, err := Files(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 || files[len(files)-1] != path {
		t.Fatalf("files %q: want several rotated files, then %s", files, path)
	}
	next := uint64(1)
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > max || fi.Size() == 0 || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %d bytes, mode %v; want 1 to %d bytes, 0600", f, fi.Size(), fi.Mode().Perm(), max)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n := strings.Count(string(data), "\n")
		if f != path {
			if want := RotatedName(path, next, next+uint64(n)-1); f != want {
				t.Errorf("file %s, want %s", f, want)
			}
		}
		next += uint64(n)
	}
	sum, err := VerifyLog(path, nil)
	if err != nil || sum.Records != 40 || sum.First != 1 || sum.Last != 40 || len(sum.Files) != len(files) {
		t.Fatalf("VerifyLog = %+v, %v", sum, err)
	}
	got := readAll(t, path)
	if len(got) != 40 {
		t.Fatalf("ReadLog: %d records", len(got))
	}
	for i, r := range got {
		if r != recs[i] {
			t.Fatalf("record %d read back as %+v, appended as %+v", i+1, r, recs[i])
		}
	}
	// The first record of each new file is chained to the last of the one before.
	if recs[len(recs)-1].Prev != recs[len(recs)-2].Hash {
		t.Error("chain broken")
	}
	// A single file still verifies on its own when it starts the log, and Verify alone refuses one that does not.
	f, _ := os.Open(files[1])
	defer f.Close()
	var ve *VerifyError
	if _, err := Verify(f); !errors.As(err, &ve) || !strings.Contains(ve.Problem, "records 1–") {
		t.Errorf("Verify of a later file alone: %v", err)
	}
	// MaxBytes 0 never rotates.
	l0, path0 := openRotating(t, 0, nil)
	appendN(t, l0, "ada", 40)
	if files, _ := Files(path0); len(files) != 1 {
		t.Errorf("MaxBytes 0 rotated: %q", files)
	}
	if _, err := OpenWith(path0, Options{MaxBytes: -1}); err == nil {
		t.Error("negative MaxBytes accepted")
	}
}

// TestAuditRotationAcrossProcesses: three processes appending to one log that rotates every few records, keyed, make
// one chain across the files holding every record once (the rotation is atomic with respect to the other
// appenders: none writes to a file that was rotated away, none starts a chain of its own).
func TestAuditRotationAcrossProcesses(t *testing.T) {
	const secret = "0123456789abcdef-rotation"
	key, err := NewKey([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	const max, n = 3000, 100
	l, path := openRotating(t, max, key)
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for _, who := range []string{"a", "b"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAppendChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "STRATA_AUDIT_PATH="+path, "STRATA_AUDIT_WHO="+who, "STRATA_AUDIT_N="+strconv.Itoa(n),
			"STRATA_AUDIT_MAX="+strconv.Itoa(max), "STRATA_AUDIT_KEY="+secret)
		wg.Go(func() {
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("child %s: %v\n%s", who, err, out)
			}
		})
	}
	wg.Go(func() {
		for i := range n {
			if _, err := l.Append(sample("parent", i)); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sum, err := VerifyLog(path, key)
	if err != nil || sum.Records != 3*n || sum.KeyID != key.ID() {
		t.Fatalf("VerifyLog = %+v, %v; want %d records keyed %s", sum, err, 3*n, key.ID())
	}
	seen := map[string]bool{}
	for _, r := range readAll(t, path) {
		k := r.Principal + "/" + strconv.FormatUint(r.Revision, 10)
		if seen[k] {
			t.Fatalf("record %s twice", k)
		}
		seen[k] = true
	}
	if len(seen) != 3*n {
		t.Fatalf("%d distinct records, want %d", len(seen), 3*n)
	}
	if _, err := os.Stat(path + rotatingSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a rotation left %s behind: %v", path+rotatingSuffix, err)
	}
	t.Logf("3 processes × %d appends, rotated at %d bytes: %d files", n, max, len(sum.Files))
}

// TestAuditRotationFailures: a removed, renamed or edited rotated file is found; a rotation cut short by a crash
// (the old file under both names, a stray temporary file) is finished by the next append, and nothing is counted
// twice in between.
func TestAuditRotationFailures(t *testing.T) {
	build := func(t *testing.T) (string, []string) {
		l, path := openRotating(t, 1500, nil)
		appendN(t, l, "ada", 30)
		l.Close()
		files, err := Files(path)
		if err != nil || len(files) < 4 {
			t.Fatalf("files %q, %v", files, err)
		}
		return path, files
	}
	for _, tc := range []struct {
		name string
		harm func(t *testing.T, files []string)
		want string
	}{
		{"oldest file removed", func(t *testing.T, files []string) { os.Remove(files[0]) },
			"the log begins at record"},
		{"middle file removed", func(t *testing.T, files []string) { os.Remove(files[1]) },
			"record(s) are missing: a rotated file was removed"},
		{"file renamed to another range", func(t *testing.T, files []string) {
			path := filepath.Join(filepath.Dir(files[1]), FileName)
			first, last, ok := parseRotated(path, filepath.Base(files[1]))
			if !ok {
				t.Fatalf("%s is not a rotated file's name", files[1])
			}
			if err := os.Rename(files[1], RotatedName(path, first, last+1)); err != nil {
				t.Fatal(err)
			}
		}, "its name says"},
		{"last record of a rotated file cut", func(t *testing.T, files []string) {
			data, _ := os.ReadFile(files[1])
			lines := strings.SplitAfter(string(data), "\n")
			os.WriteFile(files[1], []byte(strings.Join(lines[:len(lines)-2], "")), 0o600)
		}, "but its name says"},
		{"a rotated file's record edited", func(t *testing.T, files []string) {
			data, _ := os.ReadFile(files[2])
			os.WriteFile(files[2], []byte(strings.Replace(string(data), `"outcome":"ok"`, `"outcome":"NO"`, 1)), 0o600)
		}, "hash does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, files := build(t)
			tc.harm(t, files)
			_, err := VerifyLog(path, nil)
			var ve *VerifyError
			if !errors.As(err, &ve) || !strings.Contains(ve.Problem, tc.want) || ve.File == "" {
				t.Fatalf("VerifyLog: %v; want a VerifyError naming a file: …%s…", err, tc.want)
			}
		})
	}

	t.Run("crash between link and rename", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), FileName)
		l, err := OpenWith(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		appendN(t, l, "ada", 5)
		l.Close()
		// What rotate leaves when it dies after os.Link: the old file under both names, and its temporary file.
		if err := os.Link(path, RotatedName(path, 1, 5)); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(path+rotatingSuffix, []byte(`{"half`), 0o600)
		if sum, err := VerifyLog(path, nil); err != nil || sum.Records != 5 {
			t.Fatalf("VerifyLog in between = %+v, %v", sum, err)
		}
		if got := readAll(t, path); len(got) != 5 {
			t.Fatalf("ReadLog in between: %d records", len(got))
		}
		l, err = OpenWith(path, Options{MaxBytes: 100, Warn: func(err error) { t.Errorf("warning: %v", err) }})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		r, err := l.Append(sample("bob", 0))
		if err != nil || r.Seq != 6 {
			t.Fatalf("append: %+v, %v", r, err)
		}
		if sum, err := VerifyLog(path, nil); err != nil || sum.Records != 6 || len(sum.Files) != 2 {
			t.Fatalf("VerifyLog after = %+v, %v", sum, err)
		}
	})

	t.Run("rotation impossible", func(t *testing.T) {
		// The rotated name is taken by another file: the record goes into the current file, with a warning.
		path := filepath.Join(t.TempDir(), FileName)
		var warned []error
		l, err := OpenWith(path, Options{MaxBytes: 100, Warn: func(err error) { warned = append(warned, err) }})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		appendN(t, l, "ada", 1)
		os.WriteFile(RotatedName(path, 1, 1), []byte("someone else's\n"), 0o600)
		if r, err := l.Append(sample("ada", 1)); err != nil || r.Seq != 2 {
			t.Fatalf("append: %+v, %v", r, err)
		}
		if len(warned) != 1 || !strings.Contains(warned[0].Error(), "not rotating") {
			t.Fatalf("warnings %v", warned)
		}
		os.Remove(RotatedName(path, 1, 1))
		f, _ := os.Open(path)
		defer f.Close()
		if n, err := Verify(f); err != nil || n != 2 {
			t.Fatalf("Verify = %d, %v", n, err)
		}
	})
}

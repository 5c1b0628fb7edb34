//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package audit

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mustKey(t *testing.T, secret string) *Key {
	t.Helper()
	k, err := NewKey([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// rehashAll recomputes, from line from (0-based) on, every record's prev and unkeyed hash: what someone who can
// write the log but has no key does after editing a record. strip also takes key_id off.
func rehashAll(t *testing.T, data string, from int, edit func(r *Record), strip bool) string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(data, "\n"), "\n")
	prev := ""
	for i, l := range lines {
		var r Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if i < from {
			prev = r.Hash
			continue
		}
		if i == from && edit != nil {
			edit(&r)
		}
		if strip {
			r.KeyID = ""
		}
		r.Prev = prev
		r.Hash, _ = ComputeHash(r)
		b, _ := r.MarshalJSON()
		lines[i], prev = string(b), r.Hash
	}
	return strings.Join(lines, "\n") + "\n"
}

// TestAuditKeyedChain holds docs/security.md T26: an edited record whose hashes were recomputed passes an unkeyed
// chain's verification, and fails a keyed one's, however it is recomputed; the right key verifies, another key
// or none is told apart from tampering, and the key is never in the log.
func TestAuditKeyedChain(t *testing.T) {
	const secret = "a-secret-of-32-characters-000000"
	key := mustKey(t, secret)
	edit := func(r *Record) { r.Principal = "eve" } // the forger puts the blame on someone else

	// Unkeyed (today): the forger wins.
	l, path := openTemp(t)
	appendN(t, l, "ada", 6)
	data, _ := os.ReadFile(path)
	if n, err := Verify(strings.NewReader(rehashAll(t, string(data), 2, edit, false))); err != nil || n != 6 {
		t.Fatalf("an unkeyed log edited and re-hashed: Verify = %d, %v (expected to pass: that is the weakness)", n, err)
	}

	// Keyed.
	dir := t.TempDir()
	kpath := filepath.Join(dir, FileName)
	kl, err := OpenWith(kpath, Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer kl.Close()
	recs := appendN(t, kl, "ada", 6)
	for _, r := range recs {
		if r.KeyID != key.ID() || len(r.Hash) != 64 {
			t.Fatalf("record %+v: want key id %s", r, key.ID())
		}
		if want, _ := key.Hash(r); r.Hash != want {
			t.Fatalf("hash is not the HMAC")
		}
	}
	kdata, _ := os.ReadFile(kpath)
	if strings.Contains(string(kdata), secret) || strings.Contains(string(kdata), secret[:16]) {
		t.Fatal("the key is in the log")
	}
	if n, err := VerifyWith(strings.NewReader(string(kdata)), key); err != nil || n != 6 {
		t.Fatalf("keyed log, right key: VerifyWith = %d, %v", n, err)
	}
	if sum, err := VerifyLog(kpath, key); err != nil || sum.Records != 6 || sum.KeyID != key.ID() {
		t.Fatalf("VerifyLog = %+v, %v", sum, err)
	}
	for _, tc := range []struct {
		name, data string
		line       int
		want       string
	}{
		{"edited, re-hashed unkeyed", rehashAll(t, string(kdata), 2, edit, false), 3, "hash does not match the record (HMAC with the key)"},
		{"edited, every key id taken off, re-hashed", rehashAll(t, string(kdata), 0, edit, true), 6, "no record is keyed, but a key was given"},
		{"edited, key ids taken off from there, re-hashed", rehashAll(t, string(kdata), 2, edit, true), 3, "not keyed, but the records before it are"},
		{"tail taken off the key", rehashAll(t, string(kdata), 4, nil, true), 5, "not keyed, but the records before it are"},
		{"edited, left as it was", strings.Replace(string(kdata), `"decision":"allow"`, `"decision":"deny"`, 1), 1, "hash does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := VerifyWith(strings.NewReader(tc.data), key)
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.Line != tc.line || !strings.Contains(ve.Problem, tc.want) {
				t.Fatalf("VerifyWith = %v; want line %d: …%s…", err, tc.line, tc.want)
			}
		})
	}
	// Without the key, or with another: a KeyError, not a report of tampering.
	var ke *KeyError
	if n, err := Verify(strings.NewReader(string(kdata))); !errors.As(err, &ke) || ke.Given != "" || ke.KeyID != key.ID() || ke.Line != 1 || n != 0 ||
		!strings.Contains(err.Error(), "keyed (key id "+key.ID()+")") || !strings.Contains(err.Error(), "--audit-key") {
		t.Fatalf("Verify of a keyed log without the key = %d, %v", n, err)
	}
	other := mustKey(t, "another-secret-of-32-characters-")
	if _, err := VerifyWith(strings.NewReader(string(kdata)), other); !errors.As(err, &ke) || ke.Given != other.ID() || !strings.Contains(err.Error(), "wrong key") {
		t.Fatalf("VerifyWith another key = %v", err)
	}

	// Appending: a keyed log refuses appenders without its key, or with another.
	if _, err := Open(kpath); !errors.As(err, &ke) || ke.Given != "" {
		t.Fatalf("Open of a keyed log without the key = %v", err)
	}
	if _, err := OpenWith(kpath, Options{Key: other}); !errors.As(err, &ke) || ke.Given != other.ID() {
		t.Fatalf("OpenWith another key = %v", err)
	}
	// ... also one opened before the log became keyed (Check and Append read the tail).
	path2 := filepath.Join(t.TempDir(), FileName)
	plain, err := Open(path2)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	appendN(t, plain, "ada", 2)
	keyed, err := OpenWith(path2, Options{Key: key})
	if err != nil {
		t.Fatal(err) // an unkeyed log may go on keyed
	}
	defer keyed.Close()
	appendN(t, keyed, "bob", 2)
	if err := plain.Check(); !errors.As(err, &ke) {
		t.Fatalf("Check without the key after keyed records = %v", err)
	}
	if _, err := plain.Append(sample("ada", 9)); !errors.As(err, &ke) {
		t.Fatalf("Append without the key after keyed records = %v", err)
	}
	// Unkeyed records, then keyed ones: verifies with the key (the keyed records pin the ones before them).
	if sum, err := VerifyLog(path2, key); err != nil || sum.Records != 4 || sum.KeyID != key.ID() {
		t.Fatalf("VerifyLog of a log keyed from record 3 = %+v, %v", sum, err)
	}
	if sum, err := VerifyLog(path2, nil); !errors.As(err, &ke) || ke.Line != 3 || sum.Records != 2 {
		t.Fatalf("VerifyLog without the key = %+v, %v", sum, err)
	}
	// Editing the unkeyed part and re-hashing it breaks the link to the first keyed record.
	d2, _ := os.ReadFile(path2)
	forged := rehashAll(t, string(d2), 0, edit, false)
	forged = strings.Join(append(strings.SplitAfter(forged, "\n")[:2], strings.SplitAfter(string(d2), "\n")[2:]...), "")
	if _, err := VerifyWith(strings.NewReader(forged), key); err == nil || !strings.Contains(err.Error(), "line 3: prev does not match") {
		t.Fatalf("the unkeyed part edited: %v", err)
	}
}

func TestAuditLoadKey(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	good := write("good", "  0123456789abcdef0123456789abcdef\n", 0o600)
	k, err := LoadKey(good)
	if err != nil {
		t.Fatal(err)
	}
	if k2 := mustKey(t, "0123456789abcdef0123456789abcdef"); k.ID() != k2.ID() || len(k.ID()) != 16 {
		t.Fatalf("the file's contents are not trimmed: %s vs %s", k.ID(), k2.ID())
	}
	if strings.Contains("0123456789abcdef0123456789abcdef", k.ID()) {
		t.Fatal("the key id shows the key")
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "nope"), "no such file"},
		{"world readable", write("world", "0123456789abcdef0123456789abcdef", 0o644), "chmod 600"},
		{"group readable", write("group", "0123456789abcdef0123456789abcdef", 0o640), "readable or writable by others"},
		{"empty", write("empty", " \n\t\n", 0o600), "the audit key is empty"},
		{"short", write("short", "0123456789", 0o600), "has 10 bytes; use at least 16"},
		{"a directory", dir, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadKey(tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("LoadKey = %v; want …%s… naming %s", err, tc.want, tc.path)
			}
			if strings.Contains(err.Error(), "0123456789abcdef") {
				t.Fatalf("the error shows the key: %v", err)
			}
		})
	}
}

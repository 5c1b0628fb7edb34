package audit

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime"
)

// A keyed chain (docs/security.md T26). Whoever can write an unkeyed log can edit a record and recompute every hash
// after it: the chain then only proves integrity relative to a head hash kept elsewhere. With a key, each record's
// hash is HMAC-SHA256 with the key over the record's canonical JSON (hash empty), so that a record cannot be edited,
// forged or re-hashed without the key. The key is never written to the log: a keyed record carries key_id, a short
// digest of an HMAC of a fixed string, which tells a verifier that the chain is keyed and whether it holds the right
// key, and says nothing about the key itself.

// MinKeyLen is the shortest key accepted, in bytes (after trimming).
const MinKeyLen = 16

// keyIDInput is the fixed string whose HMAC, hashed and cut short, is a key's id.
const keyIDInput = "strata audit key id v1"

// Key is the secret of a keyed chain.
type Key struct {
	secret []byte
	id     string
}

// NewKey is the key with the given secret, which must be at least MinKeyLen bytes.
func NewKey(secret []byte) (*Key, error) {
	if len(secret) == 0 {
		return nil, fmt.Errorf("the audit key is empty; put a secret in it (for example: openssl rand -hex 32)")
	}
	if len(secret) < MinKeyLen {
		return nil, fmt.Errorf("the audit key has %d bytes; use at least %d (for example: openssl rand -hex 32)", len(secret), MinKeyLen)
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(keyIDInput))
	sum := sha256.Sum256(m.Sum(nil))
	return &Key{secret: bytes.Clone(secret), id: hex.EncodeToString(sum[:8])}, nil
}

// LoadKey reads a key file: its contents, with surrounding white space trimmed, are the secret. On Unix the file
// must be readable and writable by its owner only, like a token file. Errors name the file and what to do, never
// the key.
func LoadKey(path string) (*Key, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("audit key %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("audit key %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("audit key %s: not a regular file", path)
	}
	// Windows has no mode bits (Go reports 0666 for every writable file); access there is by ACL, not inspected.
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("audit key %s: readable or writable by others (mode %04o): whoever reads the key can forge the audit log; run chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	const maxKeyFile = 64 << 10
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("audit key %s: %w", path, err)
	}
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("audit key %s: longer than %d bytes: not a key file", path, maxKeyFile)
	}
	k, err := NewKey(bytes.TrimSpace(b))
	if err != nil {
		return nil, fmt.Errorf("audit key %s: %w", path, err)
	}
	return k, nil
}

// ID is the key's id, as keyed records carry it in key_id: 16 hex digits of SHA-256 of HMAC-SHA256(key, "strata
// audit key id v1"). It identifies the key without revealing it.
func (k *Key) ID() string { return k.id }

// Hash is the hash a keyed record should carry: hex HMAC-SHA256 with the key of its canonical JSON with Hash set
// to "" (key_id included, so that it cannot be taken off).
func (k *Key) Hash(r Record) (string, error) { return hashWith(r, k) }

// hashWith is the hash of r under key (nil: unkeyed, ComputeHash): SHA-256, or HMAC-SHA256 with the key, of its
// canonical JSON with Hash set to "".
func hashWith(r Record, key *Key) (string, error) {
	r.Hash = ""
	b, err := r.MarshalJSON()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if key != nil {
		h = hmac.New(sha256.New, key.secret)
	}
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// KeyError is what Verify, Append and Check report about a keyed chain they cannot check or extend: no key was
// given for it, or another key than the one it was started with. It is not a sign of tampering.
type KeyError struct {
	File  string // the file, when known
	Line  int    // the line of the first record concerned (0 when it is the last record, seen by Append or Check)
	KeyID string // the key id the record carries
	Given string // the id of the key given; "" when none was
}

func (e *KeyError) Error() string {
	where := ""
	switch {
	case e.File != "" && e.Line > 0:
		where = fmt.Sprintf("%s line %d: ", e.File, e.Line)
	case e.Line > 0:
		where = fmt.Sprintf("line %d: ", e.Line)
	case e.File != "":
		where = e.File + ": "
	}
	if e.Given == "" {
		return fmt.Sprintf("%sthe audit chain is keyed (key id %s): it can be checked and extended only with its key; pass --audit-key FILE", where, e.KeyID)
	}
	return fmt.Sprintf("%sthe audit chain is keyed with another key (key id %s; --audit-key gives key id %s): wrong key; pass the key file the log was started with", where, e.KeyID, e.Given)
}

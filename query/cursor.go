package query

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"
)

// A cursor continues a query where its last page ended. It is opaque to callers: base64url of
//
//	version (1 byte) | revision (uvarint) | offset (uvarint) | tag (16 bytes)
//
// where tag is HMAC-SHA256, under the engine's CursorKey, of the version, revision and offset together with
// everything the answer depends on: the program, the parameters (as canonical JSON), the resource, the revision's
// root hash, the caller, and what the front end binds it to (Request.Bind). Any change to one of them, or to the cursor's bytes, makes the tag wrong and the cursor
// is refused; a cursor cannot be moved to another query, revision, database or caller. Because revisions are
// immutable, a cursor never goes stale: the next page re-runs the program on the same revision and skips the
// results already returned. The revision is readable without the key (CursorRevision) so a caller can resolve it.
//
// CursorKey is random per process by default, so cursors do not survive a restart unless a key is configured.

const (
	cursorVersion = 1
	cursorTagLen  = 16
)

// cursorBinding is everything a cursor is bound to, besides its position.
type cursorBinding struct {
	program  string
	params   []byte // canonical JSON
	resource string
	root     [32]byte
	caller   string
	bind     string // Request.Bind
}

func (b *cursorBinding) tag(key []byte, revision, offset uint64) []byte {
	m := hmac.New(sha256.New, key)
	var buf [binary.MaxVarintLen64]byte
	field := func(s []byte) {
		m.Write(binary.AppendUvarint(buf[:0], uint64(len(s))))
		m.Write(s)
	}
	field([]byte("strata query cursor"))
	field([]byte{cursorVersion})
	field(binary.AppendUvarint(nil, revision))
	field(binary.AppendUvarint(nil, offset))
	field([]byte(b.program))
	field(b.params)
	field([]byte(b.resource))
	field(b.root[:])
	field([]byte(b.caller))
	field([]byte(b.bind))
	return m.Sum(nil)[:cursorTagLen]
}

func makeCursor(key []byte, b *cursorBinding, revision, offset uint64) string {
	out := []byte{cursorVersion}
	out = binary.AppendUvarint(out, revision)
	out = binary.AppendUvarint(out, offset)
	out = append(out, b.tag(key, revision, offset)...)
	return base64.RawURLEncoding.EncodeToString(out)
}

// decodeCursor splits a cursor without checking its tag.
func decodeCursor(c string) (revision, offset uint64, tag []byte, ok bool) {
	if len(c) > 128 || strings.ContainsAny(c, "=+/") {
		return 0, 0, nil, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(raw) < 1+2+cursorTagLen || raw[0] != cursorVersion {
		return 0, 0, nil, false
	}
	rest := raw[1:]
	revision, n := binary.Uvarint(rest)
	if n <= 0 {
		return 0, 0, nil, false
	}
	rest = rest[n:]
	offset, n = binary.Uvarint(rest)
	if n <= 0 || len(rest[n:]) != cursorTagLen {
		return 0, 0, nil, false
	}
	// Refuse non-minimal encodings, so that one position has exactly one cursor text.
	if base64.RawURLEncoding.EncodeToString(raw) != c {
		return 0, 0, nil, false
	}
	return revision, offset, rest[n:], true
}

// verifyCursor checks a cursor against a query and returns its offset.
func verifyCursor(key []byte, b *cursorBinding, c string, revision uint64) (uint64, bool) {
	rev, offset, tag, ok := decodeCursor(c)
	if !ok || rev != revision {
		return 0, false
	}
	if !hmac.Equal(tag, b.tag(key, rev, offset)) {
		return 0, false
	}
	return offset, true
}

// CursorRevision returns the revision a cursor reads, so that a caller can resolve it (a cursor keeps reading the
// revision of its first page even when the branch has moved on). It does not authenticate the cursor: Run does.
func CursorRevision(cursor string) (uint64, error) {
	rev, _, _, ok := decodeCursor(cursor)
	if !ok {
		return 0, &QueryError{Offset: -1, Msg: "the cursor is not valid (it must be passed back exactly as returned)", Err: ErrBadCursor}
	}
	return rev, nil
}

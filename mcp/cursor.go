package mcp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// A cursor continues a paged answer. It is opaque to the client and signed with a key this server drew at random
// when it started, so it cannot be forged or altered. It is bound to the tool, to the caller (the principal), to
// every argument of the call except cursor and limit, and to the revisions the first page read: a continuation reads
// exactly those revisions again, so that paging is consistent even while the branch moves on. Revisions are
// immutable, so a cursor never goes stale while its server runs; a cursor from another server (or before a restart)
// is refused like a forged one.

// cursorState is what a cursor carries.
type cursorState struct {
	Tool   string   `json:"t"`
	Args   string   `json:"a"`           // digest of the principal and the arguments
	Revs   []uint64 `json:"r,omitempty"` // the revisions the first page read
	Offset uint64   `json:"o,omitempty"` // the position to continue from (members, elements, operations)
	Before uint64   `json:"b,omitempty"` // history: continue below this revision
	Head   uint64   `json:"h,omitempty"` // history: the revision the first page walked from
	After  string   `json:"n,omitempty"` // name lists: continue after this name
}

const maxCursorLen = 2048

// argsDigest binds a cursor to the caller and to the arguments of its call.
func (s *server) argsDigest(t *toolSpec, a *args) string {
	var b strings.Builder
	b.WriteString(s.cfg.Principal)
	b.WriteByte(0)
	b.WriteString(t.name)
	for _, p := range t.params {
		if p.name == "cursor" || p.name == "limit" || !a.has(p.name) {
			continue
		}
		b.WriteByte(0)
		b.WriteString(p.name)
		b.WriteByte('=')
		switch p.kind {
		case kString:
			b.WriteString(strconv.Quote(a.str(p.name)))
		case kTime:
			b.WriteString(a.times[p.name].UTC().Format(time.RFC3339Nano))
		case kInteger:
			b.WriteString(strconv.FormatUint(a.uint(p.name), 10))
		case kBoolean:
			b.WriteString(strconv.FormatBool(a.boolean(p.name)))
		default:
			b.Write(a.raw(p.name))
		}
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:16])
}

func (s *server) sign(payload []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write(payload)
	return m.Sum(nil)[:20]
}

// newCursor makes the cursor that continues a call.
func (s *server) newCursor(t *toolSpec, a *args, st cursorState) string {
	st.Tool, st.Args = t.name, s.argsDigest(t, a)
	payload, err := json.Marshal(st)
	if err != nil {
		panic(err)
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString(payload) + "." + enc.EncodeToString(s.sign(payload))
}

// cursor returns the state of the call's cursor argument, or nil when there is none. A cursor that was altered,
// forged, or made for another tool, caller or other arguments is refused.
func (s *server) cursor(t *toolSpec, a *args) (*cursorState, error) {
	if !a.has("cursor") {
		return nil, nil
	}
	bad := newError(codeInvalidArgument, "the cursor is not valid for this call: it was altered, or made by another server or for other arguments").
		withHint("repeat the call with the same arguments as the call that returned the cursor, or without cursor to start over")
	c := a.str("cursor")
	enc := base64.RawURLEncoding
	body, mac, ok := strings.Cut(c, ".")
	if len(c) > maxCursorLen || !ok {
		return nil, bad
	}
	payload, err1 := enc.DecodeString(body)
	sig, err2 := enc.DecodeString(mac)
	if err1 != nil || err2 != nil || !hmac.Equal(sig, s.sign(payload)) {
		return nil, bad
	}
	var st cursorState
	if err := json.Unmarshal(payload, &st); err != nil || st.Tool != t.name || st.Args != s.argsDigest(t, a) {
		return nil, bad
	}
	return &st, nil
}

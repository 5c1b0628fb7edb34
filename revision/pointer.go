package revision

import (
	"fmt"
	"strings"
)

// Pointer is a parsed RFC 6901 JSON Pointer: the unescaped reference tokens. The empty Pointer is the whole document.
type Pointer []string

// PointerSyntaxError reports a malformed pointer with the offset of the fault; Error shows a caret under it.
type PointerSyntaxError struct {
	Pointer string
	Offset  int
	Msg     string
}

func (e *PointerSyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON Pointer: %s\n  %s\n  %s^", e.Msg, e.Pointer, strings.Repeat(" ", e.Offset))
}

func (e *PointerSyntaxError) Unwrap() error { return ErrInvalidPath }

// ParsePointer parses an RFC 6901 pointer: "" or a sequence of "/token", with "~1" for "/" and "~0" for "~".
func ParsePointer(s string) (Pointer, error) {
	if s == "" {
		return Pointer{}, nil
	}
	if s[0] != '/' {
		return nil, &PointerSyntaxError{s, 0, `a pointer must be empty or start with "/" (for example "/users/0/name")`}
	}
	var p Pointer
	start := 1
	for i := 1; i <= len(s); i++ {
		if i < len(s) && s[i] != '/' {
			if s[i] == '~' && (i+1 >= len(s) || (s[i+1] != '0' && s[i+1] != '1')) {
				return nil, &PointerSyntaxError{s, i, `"~" must be followed by 0 (for "~") or 1 (for "/")`}
			}
			continue
		}
		tok := s[start:i]
		if strings.IndexByte(tok, '~') >= 0 {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		}
		p = append(p, tok)
		start = i + 1
	}
	return p, nil
}

// MustPointer parses a pointer known to be valid; it panics otherwise (for literals in code and tests).
func MustPointer(s string) Pointer {
	p, err := ParsePointer(s)
	if err != nil {
		panic(err)
	}
	return p
}

// EscapeToken escapes one reference token.
func EscapeToken(t string) string {
	if strings.IndexAny(t, "~/") < 0 {
		return t
	}
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}

// String returns the pointer's RFC 6901 text.
func (p Pointer) String() string {
	var b strings.Builder
	for _, t := range p {
		b.WriteByte('/')
		b.WriteString(EscapeToken(t))
	}
	return b.String()
}

// Child returns p extended by one token.
func (p Pointer) Child(tok string) Pointer {
	q := make(Pointer, len(p), len(p)+1)
	copy(q, p)
	return append(q, tok)
}

// IsPrefixOf reports whether p is q or an ancestor of q.
func (p Pointer) IsPrefixOf(q Pointer) bool {
	if len(p) > len(q) {
		return false
	}
	for i := range p {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

// parseIndex parses an array index token: a decimal with no sign and no leading zero.
func parseIndex(tok string) (uint64, bool) {
	if tok == "" || len(tok) > 19 || (len(tok) > 1 && tok[0] == '0') {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

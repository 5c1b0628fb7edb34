package mcp

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Every result is structured content plus one text block: a one-line summary, then the same JSON inside an
// untrusted-data delimiter whose boundary is drawn at random for each response. Stored text cannot close it: it does
// not know the boundary, and '<' and '>' inside JSON strings are written as \u003c and \u003e anyway. Invisible,
// bidirectional-control and tag characters are written as \u escapes too (the JSON means the same), and the summary
// says that there were some.

// marshalData marshals a result as JSON: HTML-escaped (so '<' is \u003c), with invisible characters escaped. It
// returns how many invisible characters it escaped.
func marshalData(v any) ([]byte, int, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, 0, err
	}
	out, n := escapeInvisible(b)
	return out, n, nil
}

// invisible reports runes that change how text reads without being seen: zero-width characters, bidirectional
// embeddings, overrides and isolates, the word joiner family, the byte-order mark, soft hyphens and the Unicode tag
// block (used to smuggle instructions).
func invisible(r rune) bool {
	switch {
	case r == 0x00AD, r == 0x034F, r == 0x061C, r == 0x115F, r == 0x1160, r == 0x17B4, r == 0x17B5, r == 0x180E,
		r >= 0x200B && r <= 0x200F,
		r >= 0x202A && r <= 0x202E,
		r >= 0x2060 && r <= 0x206F,
		r == 0x3164, r == 0xFEFF, r == 0xFFA0,
		r >= 0xFFF9 && r <= 0xFFFB,
		r >= 0xE0000 && r <= 0xE007F:
		return true
	}
	return false
}

// escapeInvisible rewrites invisible runes as JSON \u escapes. In valid JSON such runes can only be inside strings,
// where an escape means the same character.
func escapeInvisible(b []byte) ([]byte, int) {
	n := 0
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r >= 0x80 && invisible(r) {
			n++
		}
		i += size
	}
	if n == 0 {
		return b, 0
	}
	var out bytes.Buffer
	out.Grow(len(b) + 12*n)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r >= 0x80 && invisible(r) && r > 0xFFFF:
			r -= 0x10000
			fmt.Fprintf(&out, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		case r >= 0x80 && invisible(r):
			fmt.Fprintf(&out, `\u%04x`, r)
		default:
			out.Write(b[i : i+size])
		}
		i += size
	}
	return out.Bytes(), n
}

// boundary draws a fresh delimiter name for one response.
func boundary() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return "untrusted-data-" + hex.EncodeToString(b[:])
}

// textBlock is the text a model reads: the summary, then the data inside the random boundary. The summary of an
// error may run over several lines (a caret under a bad JSON Pointer); it holds no stored text.
func textBlock(summary string, data []byte, flagged int) string {
	tag := boundary()
	var b strings.Builder
	b.Grow(len(summary) + len(data) + 2*len(tag) + 128)
	b.WriteString(summary)
	if flagged > 0 {
		fmt.Fprintf(&b, " Note: the data holds %d invisible or bidirectional-control character(s), shown as \\u escapes.", flagged)
	}
	b.WriteString("\n<")
	b.WriteString(tag)
	b.WriteString(">\n")
	b.Write(data)
	b.WriteString("\n</")
	b.WriteString(tag)
	b.WriteString(">")
	return b.String()
}

// oneLine keeps a summary on one line.
func oneLine(s string) string {
	if strings.ContainsAny(s, "\r\n") {
		s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	}
	return s
}

// okResult is a successful tool result.
func (s *server) okResult(summary string, v any) (*mcpsdk.CallToolResult, error) {
	data, flagged, err := marshalData(v)
	if err != nil {
		return s.errorResult(err), nil
	}
	if len(data) > s.cfg.MaxOutputChars {
		// Handlers fit their answers to the cap; this is the backstop that keeps the promise when one did not.
		return s.errorResult(newError(codeLimitExceeded, "the answer is %d characters, over this server's cap of %d", len(data), s.cfg.MaxOutputChars).
			withHint("ask for less: a smaller limit, a deeper path, or max_depth")), nil
	}
	return &mcpsdk.CallToolResult{
		Content:           []mcpsdk.Content{&mcpsdk.TextContent{Text: textBlock(oneLine(summary), data, flagged)}},
		StructuredContent: json.RawMessage(data),
	}, nil
}

// errorResult is an isError result: text that begins with the code, and the structured error.
func (s *server) errorResult(err error) *mcpsdk.CallToolResult {
	te := errorFor(err)
	data, flagged, merr := marshalData(te)
	if merr != nil || len(data) > s.cfg.MaxOutputChars {
		te = &toolError{Code: te.Code, Message: clip(te.Message)}
		data, flagged, _ = marshalData(te)
	}
	return &mcpsdk.CallToolResult{
		Content:           []mcpsdk.Content{&mcpsdk.TextContent{Text: textBlock(te.headline(), data, flagged)}},
		StructuredContent: json.RawMessage(data),
		IsError:           true,
	}
}

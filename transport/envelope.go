package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// duplicateMember finds a member named twice in a JSON-RPC message's envelope — its top-level object, or the
// object of its params — in one message or in each message of a batch. The go-sdk decodes such a message keeping
// the last value, so that what an audit or a proxy read ("method":"tools/list") is not what runs; a message like
// that is refused instead. It returns "" when there is none (or the text is not JSON: the decoder says so).
func duplicateMember(body []byte) string {
	b := bytes.TrimLeft(body, " \t\r\n")
	if len(b) > 0 && b[0] == '[' {
		var msgs []json.RawMessage
		if json.Unmarshal(b, &msgs) != nil {
			return ""
		}
		for _, m := range msgs {
			if d := duplicateMember(m); d != "" {
				return d
			}
		}
		return ""
	}
	if d := duplicateKey(b); d != "" {
		return d
	}
	var m struct {
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(b, &m) == nil && len(m.Params) > 0 {
		if d := duplicateKey(m.Params); d != "" {
			return "params." + d
		}
	}
	return ""
}

// duplicateKey returns a member name that an object names twice at its top level ("" for none, or not an object).
func duplicateKey(obj []byte) string {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		k, _ := tok.(string)
		if seen[k] {
			return k
		}
		seen[k] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return ""
		}
	}
	return ""
}

// duplicateError is the text of the refusal.
func duplicateError(member string) string {
	return fmt.Sprintf("the JSON-RPC message names %q twice; send each member once", member)
}

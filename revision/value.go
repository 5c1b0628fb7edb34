package revision

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/strata-db/strata/revision/internal/codec"
	"github.com/strata-db/strata/store"
)

// Kind is the JSON type of a value.
type Kind uint8

// The JSON types.
const (
	Invalid Kind = iota // the zero Value: no value at all
	Null
	Bool
	Number
	String
	Object
	Array
)

var kindNames = [...]string{"invalid", "null", "boolean", "number", "string", "object", "array"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Value is an immutable JSON value held in a Forest: its canonical encoding. Small values are held inline; large
// containers and long strings refer to a tree of nodes in the forest's store. Two Values are the same JSON exactly
// when they are ==. The zero Value means "no value" (an absent member), not null.
type Value struct{ enc string }

// Encoding returns the canonical encoding, for storing a root in a catalog. It is at most a few KiB.
func (v Value) Encoding() string { return v.enc }

// ValueFromEncoding rebuilds a Value from Encoding's result, checking that it is well-formed.
func ValueFromEncoding(enc string) (Value, error) {
	if enc == "" {
		return Value{}, errors.New("empty value encoding")
	}
	end, err := codec.SkipValue(enc, 0)
	if err != nil || end != len(enc) {
		return Value{}, fmt.Errorf("malformed value encoding (%d bytes)", len(enc))
	}
	return Value{enc}, nil
}

// IsValid reports whether v holds a value.
func (v Value) IsValid() bool { return v.enc != "" }

// Kind returns the JSON type.
func (v Value) Kind() Kind {
	if v.enc == "" {
		return Invalid
	}
	switch v.enc[0] {
	case codec.TagNull:
		return Null
	case codec.TagFalse, codec.TagTrue:
		return Bool
	case codec.TagInt, codec.TagNum:
		return Number
	case codec.TagStr, codec.TagStrRef:
		return String
	case codec.TagObj, codec.TagObjRef:
		return Object
	case codec.TagArr, codec.TagArrRef:
		return Array
	}
	return Invalid
}

// Len returns the number of members of an object, elements of an array, or bytes of a string; 0 otherwise.
func (v Value) Len() uint64 {
	if v.enc == "" {
		return 0
	}
	switch v.enc[0] {
	case codec.TagObj, codec.TagArr:
		r := codec.Reader{S: v.enc, I: 1}
		return r.Uvarint()
	case codec.TagStr:
		r := codec.Reader{S: v.enc, I: 1}
		return r.Uvarint()
	case codec.TagObjRef, codec.TagArrRef, codec.TagStrRef:
		ref, _ := codec.DecodeRef(v.enc)
		return ref.Count
	}
	return 0
}

// Size returns the length of the value written as compact JSON.
func (v Value) Size() uint64 { return codec.ValueSize(v.enc) }

// IsTree reports whether the value is held in nodes of its own rather than inline.
func (v Value) IsTree() bool {
	return v.enc != "" && (v.enc[0] == codec.TagObjRef || v.enc[0] == codec.TagArrRef || v.enc[0] == codec.TagStrRef)
}

// Hash returns a content hash of the value: the root node's address for a tree, else the SHA-256 of the inline
// encoding. Equal values have equal hashes.
func (v Value) Hash() store.Hash {
	if ref, ok := codec.DecodeRef(v.enc); ok {
		return ref.Hash
	}
	return sha256.Sum256([]byte(v.enc))
}

func (v Value) ref() (codec.Ref, bool) { return codec.DecodeRef(v.enc) }

// Bool returns the value of a boolean.
func (v Value) Bool() bool { return v.enc != "" && v.enc[0] == codec.TagTrue }

// NumberText returns the exact text of a number.
func (v Value) NumberText() string {
	switch {
	case v.enc == "":
		return ""
	case v.enc[0] == codec.TagInt:
		return fmt.Sprint(codec.DecodeInt(v.enc))
	case v.enc[0] == codec.TagNum:
		return codec.Payload(v.enc)
	}
	return ""
}

// Null, True and False are the constant values.
var (
	NullValue  = Value{string([]byte{codec.TagNull})}
	TrueValue  = Value{string([]byte{codec.TagTrue})}
	FalseValue = Value{string([]byte{codec.TagFalse})}
)

// Stats counts what a write added: nodes new to the store, and their bytes.
type Stats = store.PutStats

package store

import (
	"fmt"

	"github.com/klauspost/compress/s2"
)

// Stored nodes begin with one codec byte, so the codec can change without rewriting old nodes: the hash covers the
// canonical bytes, never the stored ones.
const (
	codecRaw byte = 0 // stored as is (when compression does not pay)
	codecS2  byte = 1 // S2 block (github.com/klauspost/compress/s2): fast, and 2-3x on typical JSON nodes
)

// EncodeStored returns the stored form of canonical node bytes.
func EncodeStored(data []byte) []byte {
	out := make([]byte, 1+s2.MaxEncodedLen(len(data)))
	enc := s2.Encode(out[1:], data)
	if len(enc) >= len(data) {
		out = append(out[:1], data...)
		out[0] = codecRaw
		return out
	}
	out[0] = codecS2
	return out[:1+len(enc)]
}

// storedForm is a node's stored form: the one its caller made ahead of time, or a fresh one.
func storedForm(n Node) []byte {
	if n.Stored != nil {
		return n.Stored
	}
	return EncodeStored(n.Data)
}

// DecodeStored returns the canonical bytes of a stored node and checks them against the node's address.
func DecodeStored(h Hash, stored []byte) ([]byte, error) {
	if len(stored) == 0 {
		return nil, fmt.Errorf("%w: node %s is empty", ErrCorruptNode, h.Short())
	}
	var data []byte
	switch stored[0] {
	case codecRaw:
		data = append([]byte(nil), stored[1:]...)
	case codecS2:
		var err error
		data, err = s2.Decode(nil, stored[1:])
		if err != nil {
			return nil, fmt.Errorf("%w: node %s: %v", ErrCorruptNode, h.Short(), err)
		}
	default:
		return nil, fmt.Errorf("%w: node %s has unknown codec %d", ErrCorruptNode, h.Short(), stored[0])
	}
	if HashOf(data) != h {
		return nil, fmt.Errorf("%w: node %s does not match its hash", ErrCorruptNode, h.Short())
	}
	return data, nil
}

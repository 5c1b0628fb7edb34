package revision

import "unsafe"

// unsafeString views b as a string without copying. The caller must not keep the string past the next change to b.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// unsafeBytes views s as bytes without copying, for readers that never write them (a store's Node.Data). Copying
// each node a write hands to the store cost a tenth of a 1,000,000-element load's CPU (runtime.stringtoslicebyte
// in its profile).
func unsafeBytes(s string) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

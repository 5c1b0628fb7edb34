package revision

import "unsafe"

// unsafeString views b as a string without copying. The caller must not keep the string past the next change to b.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

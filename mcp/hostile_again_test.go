package mcp

import (
	"strings"
	"testing"

	"github.com/strata-db/strata/gate"
)

// TestRestoreErrorsUseResourcePaths: restore's errors name paths inside the resource, as the other writes'
// now do (8b48818 fixed patch, update, delete, insert; restore reads the source value with the root path).
func TestRestoreErrorsUseResourcePaths(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesOn, Protected: []string{}})
	h.ok("create_database", `{"database":"s"}`)
	h.ok("put", `{"database":"s","resource":"doc","value":{"a":[1,2,3],"n":5}}`)
	for _, args := range []string{
		`{"database":"s","resource":"doc","path":"/n/x","from_revision":2}`,
		`{"database":"s","resource":"doc","path":"/a/x","from_revision":2}`,
	} {
		r := h.fail("restore", args, codeInvalidPath)
		if strings.Contains(r.text, `"/doc`) {
			t.Errorf("restore %s: the error names a path with the resource in front:\n%s", args, r.text)
		}
	}
}

package mcp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-db/strata/snapshots"
)

// Edge cases found by trying Strata on real data: the nesting limit is exactly the documented one, an explicit
// time before a branch existed is not found (year 1 too), a write that changes nothing says so, and a diff's
// operations apply to another branch as a patch, their old values guarding what changed since.

func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func TestNestingLimitIsTheResources(t *testing.T) {
	h := newHarness(t, Config{Writes: "on", Protected: []string{}})
	h.ok("create_database", `{"database":"shop"}`)
	// A resource may nest 512 levels: the database root above it is not counted.
	h.ok("put", fmt.Sprintf(`{"database":"shop","resource":"deep","value":%s}`, nested(512)))
	if r := h.ok("read", `{"database":"shop","resource":"deep","path":"/0/0/0"}`); r.raw("value") == "" {
		t.Fatalf("read: %s", r.data)
	}
	r := h.fail("put", fmt.Sprintf(`{"database":"shop","resource":"deeper","value":%s}`, nested(513)), codeInvalidArgument)
	if !strings.Contains(r.str("message"), "512") || strings.Contains(r.text, "levels down") {
		t.Errorf("too deep: %s", r.text)
	}
	// Placed one level down, a value may nest one level less.
	h.ok("put", `{"database":"shop","resource":"doc","value":{"a":1}}`)
	h.ok("insert", fmt.Sprintf(`{"database":"shop","resource":"doc","path":"/b","value":%s}`, nested(511)))
	r = h.fail("insert", fmt.Sprintf(`{"database":"shop","resource":"doc","path":"/c","value":%s}`, nested(512)), codeInvalidArgument)
	if !strings.Contains(r.str("message"), "512") || strings.Contains(r.text, "levels down") || strings.Contains(r.text, "511") {
		t.Errorf("too deep one level down: %s", r.text)
	}
}

func TestTimeBeforeTheBranchIsNotFound(t *testing.T) {
	h := newHarness(t, Config{Writes: "on", Protected: []string{}})
	h.ok("create_database", `{"database":"shop"}`)
	h.ok("put", `{"database":"shop","resource":"doc","value":{"a":1}}`)
	for _, at := range []string{"0001-01-01T00:00:00Z", "2000-01-01T00:00:00Z", "0001-01-01T00:00:00.000000001Z"} {
		h.fail("read", `{"database":"shop","resource":"doc","at":"`+at+`"}`, codeNotFound)
		h.fail("list_resources", `{"database":"shop","at":"`+at+`"}`, codeNotFound)
	}
	h.ok("read", `{"database":"shop","resource":"doc","at":"2100-01-01T00:00:00Z"}`)
	// Far in the future too: after every revision (found in review: past 2262 it wrapped around to not found).
	h.ok("read", `{"database":"shop","resource":"doc","at":"9999-12-31T23:59:59Z"}`)
}

// TestWholeNumberArguments: an integer argument takes a whole number however JSON writes it (2, 2.0, 2e0), as JSON
// Schema's integer does, and refuses one that is not whole or not in range (found in review: 2.0 was refused).
func TestWholeNumberArguments(t *testing.T) {
	h := newHarness(t, Config{Writes: "on", Protected: []string{}})
	h.ok("create_database", `{"database":"shop"}`)
	h.ok("put", `{"database":"shop","resource":"doc","value":{"a":1}}`)
	h.ok("put", `{"database":"shop","resource":"doc","value":{"a":2}}`)
	for _, n := range []string{"2", "2.0", "2e0", "20e-1", "0.2e1"} {
		if r := h.ok("read", `{"database":"shop","resource":"doc","revision":`+n+`}`); r.raw("value") != `{"a":1}` {
			t.Errorf("revision %s: %s", n, r.data)
		}
	}
	for _, n := range []string{"2.5", "-1", "1e30", "18446744073709551616", `"2"`, "true"} {
		h.fail("read", `{"database":"shop","resource":"doc","revision":`+n+`}`, codeInvalidArgument)
	}
}

func TestUnchangedWriteSaysSo(t *testing.T) {
	h := newHarness(t, Config{Writes: "on", Protected: []string{}})
	h.ok("create_database", `{"database":"shop"}`)
	first := h.ok("put", `{"database":"shop","resource":"doc","value":{"a":1}}`)
	if first.m["unchanged"] != nil {
		t.Errorf("a write that changed something: %s", first.data)
	}
	for _, call := range [][2]string{
		{"put", `{"database":"shop","resource":"doc","value":{"a":1}}`},
		{"update", `{"database":"shop","resource":"doc","path":"/a","value":1}`},
		{"patch", `{"database":"shop","resource":"doc","operations":[{"op":"test","path":"/a","value":1}]}`},
	} {
		r := h.ok(call[0], call[1])
		if r.m["unchanged"] != true || r.num("revision") != first.num("revision") || len(r.m["resources"].([]any)) != 0 {
			t.Errorf("%s that changes nothing: %s", call[0], r.data)
		}
	}
	if h.head("shop", "main") != first.num("revision") {
		t.Error("a write that changed nothing made a revision")
	}
}

func TestDiffAppliesAsPatch(t *testing.T) {
	h := newHarness(t, Config{Writes: "on", Protected: []string{}})
	h.ok("create_database", `{"database":"shop"}`)
	h.ok("put", `{"database":"shop","resource":"cat","value":{"items":[{"id":1,"price":10},{"id":2,"price":20},{"id":3,"price":30}],"name":"x"}}`)
	h.ok("create_branch", `{"database":"shop","name":"sale"}`)
	h.ok("create_branch", `{"database":"shop","name":"copy"}`)
	h.ok("patch", `{"database":"shop","resource":"cat","branch":"sale","operations":[{"op":"replace","path":"/items/1/price","value":18},{"op":"remove","path":"/items/0"},{"op":"add","path":"/note","value":"sale"}]}`)
	d := h.ok("diff", `{"database":"shop","resource":"cat","from_branch":"main","to_branch":"sale"}`)
	ops := d.raw("operations")
	if !strings.Contains(ops, "old_value") {
		t.Fatalf("diff without old values: %s", ops)
	}
	// The diff's operations, verbatim, bring branch copy to where sale is.
	h.ok("patch", `{"database":"shop","resource":"cat","branch":"copy","operations":`+ops+`}`)
	if d := h.ok("diff", `{"database":"shop","resource":"cat","from_branch":"copy","to_branch":"sale"}`); d.raw("operations") != "[]" {
		t.Fatalf("after applying the diff: %s", d.data)
	}
	// Applied again, the old values no longer hold: nothing is written, and the error names both values.
	head := h.head("shop", "copy")
	r := h.fail("patch", `{"database":"shop","resource":"cat","branch":"copy","operations":`+ops+`}`, codeConflict)
	if !strings.Contains(r.str("detail"), "old_value is") || !strings.Contains(r.str("message"), "old_value does not hold") || h.head("shop", "copy") != head {
		t.Errorf("a stale old_value: %s", r.data)
	}
	if strings.Contains(r.str("message"), "old_value is") {
		t.Errorf("the stored value is shown outside the data boundary: %s", r.str("message"))
	}
	// Other unknown members are still refused by name.
	r = h.fail("patch", `{"database":"shop","resource":"cat","branch":"copy","operations":[{"op":"remove","path":"/name","old_valeu":"x"}]}`, codeInvalidArgument)
	if !strings.Contains(r.text, `"old_valeu"`) || !strings.Contains(r.text, "old_value") {
		t.Errorf("misspelt member: %s", r.text)
	}
}

// TestDamagedFileNamesNoPath: an error about a database's damaged file names no path on the server (the operator's
// log does), in the tool's answer and in list_databases.
func TestDamagedFileNamesNoPath(t *testing.T) {
	path := t.TempDir()
	h := newHarnessAt(t, path, Config{})
	if _, err := h.dir.Create(context.Background(), "shop", "operator"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, "broken"+snapshots.Ext), []byte("this is not a database file at all, just text"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := h.fail("read", `{"database":"broken","resource":"doc"}`, codeUnavailable)
	if strings.Contains(r.text, path) || !strings.Contains(r.str("message"), "damaged") {
		t.Errorf("read of a damaged database: %s", r.text)
	}
	if l := h.ok("list_databases", `{}`); strings.Contains(l.text, path) || !strings.Contains(l.text, "damaged") {
		t.Errorf("list_databases: %s", l.text)
	}
}

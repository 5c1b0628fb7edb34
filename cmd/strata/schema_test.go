package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-db/strata/audit"
)

const cliShopSchema = `{"type":"object","required":["items"],"properties":{
	"items":{"type":"array","maxItems":3,"items":{"type":"object","required":["sku","price"],
		"properties":{"sku":{"type":"string"},"price":{"type":"number","minimum":0}}}},
	"note":{"type":"string"}}}`

// TestSchemaCommands: strata schema set|show|rm, and every CLI write (import, restore, revert, promote) refused
// with exit 2 and the violations when it would break a resource's schema, with nothing written, and accepted
// when valid; schema changes in strata log and the audit log.
func TestSchemaCommands(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cli := func(want int, args ...string) (string, string) {
		t.Helper()
		code, out, errOut := runCLI(t, append([]string{"--data", data}, args...)...)
		if code != want {
			t.Fatalf("strata %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out, errOut
	}
	head := func(branch string) string {
		t.Helper()
		out, _ := cli(0, "log", "shop", "--branch", branch, "-n", "1", "--json")
		var l struct{ Revisions []struct{ Revision uint64 } }
		if err := json.Unmarshal([]byte(out), &l); err != nil || len(l.Revisions) == 0 {
			t.Fatalf("log: %v %s", err, out)
		}
		return jsonNum(l.Revisions[0].Revision)
	}
	refused := func(branch string, wantIn []string, args ...string) {
		t.Helper()
		before := head(branch)
		_, errOut := cli(exitUsage, args...)
		for _, w := range append(wantIn, "nothing was written") {
			if !strings.Contains(errOut, w) {
				t.Errorf("strata %s: stderr does not say %q:\n%s", strings.Join(args, " "), w, errOut)
			}
		}
		if after := head(branch); after != before {
			t.Fatalf("strata %s: refused, yet %s moved", strings.Join(args, " "), branch)
		}
	}

	cli(0, "db", "create", "shop")
	cli(0, "import", "shop", "cat", file("old.json", `{"items":[{"sku":"a","price":"old"}]}`)) // revision 2: invalid
	cli(0, "import", "shop", "cat", file("v1.json", `{"items":[{"sku":"a","price":1}]}`))      // revision 3

	// A schema the head does not satisfy is not set: exit 2, the violations with their branches.
	strict := strings.Replace(cliShopSchema, `"required":["items"]`, `"required":["items","note"]`, 1)
	_, errOut := cli(exitUsage, "schema", "set", "shop", "cat", file("strict.json", strict))
	if !strings.Contains(errOut, "branch main") || !strings.Contains(errOut, `main: "" (required): missing property 'note'`) ||
		!strings.Contains(errOut, "it was not set") {
		t.Fatalf("refused schema set:\n%s", errOut)
	}
	if out, _ := cli(0, "schema", "show", "shop"); !strings.Contains(out, "no resource of shop has a schema") {
		t.Fatalf("a refused schema was set: %s", out)
	}
	_, errOut = cli(exitUsage, "schema", "set", "shop", "cat", file("remote.json", `{"$ref":"https://example.com/s.json"}`))
	if !strings.Contains(errOut, "outside itself") {
		t.Fatalf("a remote $ref: %s", errOut)
	}

	out, _ := cli(0, "schema", "set", "shop", "cat", file("schema.json", cliShopSchema))
	if !strings.Contains(out, "set the schema of cat (sha256:") {
		t.Fatalf("schema set: %s", out)
	}
	out, _ = cli(0, "schema", "show", "shop", "cat", "--json")
	var rec struct {
		Resource string
		Schema   map[string]any
		Digest   string
		SetBy    string `json:"set_by"`
	}
	if err := json.Unmarshal([]byte(out), &rec); err != nil || rec.Resource != "cat" || rec.Schema["required"] == nil || rec.SetBy == "" {
		t.Fatalf("schema show --json: %v %s", err, out)
	}
	if out, _ := cli(0, "schema", "show", "shop", "cat"); !strings.Contains(out, `"maxItems": 3`) {
		t.Fatalf("schema show: %s", out)
	}

	// Every CLI write is checked.
	refused("main", []string{"/items/0 (required): missing property 'price'"},
		"import", "shop", "cat", file("bad.json", `{"items":[{"sku":"a"}]}`))
	cli(0, "import", "shop", "cat", file("v2.json", `{"items":[{"sku":"a","price":2}],"note":"n"}`))
	refused("main", []string{"/items/0/price (type)"}, "restore", "shop", "cat/items/0/price", "--from", "2")
	cli(0, "restore", "shop", "cat/items/0/price", "--from", "3")
	refused("main", []string{"/items/0/price (type)"}, "revert", "shop", "2")
	cli(0, "revert", "shop", "3")

	// Two branches, each valid, whose merge holds four items (maxItems 3): the promote is refused.
	cli(0, "branch", "shop", "more")
	cli(0, "import", "shop", "cat", file("more.json", `{"items":[{"sku":"a","price":1},{"sku":"m1","price":1},{"sku":"m2","price":1}]}`), "--branch", "more")
	cli(0, "import", "shop", "cat", file("main.json", `{"items":[{"sku":"w1","price":1},{"sku":"a","price":1}]}`))
	refused("main", []string{"/items (maxItems)"}, "promote", "shop", "more")
	cli(0, "import", "shop", "cat", file("back.json", `{"items":[{"sku":"a","price":1}],"note":"back"}`))
	cli(0, "promote", "shop", "more")

	// The log lists the schema change among the revisions; --json in schema_changes.
	out, _ = cli(0, "log", "shop")
	if !strings.Contains(out, "schema set") || !strings.Contains(out, "set the schema (sha256:") || !strings.Contains(out, "[cat]") {
		t.Fatalf("log does not show the schema change:\n%s", out)
	}
	out, _ = cli(0, "log", "shop", "cat", "--json")
	if !strings.Contains(out, `"schema_changes": [`) || !strings.Contains(out, `"action": "set"`) {
		t.Fatalf("log --json: %s", out)
	}

	// Removing it lets anything through; the audit log has both changes, as the operator's.
	out, _ = cli(0, "schema", "rm", "shop", "cat")
	if !strings.Contains(out, "removed the schema of cat") {
		t.Fatalf("schema rm: %s", out)
	}
	cli(exitNotFound, "schema", "rm", "shop", "cat")
	cli(0, "import", "shop", "cat", file("any.json", `"anything"`))
	f, err := os.Open(audit.PathIn(data))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var tools []string
	if err := audit.Read(f, audit.Filter{}, func(r audit.Record) error {
		if r.Transport == audit.TransportCLI && strings.HasPrefix(r.Tool, "cli schema") {
			tools = append(tools, r.Tool+"="+r.Outcome)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := "cli schema set=SCHEMA_VIOLATION cli schema set=INVALID_ARGUMENT cli schema set=ok cli schema rm=ok cli schema rm=NOT_FOUND"
	if got := strings.Join(tools, " "); got != want {
		t.Fatalf("audit log: %s\nwant %s", got, want)
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.Verify(f); err != nil {
		t.Fatalf("the audit log's chain: %v", err)
	}
}

func jsonNum(n uint64) string { b, _ := json.Marshal(n); return string(b) }

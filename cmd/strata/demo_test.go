package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-db/strata/revision"
)

// expectedStory works out, from the dataset alone and without the engine, what the demo must report.
type expectedStory struct {
	raised             int    // products in demoCategory: one replace each
	before, after      string // the featured product's price in version 1 and version 2
	removedPath        string
	removedID          string
	products, orders   int
	featuredPricePtr   string
	featuredProductPtr string
}

func expectStory(t *testing.T) expectedStory {
	t.Helper()
	var doc struct {
		Products []struct {
			ID           string      `json:"id"`
			Category     string      `json:"category"`
			Price        json.Number `json:"price"`
			Discontinued bool        `json:"discontinued"`
		} `json:"products"`
		Orders []json.RawMessage `json:"orders"`
	}
	if err := json.Unmarshal(catalogueJSON, &doc); err != nil {
		t.Fatal(err)
	}
	e := expectedStory{products: len(doc.Products), orders: len(doc.Orders)}
	for i, p := range doc.Products {
		if p.Category == demoCategory {
			e.raised++
		}
		if e.removedPath == "" && p.Discontinued && i > demoProductIndex {
			e.removedPath, e.removedID = fmt.Sprintf("/products/%d", i), p.ID
		}
	}
	e.featuredProductPtr = fmt.Sprintf("/products/%d", demoProductIndex)
	e.featuredPricePtr = e.featuredProductPtr + "/price"
	e.before = string(doc.Products[demoProductIndex].Price)
	// +10%, rounded half up to cents, in integer arithmetic.
	c, err := strconv.Atoi(strings.Replace(e.before, ".", "", 1))
	if err != nil || !strings.Contains(e.before, ".") || len(e.before)-strings.Index(e.before, ".") != 3 {
		t.Fatalf("featured price %q is not written with two decimals", e.before)
	}
	c = (c*11 + 5) / 10
	e.after = fmt.Sprintf("%d.%02d", c/100, c%100)
	return e
}

// timings are the only part of the demo's text that changes from run to run.
var timings = regexp.MustCompile(`\d+(\.\d+)? ms`)

func TestDemoText(t *testing.T) {
	t.Chdir(t.TempDir())
	e := expectStory(t)

	var first string
	for i := range 2 { // the demo must run again and tell the same story
		code, out, errOut := runCLI(t, "demo")
		if code != exitOK || errOut != "" {
			t.Fatalf("run %d: exit %d, stderr %q\n%s", i+1, code, errOut, out)
		}
		if i == 0 {
			first = out
			continue
		}
		if a, b := timings.ReplaceAllString(first, "N ms"), timings.ReplaceAllString(out, "N ms"); a != b {
			t.Errorf("the second run told a different story:\n--- first\n%s\n--- second\n%s", a, b)
		}
	}
	out := first
	t.Log("\n" + out)

	// What exists and what does not, said plainly.
	for _, w := range []string{"in memory (store.NewMem)", "nothing is written to ./strata-data", "MCP server", "being built"} {
		if !strings.Contains(out, w) {
			t.Errorf("the demo does not say %q", w)
		}
	}

	// The import.
	m := regexp.MustCompile(`(\d+) products and (\d+) orders, [\d.]+ KB of JSON\n.*imported: (\d+) nodes, [\d.]+ KB raw, [\d.]+ KB stored \(S2-compressed\), in [\d.]+ ms`).FindStringSubmatch(out)
	if m == nil {
		t.Fatal("no import line")
	}
	if m[1] != strconv.Itoa(e.products) || m[2] != strconv.Itoa(e.orders) {
		t.Errorf("import reports %s products and %s orders, want %d and %d", m[1], m[2], e.products, e.orders)
	}
	docNodes, _ := strconv.Atoi(m[3])

	// The read.
	if !regexp.MustCompile(regexp.QuoteMeta(e.featuredProductPtr+" →") + `\n\s+\{\n(.*\n)*?\s+"price": ` + regexp.QuoteMeta(e.before) + `,`).MatchString(out) {
		t.Errorf("the read of %s does not show its price %s", e.featuredProductPtr, e.before)
	}

	// The patch: copy-on-write means a small fraction of the document's nodes.
	m = regexp.MustCompile(`one patch of (\d+) operations`).FindStringSubmatch(out)
	if m == nil || m[1] != strconv.Itoa(e.raised+2) {
		t.Errorf("patch line %q, want %d operations", m, e.raised+2)
	}
	m = regexp.MustCompile(`the change stored (\d+) new nodes \([\d.]+ KB stored\); the catalogue is (\d+) nodes`).FindStringSubmatch(out)
	if m == nil {
		t.Fatal("no line for what the change stored")
	}
	changeNodes, _ := strconv.Atoi(m[1])
	if m[2] != strconv.Itoa(docNodes) {
		t.Errorf("the catalogue is %s nodes in one line and %d in another", m[2], docNodes)
	}
	if changeNodes == 0 || changeNodes*4 > docNodes {
		t.Errorf("the change stored %d nodes of a %d-node document; copy-on-write should need at most a quarter", changeNodes, docNodes)
	}
	if !strings.Contains(out, "every other node is shared with version 1") {
		t.Error("the patch step does not make the copy-on-write point")
	}

	// The diff.
	want := fmt.Sprintf("%d replaced, 1 added, 1 removed, 0 moved", e.raised)
	if !strings.Contains(out, want) {
		t.Errorf("the diff does not report %q", want)
	}
	if !strings.Contains(out, "the diff gives version 2 exactly") {
		t.Error("the diff was not applied back")
	}

	// Time travel.
	for _, w := range []string{
		e.featuredPricePtr + " in version 1 (root ",
		"): " + e.before + "\n",
		e.featuredPricePtr + " in version 2 (root ",
		"): " + e.after + "\n",
		fmt.Sprintf("%s/id in version 1: %q", e.removedPath, e.removedID),
	} {
		if !strings.Contains(out, w) {
			t.Errorf("time travel does not show %q", w)
		}
	}

	// The failed test op leaves the document as it was.
	for _, w := range []string{
		"refused: patch operation 0 (test): ",
		"nothing was applied",
		fmt.Sprintf("%s is still %s", e.featuredPricePtr, e.after),
	} {
		if !strings.Contains(out, w) {
			t.Errorf("the failed patch step does not say %q", w)
		}
	}
	v2 := regexp.MustCompile(`version 2 is root ([0-9a-f]{12})`).FindStringSubmatch(out)
	still := regexp.MustCompile(`version 2 is still root ([0-9a-f]{12})`).FindStringSubmatch(out)
	if v2 == nil || still == nil || v2[1] != still[1] {
		t.Errorf("version 2's root %v should be unchanged after the failed patch, got %v", v2, still)
	}

	// In memory means in memory.
	if ents, _ := os.ReadDir("."); len(ents) != 0 {
		t.Errorf("the demo wrote %d files in the working directory", len(ents))
	}
}

func TestDemoJSON(t *testing.T) {
	t.Chdir(t.TempDir())
	e := expectStory(t)
	code, out, errOut := runCLI(t, "demo", "--json")
	if code != exitOK || errOut != "" {
		t.Fatalf("demo --json: exit %d, stderr %q", code, errOut)
	}
	var tr struct {
		Storage string `json:"storage"`
		Coming  string `json:"coming"`
		Steps   []struct {
			Name      string          `json:"name"`
			Narration string          `json:"narration"`
			Lines     []string        `json:"lines"`
			Data      json.RawMessage `json:"data"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(out), &tr); err != nil {
		t.Fatalf("demo --json printed invalid JSON: %v\n%s", err, out)
	}
	data := map[string]json.RawMessage{}
	var names []string
	for _, s := range tr.Steps {
		names = append(names, s.Name)
		data[s.Name] = s.Data
		if s.Narration == "" || len(s.Lines) == 0 {
			t.Errorf("step %s has no narration or lines", s.Name)
		}
	}
	if got := strings.Join(names, " "); got != "import read patch diff time-travel failed-patch" {
		t.Fatalf("steps %q", got)
	}
	decode := func(name string, v any) {
		t.Helper()
		if err := json.Unmarshal(data[name], v); err != nil {
			t.Fatalf("step %s: %v", name, err)
		}
	}

	var imp importData
	decode("import", &imp)
	if imp.Products != uint64(e.products) || imp.Orders != uint64(e.orders) || imp.JSONBytes != len(catalogueJSON) ||
		imp.Nodes == 0 || imp.StoredBytes == 0 || imp.StoredBytes >= imp.RawBytes {
		t.Errorf("import %+v", imp)
	}

	var rd readData
	decode("read", &rd)
	var product map[string]json.RawMessage
	if err := json.Unmarshal(rd.Value, &product); err != nil || string(product["price"]) != e.before {
		t.Errorf("read %s = %s", rd.Pointer, rd.Value)
	}

	var p patchData
	decode("patch", &p)
	if p.Operations != e.raised+2 || p.Replaced != e.raised || p.Removed != e.removedID || p.RemovedPath != e.removedPath {
		t.Errorf("patch %+v", p)
	}
	if p.DocNodes != imp.Nodes || p.Nodes == 0 || p.Nodes*4 > imp.Nodes || p.StoredBytes*4 > imp.StoredBytes {
		t.Errorf("the change stored %d nodes (%d bytes) of a %d-node (%d-byte) document; want at most a quarter",
			p.Nodes, p.StoredBytes, imp.Nodes, imp.StoredBytes)
	}

	var d diffData
	decode("diff", &d)
	if want := (revision.Counts{Replaced: e.raised, Added: 1, Removed: 1}); d.Counts != want {
		t.Errorf("diff counts %+v, want %+v", d.Counts, want)
	}
	if n := d.Counts.Added + d.Counts.Removed + d.Counts.Replaced + d.Counts.Moved; n != len(d.Operations) || !d.RoundTrip {
		t.Errorf("diff counts add up to %d for %d operations (applies back: %v)", n, len(d.Operations), d.RoundTrip)
	}
	for _, op := range d.Operations {
		if (op.Op == "remove" || op.Op == "replace") && op.OldValue == nil {
			t.Errorf("diff %s %s has no old value", op.Op, op.Path)
		}
		if op.Op == "remove" && (op.Path != e.removedPath || !strings.Contains(string(op.OldValue), e.removedID)) {
			t.Errorf("diff removes %s (was %.60s), want %s (%s)", op.Path, op.OldValue, e.removedPath, e.removedID)
			break
		}
	}

	var tt travelData
	decode("time-travel", &tt)
	if string(tt.Before) != e.before || string(tt.After) != e.after || !tt.StillThereV1 ||
		string(tt.RemovedAtV1) != strconv.Quote(e.removedID) {
		t.Errorf("time travel %+v, want %s → %s and %s still in version 1", tt, e.before, e.after, e.removedID)
	}

	var f failedData
	decode("failed-patch", &f)
	if f.Applied || f.StoreNodesBefore != f.StoreNodesAfter || string(f.Price) != e.after || f.Root != p.Root ||
		!strings.Contains(f.Error, "test") {
		t.Errorf("failed patch %+v: want nothing changed (root %s, price %s)", f, p.Root, e.after)
	}
}

package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

//go:generate go test -run TestDemoDataset -update .

// catalogueJSON is the demo dataset: an outdoor-gear shop's catalogue, made by generateCatalogue (dataset_test.go).
//
//go:embed demo/catalogue.json
var catalogueJSON []byte

// The story's choices, fixed so that every run tells the same one.
const (
	demoCategory     = "tents" // the category whose prices the agent raises
	demoProductIndex = 3       // the product read, and followed through time; a tent
)

type demoOptions struct {
	json bool
}

func newDemoCommand(g *globalOptions) *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Play the storage engine's story on an embedded product catalogue",
		Long: `Play, in memory and in a moment, what Strata's storage engine does today, on an embedded catalogue
of an outdoor-gear shop: import it as content-addressed nodes, read a product by JSON Pointer, apply an
agent's RFC 6902 patch that shares every unchanged node, diff the two versions, read the old version
again, and watch a patch whose test fails change nothing.

The versioned database on disk is there already (strata db, import, get, log, diff, branch, snapshot,
promote, revert, restore). The MCP server and its guardrails are being built; when they land this demo will
play the whole story of DESIGN.md through MCP, on a database in --data DIR.`,
		Args: cobra.NoArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.Context(), cmd.OutOrStdout(), g, o)
		}),
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print a JSON transcript instead of text")
	return cmd
}

// demoTranscript is what `strata demo --json` prints.
type demoTranscript struct {
	Dataset   string     `json:"dataset"`
	Storage   string     `json:"storage"`
	Steps     []demoStep `json:"steps"`
	Coming    string     `json:"coming"`
	ElapsedMS float64    `json:"elapsed_ms"`
}

// demoStep is one step of the story: a one-line narration, the lines a person reads, and the same facts as data.
type demoStep struct {
	Name      string   `json:"name"`
	Narration string   `json:"narration"`
	Lines     []string `json:"lines"`
	Data      any      `json:"data"`
}

type importData struct {
	JSONBytes   int     `json:"json_bytes"`
	Products    uint64  `json:"products"`
	Orders      uint64  `json:"orders"`
	Nodes       int     `json:"nodes"`
	RawBytes    int64   `json:"raw_bytes"`
	StoredBytes int64   `json:"stored_bytes"`
	Millis      float64 `json:"ms"`
	Root        string  `json:"root"`
}

type readData struct {
	Pointer string          `json:"pointer"`
	Value   json.RawMessage `json:"value"`
}

type patchData struct {
	Operations   int     `json:"operations"`
	PatchBytes   int     `json:"patch_bytes"`
	Replaced     int     `json:"prices_raised"`
	Added        string  `json:"added_id"`
	Removed      string  `json:"removed_id"`
	RemovedPath  string  `json:"removed_path"`
	Nodes        int     `json:"nodes"`
	RawBytes     int64   `json:"raw_bytes"`
	StoredBytes  int64   `json:"stored_bytes"`
	DocNodes     int     `json:"document_nodes"`
	DocStored    int64   `json:"document_stored_bytes"`
	NodesPercent float64 `json:"nodes_percent"`
	Millis       float64 `json:"ms"`
	Root         string  `json:"root"`
}

type diffData struct {
	Counts     revision.Counts   `json:"counts"`
	Operations []revision.DiffOp `json:"operations"`
	Visited    int               `json:"nodes_visited"`
	RoundTrip  bool              `json:"applies_back"`
	Millis     float64           `json:"ms"`
}

type travelData struct {
	Pointer      string          `json:"pointer"`
	Before       json.RawMessage `json:"before"`
	After        json.RawMessage `json:"after"`
	RemovedPath  string          `json:"removed_path"`
	RemovedAtV1  json.RawMessage `json:"removed_at_version_1"`
	StillThereV1 bool            `json:"removed_still_in_version_1"`
}

type failedData struct {
	Error            string          `json:"error"`
	Applied          bool            `json:"applied"`
	Root             string          `json:"root"`
	Price            json.RawMessage `json:"price"`
	StoreNodesBefore int             `json:"store_nodes_before"`
	StoreNodesAfter  int             `json:"store_nodes_after"`
}

// demo holds one run of the story: its own in-memory store, so runs never interfere.
type demo struct {
	ctx   context.Context
	mem   *store.Mem
	f     *revision.Forest
	out   io.Writer
	human bool
	tr    demoTranscript
	n     int // steps printed

	// What the story carries from step to step.
	v1, v2      revision.Value
	imported    revision.Stats
	importMS    float64
	pricePtr    string
	removedPath string
}

func runDemo(ctx context.Context, w io.Writer, g *globalOptions, o *demoOptions) error {
	start := time.Now()
	mem := store.NewMem()
	d := &demo{ctx: ctx, mem: mem, f: revision.New(mem, nil), out: w, human: !o.json}
	d.tr.Dataset = "demo/catalogue.json: an outdoor-gear shop's catalogue (embedded)"
	d.tr.Storage = fmt.Sprintf("in memory (store.NewMem); nothing is written to %s yet", g.dataDir)
	d.tr.Coming = "jq queries, the MCP server and its guardrails are being built; then this demo plays the whole " +
		"story through MCP. The versioned database on disk is there already: try strata db create, import, log and diff."
	if d.human {
		d.printf("Strata demo: what the storage engine does today, on an outdoor-gear shop's catalogue.\n")
		d.printf("Storage is %s.\n\n", d.tr.Storage)
	}
	for _, s := range []func() (demoStep, error){d.importStep, d.readStep, d.patchStep, d.diffStep, d.travelStep, d.failedPatchStep} {
		st, err := s()
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		d.emit(st)
	}
	d.tr.ElapsedMS = ms(time.Since(start))
	if !d.human {
		return writeJSON(w, d.tr)
	}
	d.printf("Done in %.0f ms. %s\n", d.tr.ElapsedMS, d.tr.Coming)
	return nil
}

func (d *demo) printf(format string, args ...any) { fmt.Fprintf(d.out, format, args...) }

func (d *demo) emit(st demoStep) {
	if st.Name == "" {
		return // a step with nothing to show
	}
	d.tr.Steps = append(d.tr.Steps, st)
	if !d.human {
		return
	}
	d.n++
	d.printf("%d. %s\n", d.n, st.Narration)
	for _, l := range st.Lines {
		d.printf("   %s\n", l)
	}
	d.printf("\n")
}

func (d *demo) importStep() (demoStep, error) {
	t := time.Now()
	v, st, err := d.f.ImportBytes(d.ctx, catalogueJSON)
	if err != nil {
		return demoStep{}, fmt.Errorf("import: %w", err)
	}
	d.importMS = ms(time.Since(t))
	d.v1, d.imported = v, st
	products, err := d.f.Get(d.ctx, v, revision.MustPointer("/products"))
	if err != nil {
		return demoStep{}, err
	}
	orders, err := d.f.Get(d.ctx, v, revision.MustPointer("/orders"))
	if err != nil {
		return demoStep{}, err
	}
	data := importData{
		JSONBytes: len(catalogueJSON), Products: products.Len(), Orders: orders.Len(),
		Nodes: st.Nodes, RawBytes: st.RawBytes, StoredBytes: st.StoredBytes, Millis: d.importMS, Root: v.Hash().Short(),
	}
	return demoStep{
		Name:      "import",
		Narration: "Import the catalogue: it becomes a tree of immutable nodes, each addressed by its SHA-256.",
		Lines: []string{
			fmt.Sprintf("%d products and %d orders, %s of JSON", data.Products, data.Orders, byteSize(int64(data.JSONBytes))),
			fmt.Sprintf("imported: %d nodes, %s raw, %s stored (S2-compressed), in %.1f ms",
				st.Nodes, byteSize(st.RawBytes), byteSize(st.StoredBytes), d.importMS),
			fmt.Sprintf("version 1 is root %s", data.Root),
		},
		Data: data,
	}, nil
}

func (d *demo) readStep() (demoStep, error) {
	ptr := fmt.Sprintf("/products/%d", demoProductIndex)
	v, err := d.f.Get(d.ctx, d.v1, revision.MustPointer(ptr))
	if err != nil {
		return demoStep{}, err
	}
	text, err := d.f.JSON(d.ctx, v)
	if err != nil {
		return demoStep{}, err
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, text, "", "  "); err != nil {
		return demoStep{}, err
	}
	lines := []string{ptr + " →"}
	for _, l := range strings.Split(pretty.String(), "\n") {
		lines = append(lines, "  "+l)
	}
	d.pricePtr = ptr + "/price"
	return demoStep{
		Name:      "read",
		Narration: "Read one product by JSON Pointer: only the nodes on the path are decoded.",
		Lines:     lines,
		Data:      readData{Pointer: ptr, Value: text},
	}, nil
}

// demoProduct is what the agent looks at to decide its change.
type demoProduct struct {
	ID           string      `json:"id"`
	Name         string      `json:"name"`
	Category     string      `json:"category"`
	Price        json.Number `json:"price"`
	Discontinued bool        `json:"discontinued"`
}

// patchStep plays an agent: it reads the products, then sends one RFC 6902 patch that raises the prices of one
// category by 10%, adds a product and removes a discontinued one.
func (d *demo) patchStep() (demoStep, error) {
	pv, err := d.f.Get(d.ctx, d.v1, revision.MustPointer("/products"))
	if err != nil {
		return demoStep{}, err
	}
	text, err := d.f.JSON(d.ctx, pv)
	if err != nil {
		return demoStep{}, err
	}
	var products []demoProduct
	if err := json.Unmarshal(text, &products); err != nil {
		return demoStep{}, err
	}

	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value,omitempty"`
	}
	var ops []op
	var shown []string // the first price changes, for people
	removed := -1
	for i, p := range products {
		if p.Category == demoCategory {
			newPrice, err := raise(p.Price, 10)
			if err != nil {
				return demoStep{}, fmt.Errorf("product %s: %w", p.ID, err)
			}
			ops = append(ops, op{"replace", fmt.Sprintf("/products/%d/price", i), newPrice})
			if len(shown) < 2 {
				shown = append(shown, fmt.Sprintf("replace /products/%d/price  %s → %s  (%s)", i, p.Price, newPrice, p.Name))
			}
		}
		// The first discontinued product after the featured one, so that the featured one keeps its index.
		if removed < 0 && p.Discontinued && i > demoProductIndex {
			removed = i
		}
	}
	raised := len(ops)
	if raised == 0 || removed < 0 {
		return demoStep{}, errors.New("the catalogue has no product to change")
	}
	newID := fmt.Sprintf("P-%04d", len(products)+1)
	ops = append(ops, op{"add", "/products/-", map[string]any{
		"id": newID, "sku": "TNT-2026", "name": "Kestrel Ridgeline UL 1 Tent", "category": demoCategory,
		"brand": "Kestrel", "price": json.Number("379.00"), "stock": 40, "weight_g": 980, "reviews": 0,
		"tags": []string{"1-person", "ultralight"}, "discontinued": false, "added": "2025-03-01",
		"description": "A light, packable tent for fast-and-light trips.",
	}})
	// Removal goes last, so that the indices above still name the products the agent read.
	d.removedPath = fmt.Sprintf("/products/%d", removed)
	ops = append(ops, op{"remove", d.removedPath, nil})

	// The agent sends JSON Patch text, as it will over MCP; the engine parses it strictly.
	patchText, err := json.Marshal(ops)
	if err != nil {
		return demoStep{}, err
	}
	parsed, err := revision.ParsePatch(patchText)
	if err != nil {
		return demoStep{}, err
	}
	t := time.Now()
	change, err := d.f.Patch(d.ctx, d.v1, parsed)
	if err != nil {
		return demoStep{}, fmt.Errorf("patch: %w", err)
	}
	st, err := d.f.Save(d.ctx, change)
	if err != nil {
		return demoStep{}, fmt.Errorf("save: %w", err)
	}
	took := ms(time.Since(t))
	d.v2 = change.Root

	data := patchData{
		Operations: len(parsed), PatchBytes: len(patchText), Replaced: raised,
		Added: newID, Removed: products[removed].ID, RemovedPath: d.removedPath,
		Nodes: st.Nodes, RawBytes: st.RawBytes, StoredBytes: st.StoredBytes,
		DocNodes: d.imported.Nodes, DocStored: d.imported.StoredBytes,
		NodesPercent: 100 * float64(st.Nodes) / float64(d.imported.Nodes),
		Millis:       took, Root: d.v2.Hash().Short(),
	}
	lines := []string{fmt.Sprintf("one patch of %d operations (%s of JSON Patch):", data.Operations, byteSize(int64(data.PatchBytes)))}
	for _, l := range shown {
		lines = append(lines, "  "+l)
	}
	lines = append(lines,
		fmt.Sprintf("  … %d more price replacements in %q", raised-len(shown), demoCategory),
		fmt.Sprintf("  add /products/-  %s %q", newID, "Kestrel Ridgeline UL 1 Tent"),
		fmt.Sprintf("  remove %s  %s %q (discontinued)", d.removedPath, products[removed].ID, products[removed].Name),
		fmt.Sprintf("version 2 is root %s, made in %.1f ms", data.Root, took),
		fmt.Sprintf("the change stored %d new nodes (%s stored); the catalogue is %d nodes (%s stored)",
			st.Nodes, byteSize(st.StoredBytes), d.imported.Nodes, byteSize(d.imported.StoredBytes)),
		fmt.Sprintf("copy-on-write: %.0f%% of the nodes are new; every other node is shared with version 1",
			data.NodesPercent),
	)
	return demoStep{
		Name:      "patch",
		Narration: fmt.Sprintf("An agent raises every price in %q by 10%%, adds a product and removes a discontinued one, in one patch.", demoCategory),
		Lines:     lines,
		Data:      data,
	}, nil
}

// raise returns price increased by pct percent, rounded to cents, as the catalogue writes prices.
func raise(price json.Number, pct int64) (json.Number, error) {
	r, ok := new(big.Rat).SetString(string(price))
	if !ok {
		return "", fmt.Errorf("price %q is not a number", price)
	}
	r.Mul(r, big.NewRat(100+pct, 100))
	return json.Number(r.FloatString(2)), nil
}

func (d *demo) diffStep() (demoStep, error) {
	t := time.Now()
	res, err := d.f.Diff(d.ctx, d.v1, d.v2, nil)
	if err != nil {
		return demoStep{}, fmt.Errorf("diff: %w", err)
	}
	took := ms(time.Since(t))
	c := res.Counts
	summary := fmt.Sprintf("%d replaced, %d added, %d removed, %d moved, in %.1f ms", c.Replaced, c.Added, c.Removed, c.Moved, took)
	if res.Visited > 0 {
		summary += fmt.Sprintf(", reading %d nodes", res.Visited)
	}
	lines := []string{summary}
	// Show the first two operations of each kind, in order, and say how many were left out between them.
	shown := map[string]int{}
	hidden := 0
	flush := func() {
		if hidden > 0 {
			lines = append(lines, fmt.Sprintf("… %d more", hidden))
			hidden = 0
		}
	}
	for _, o := range res.Operations {
		if shown[o.Op] == 2 {
			hidden++
			continue
		}
		flush()
		shown[o.Op]++
		lines = append(lines, describeOp(o))
	}
	flush()
	// A diff is a patch: applied to version 1 it must give version 2, node for node.
	back, err := d.f.Patch(d.ctx, d.v1, res.Patch())
	if err != nil {
		return demoStep{}, fmt.Errorf("applying the diff to version 1: %w", err)
	}
	if back.Root != d.v2 {
		return demoStep{}, fmt.Errorf("applying the diff to version 1 gave root %s, not version 2's %s",
			back.Root.Hash().Short(), d.v2.Hash().Short())
	}
	lines = append(lines, fmt.Sprintf("applied to version 1 as a patch, the diff gives version 2 exactly (root %s)",
		d.v2.Hash().Short()))
	return demoStep{
		Name:      "diff",
		Narration: "Diff the two versions: equal subtrees are skipped by hash; the result is an RFC 6902 patch with old values.",
		Lines:     lines,
		Data:      diffData{Counts: c, Operations: res.Operations, Visited: res.Visited, RoundTrip: true, Millis: took},
	}, nil
}

// describeOp writes one diff operation on one line.
func describeOp(o revision.DiffOp) string {
	switch o.Op {
	case "replace":
		return fmt.Sprintf("replace %s  %s → %s", o.Path, clip(o.OldValue), clip(o.Value))
	case "remove":
		return fmt.Sprintf("remove %s  (was %s)", o.Path, clip(o.OldValue))
	case "move", "copy":
		return fmt.Sprintf("%s %s → %s", o.Op, o.From, o.Path)
	}
	return fmt.Sprintf("%s %s  %s", o.Op, o.Path, clip(o.Value))
}

// clip shortens JSON text for one line of output.
func clip(b []byte) string {
	const max = 60
	if len(b) <= max {
		return string(b)
	}
	return string(b[:max]) + "…"
}

func (d *demo) travelStep() (demoStep, error) {
	before, err := d.read(d.v1, d.pricePtr)
	if err != nil {
		return demoStep{}, err
	}
	after, err := d.read(d.v2, d.pricePtr)
	if err != nil {
		return demoStep{}, err
	}
	gone, err := d.read(d.v1, d.removedPath+"/id")
	if err != nil {
		return demoStep{}, err
	}
	now, err := d.read(d.v2, d.removedPath+"/id")
	if err != nil {
		return demoStep{}, err
	}
	return demoStep{
		Name:      "time-travel",
		Narration: "Time travel: both versions stay whole and readable; version 2 did not overwrite version 1.",
		Lines: []string{
			fmt.Sprintf("%s in version 1 (root %s): %s", d.pricePtr, d.v1.Hash().Short(), before),
			fmt.Sprintf("%s in version 2 (root %s): %s", d.pricePtr, d.v2.Hash().Short(), after),
			fmt.Sprintf("%s/id in version 1: %s, the product version 2 removed; in version 2 that index holds %s",
				d.removedPath, gone, now),
		},
		Data: travelData{Pointer: d.pricePtr, Before: before, After: after, RemovedPath: d.removedPath,
			RemovedAtV1: gone, StillThereV1: !bytes.Equal(gone, now)},
	}, nil
}

// read returns the JSON text at ptr in root.
func (d *demo) read(root revision.Value, ptr string) (json.RawMessage, error) {
	p, err := revision.ParsePointer(ptr)
	if err != nil {
		return nil, err
	}
	v, err := d.f.Get(d.ctx, root, p)
	if err != nil {
		return nil, err
	}
	return d.f.JSON(d.ctx, v)
}

// failedPatchStep plays a second agent that read version 1: it puts the featured product on sale at 20% off the
// price it saw, guarding the change with a test op. The price has changed since, so nothing is applied.
func (d *demo) failedPatchStep() (demoStep, error) {
	old, err := d.read(d.v1, d.pricePtr)
	if err != nil {
		return demoStep{}, err
	}
	sale, err := raise(json.Number(old), -20)
	if err != nil {
		return demoStep{}, err
	}
	patchText := fmt.Sprintf(`[{"op":"test","path":%q,"value":%s},{"op":"replace","path":%q,"value":%s}]`,
		d.pricePtr, old, d.pricePtr, sale)
	ops, err := revision.ParsePatch([]byte(patchText))
	if err != nil {
		return demoStep{}, err
	}
	nodesBefore := d.mem.Len()
	change, patchErr := d.f.Patch(d.ctx, d.v2, ops)
	if patchErr == nil {
		return demoStep{}, fmt.Errorf("the stale patch applied (new root %s); it should have failed", change.Root.Hash().Short())
	}
	if !errors.Is(patchErr, revision.ErrTestFailed) {
		return demoStep{}, fmt.Errorf("the stale patch failed for the wrong reason: %w", patchErr)
	}
	price, err := d.read(d.v2, d.pricePtr)
	if err != nil {
		return demoStep{}, err
	}
	data := failedData{Error: patchErr.Error(), Applied: false, Root: d.v2.Hash().Short(), Price: price,
		StoreNodesBefore: nodesBefore, StoreNodesAfter: d.mem.Len()}
	return demoStep{
		Name:      "failed-patch",
		Narration: "A second agent, still looking at version 1, guards its change with a test op; the test fails, so nothing changes.",
		Lines: []string{
			"patch: " + patchText,
			"refused: " + data.Error,
			fmt.Sprintf("version 2 is still root %s; %s is still %s; the store still holds %d nodes",
				data.Root, d.pricePtr, price, data.StoreNodesAfter),
		},
		Data: data,
	}, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

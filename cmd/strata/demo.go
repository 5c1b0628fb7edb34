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

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/strata-db/strata/gate"
	strataMCP "github.com/strata-db/strata/mcp"
	"github.com/strata-db/strata/query"
	"github.com/strata-db/strata/snapshots"
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

	demoDB       = "demo"
	demoResource = "catalogue"
	demoCreator  = "strata demo" // the creator of the demo database (revision 1's author): how a rerun knows it
	demoAgent    = "demo-agent"  // the MCP principal the agent plays
	demoSnapshot = "before-agent"
	demoBranch   = "agent/tent-prices"
)

type demoOptions struct {
	json bool
}

func newDemoCommand(g *globalOptions) *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Play an agent's session through MCP on a demo database",
		Long: `Play, in well under a second, an agent's whole session with Strata, through the MCP protocol, on an embedded
catalogue of an outdoor-gear shop.

In the data directory (--data) it creates the database "demo" (a "demo" made by an earlier strata demo is
dropped and made again; any other "demo" is left alone and the demo refuses to run) and imports the catalogue
as the operator. Then an agent, connected to an in-process MCP server that lets it write on branches only,
snapshots the catalogue, branches, raises the tent prices by 10% and discontinues a product on its branch,
diffs the branch against main and promotes it. main is protected, so the promote becomes a plan; the
client asks its user, who confirms, and apply_plan commits it. The agent reads the old prices again (time
travel), follows one price through history, bisects for the revision where a tent first cost more than
before, and reverts main to the snapshot (a plan again, confirmed again).

Every tool call is printed with its arguments and the essential part of its answer. The database stays:
explore it afterwards with strata log demo, strata diff demo before-agent main, strata plans demo --all.`,
		Args: cobra.NoArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.Context(), cmd.OutOrStdout(), g, o)
		}),
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print the transcript as JSON lines, one event a line")
	return cmd
}

// demoEvent is one line of `strata demo --json`: the setup, a tool call and its answer, a confirmation the client
// asked its user for, or the end.
type demoEvent struct {
	Event     string          `json:"event"` // "setup", "call", "confirm", "done"
	Step      int             `json:"step,omitempty"`
	Narration string          `json:"narration,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	Summary   string          `json:"summary,omitempty"` // the server's one-line summary of its answer
	Result    json.RawMessage `json:"result,omitempty"`  // the answer's structured content
	Lines     []string        `json:"lines,omitempty"`   // the essential bits, as printed for people
	Question  string          `json:"question,omitempty"`
	Answer    string          `json:"answer,omitempty"`
	ElapsedMS float64         `json:"elapsed_ms,omitempty"`
}

// demoRun is one run of the story.
type demoRun struct {
	ctx   context.Context
	out   io.Writer
	human bool
	cs    *mcpsdk.ClientSession
	step  int
}

func runDemo(ctx context.Context, w io.Writer, g *globalOptions, o *demoOptions) (err error) {
	start := time.Now()
	d := &demoRun{ctx: ctx, out: w, human: !o.json}

	dir, err := g.openDir(true)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := dir.Close(); err == nil {
			err = cerr
		}
	}()
	// The operator's part — dropping an earlier demo database, creating it anew, importing the catalogue — is one
	// call of the audit log, as every command that writes is; and the log is opened before anything is written, so
	// that a log that cannot be written (a keyed chain without its key) stops the demo first (both found in review).
	var setup []string
	var imp *snapshots.Result
	err = g.operatorCall(ctx, dir, "demo", demoDB, nil, func(ctx context.Context, _ *gate.Actor) error {
		var err error
		if setup, err = prepareDemoDB(ctx, dir); err != nil {
			return err
		}
		db, err := dir.Open(ctx, demoDB)
		if err != nil {
			return err
		}
		imp, err = db.Put(ctx, demoResource, catalogueJSON, snapshots.WriteOptions{Author: demoCreator, Tool: "cli demo",
			Message: "the operator imports the demo catalogue"})
		if err != nil {
			return fmt.Errorf("demo: importing the catalogue: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	setup = append(setup,
		fmt.Sprintf("The operator imports the catalogue of an outdoor-gear shop as resource %q (%s of JSON): revision %d on main.",
			demoResource, byteSize(int64(len(catalogueJSON))), imp.Revision),
		fmt.Sprintf("The agent %q connects to an in-process MCP server (writes: branches). It may branch and write on its", demoAgent),
		"branches; main is protected: a change to main becomes a plan that the person at the client confirms.")
	d.emit(demoEvent{Event: "setup", Lines: setup})

	// The server, as strata mcp --writes branches would serve it to this agent, and its audit log.
	engine, err := query.New(query.Options{})
	if err != nil {
		return err
	}
	defer engine.Close()
	aud, err := g.openAudit(ctx, dir, nil)
	if err != nil {
		return err
	}
	defer aud.Close()
	srv, err := strataMCP.NewServer(dir, strataMCP.Config{Writes: strataMCP.WritesBranches, Principal: demoAgent,
		Version: currentVersion().Version, Engine: engine, Audit: aud})
	if err != nil {
		return err
	}
	st, ct := mcpsdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		return err
	}
	defer ss.Wait()
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "strata demo", Version: currentVersion().Version},
		&mcpsdk.ClientOptions{ElicitationHandler: d.confirm})
	d.cs, err = client.Connect(ctx, ct, nil)
	if err != nil {
		ss.Close()
		return err
	}
	defer d.cs.Close()

	if err := d.story(imp.Revision); err != nil {
		return fmt.Errorf("demo: %w", err)
	}

	took := ms(time.Since(start))
	end := []string{
		fmt.Sprintf("Done in %.0f ms. The database %q stays in %s; explore it with the command line:", took, demoDB, dir.Path()),
		"  strata log demo                          every revision: the operator's import, the agent's, the revert",
		"  strata diff demo before-agent main       what main changed since the snapshot (nothing: it was reverted)",
		"  strata diff demo before-agent " + demoBranch + "   what the agent did on its branch",
		fmt.Sprintf("  strata get demo %s/products/%d --at %s   the featured tent on the agent's branch", demoResource, demoProductIndex, demoBranch),
		"  strata plans demo --all                  the two plans, and who confirmed them",
		"  strata audit                             every MCP call the agent made",
	}
	d.emit(demoEvent{Event: "done", Lines: end, ElapsedMS: took})
	return nil
}

// prepareDemoDB creates the demo database, dropping one made by an earlier demo. A "demo" database made some other
// way is someone's data: the demo refuses and touches nothing.
func prepareDemoDB(ctx context.Context, dir *snapshots.Dir) ([]string, error) {
	names, err := dir.Names()
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, n := range names {
		if n != demoDB {
			continue
		}
		db, err := dir.Open(ctx, demoDB)
		if err != nil {
			return nil, err
		}
		st, err := db.Resolve(ctx, snapshots.Ref{Revision: 1})
		if err != nil {
			return nil, err
		}
		if st.Rev.Author != demoCreator {
			return nil, &cliError{code: exitConflict, err: fmt.Errorf(
				"a database named %q already exists in %s and was not made by strata demo (it was created by %q); "+
					"the demo leaves it alone: run the demo with another data directory (--data DIR), or drop that database yourself (strata db drop %s --yes)",
				demoDB, dir.Path(), st.Rev.Author, demoDB)}
		}
		info, err := dir.Info(ctx, demoDB)
		if err != nil {
			return nil, err
		}
		if err := dir.Drop(ctx, demoDB); err != nil {
			return nil, err
		}
		lines = append(lines, fmt.Sprintf("Dropped the database %q an earlier strata demo made (%d revisions), to start again.", demoDB, info.Revisions))
	}
	if _, err := dir.Create(ctx, demoDB, demoCreator); err != nil {
		return nil, err
	}
	return append(lines, fmt.Sprintf("Created the database %q in %s.", demoDB, dir.Path())), nil
}

// emit prints one event: a JSON line, or text for people.
func (d *demoRun) emit(e demoEvent) {
	if !d.human {
		writeJSONLine(d.out, e)
		return
	}
	switch e.Event {
	case "call":
		fmt.Fprintf(d.out, "%d. %s\n", e.Step, e.Narration)
		fmt.Fprintf(d.out, "   → %s %s\n", e.Tool, compactArgs(e.Arguments))
		for _, l := range e.Lines {
			fmt.Fprintf(d.out, "   ← %s\n", l)
		}
		fmt.Fprintln(d.out)
	case "confirm":
		fmt.Fprintf(d.out, "   ? the client asks its user: %s\n", e.Question)
		fmt.Fprintf(d.out, "   ! %s\n", e.Narration)
	default:
		for _, l := range e.Lines {
			fmt.Fprintln(d.out, l)
		}
		fmt.Fprintln(d.out)
	}
}

// confirm is the client's elicitation handler: it plays the person at the client, who reads the question and
// confirms.
func (d *demoRun) confirm(_ context.Context, req *mcpsdk.ElicitRequest) (*mcpsdk.ElicitResult, error) {
	d.emit(demoEvent{Event: "confirm", Step: d.step, Question: req.Params.Message, Answer: "accept",
		Narration: "the person reads it and confirms"})
	return &mcpsdk.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
}

// demoAnswer is a tool's answer, decoded.
type demoAnswer struct {
	summary string
	raw     json.RawMessage
	m       map[string]any // numbers as json.Number
}

func (a *demoAnswer) str(k string) string {
	s, _ := a.m[k].(string)
	return s
}

func (a *demoAnswer) num(k string) string {
	n, _ := a.m[k].(json.Number)
	return n.String()
}

// field returns the JSON text of a member of the answer.
func (a *demoAnswer) field(k string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(a.raw, &m) != nil {
		return ""
	}
	return string(m[k])
}

// call makes one tool call, prints it with what its answer shows (lines picks the essential bits), and returns the
// answer. An error result stops the story.
func (d *demoRun) call(narration, tool string, args demoArgs, lines func(a *demoAnswer) []string) (*demoAnswer, error) {
	d.step++
	argText, err := marshalCompact(args)
	if err != nil {
		return nil, err
	}
	if d.human {
		// The call is shown before its answer: a confirmation may come in between.
		fmt.Fprintf(d.out, "%d. %s\n   → %s %s\n", d.step, narration, tool, compactArgs(argText))
	}
	res, err := d.cs.CallTool(d.ctx, &mcpsdk.CallToolParams{Name: tool, Arguments: json.RawMessage(argText)})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	// The data is read from the text block, where numbers keep their exact text (the go-sdk decodes the
	// structured content into float64s).
	a := &demoAnswer{}
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcpsdk.TextContent); ok {
			var rest string
			a.summary, rest, _ = strings.Cut(tc.Text, "\n<data-")
			if _, data, ok := strings.Cut(rest, ">\n"); ok {
				if i := strings.LastIndex(data, "\n</data-"); i >= 0 {
					a.raw = json.RawMessage(data[:i])
				}
			}
		}
	}
	if a.raw == nil {
		return nil, fmt.Errorf("%s: the answer has no data block", tool)
	}
	dec := json.NewDecoder(bytes.NewReader(a.raw))
	dec.UseNumber()
	if err := dec.Decode(&a.m); err != nil {
		return nil, fmt.Errorf("%s: the answer is not a JSON object: %v", tool, err)
	}
	if res.IsError {
		if detail := a.str("detail"); detail != "" {
			return nil, fmt.Errorf("%s %s: %s (%s)", tool, argText, a.summary, detail)
		}
		return nil, fmt.Errorf("%s %s: %s", tool, argText, a.summary)
	}
	shown := []string{a.summary}
	if lines != nil {
		shown = lines(a)
	}
	e := demoEvent{Event: "call", Step: d.step, Narration: narration, Tool: tool, Arguments: argText, Summary: a.summary,
		Result: a.raw, Lines: shown}
	if d.human {
		for _, l := range shown {
			fmt.Fprintf(d.out, "   ← %s\n", l)
		}
		fmt.Fprintln(d.out)
	} else {
		d.emit(e)
	}
	return a, nil
}

// story is the agent's session.
func (d *demoRun) story(imported uint64) error {
	with := func(kv ...any) demoArgs { return append(demoArgs{"database", demoDB, "resource", demoResource}, kv...) }
	featured := fmt.Sprintf("/products/%d", demoProductIndex)
	price := featured + "/price"

	// 1. Look before touching.
	a, err := d.call("The agent reads the featured product, as it is on main.", "read", with("path", featured),
		func(a *demoAnswer) []string {
			var p demoProduct
			json.Unmarshal([]byte(a.field("value")), &p)
			return []string{fmt.Sprintf("revision %s: %s %q, price %s (%s fields)", a.num("revision"), p.ID, p.Name, p.Price, a.num("count"))}
		})
	if err != nil {
		return err
	}

	// 2. A label for the state before any change.
	if _, err := d.call("Before changing anything it labels the current state with a snapshot.", "create_snapshot",
		demoArgs{"database", demoDB, "name", demoSnapshot, "note", "the catalogue before the agent's price change"},
		func(a *demoAnswer) []string {
			return []string{fmt.Sprintf("snapshot %s names revision %s", a.str("snapshot"), a.num("revision"))}
		}); err != nil {
		return err
	}

	// 3. A branch of its own.
	if _, err := d.call("It works on a branch of its own: O(1), nothing is copied.", "create_branch",
		demoArgs{"database", demoDB, "name", demoBranch},
		func(a *demoAnswer) []string {
			return []string{fmt.Sprintf("branch %s at revision %s (protected: %s)", a.str("branch"), a.num("revision"), a.field("protected"))}
		}); err != nil {
		return err
	}

	// 4. Find what to change, with jq.
	q := `.products | to_entries[] | select(.value.category == $category) | {index: .key, id: .value.id, name: .value.name, price: .value.price, discontinued: .value.discontinued}`
	a, err = d.call(fmt.Sprintf("It finds the products in %q with a jq query.", demoCategory), "query",
		with("query", q, "params", map[string]any{"category": demoCategory}, "limit", 100),
		func(a *demoAnswer) []string {
			rs, _ := a.m["results"].([]any)
			return []string{fmt.Sprintf("%d results at revision %s, the first: %s", len(rs), a.num("revision"), clipText(firstJSON(a, "results"), 120))}
		})
	if err != nil {
		return err
	}
	var tents []demoTent
	if err := json.Unmarshal([]byte(a.field("results")), &tents); err != nil {
		return err
	}
	var ops []map[string]any
	var maxOld *big.Rat
	discontinue, discontinued := -1, ""
	for _, t := range tents {
		np, err := raise(t.Price, 10)
		if err != nil {
			return fmt.Errorf("product %s: %w", t.ID, err)
		}
		ops = append(ops, map[string]any{"op": "replace", "path": fmt.Sprintf("/products/%d/price", t.Index), "value": np})
		if r, ok := new(big.Rat).SetString(string(t.Price)); ok && (maxOld == nil || r.Cmp(maxOld) > 0) {
			maxOld = r
		}
		if discontinue < 0 && !t.Discontinued && t.Index != demoProductIndex {
			discontinue, discontinued = t.Index, t.ID+" "+t.Name
		}
	}
	if len(ops) == 0 || discontinue < 0 {
		return errors.New("the catalogue has no product to change")
	}

	// 5. The change, on the branch.
	a, err = d.call(fmt.Sprintf("On its branch it raises every price in %q by 10%%, in one patch.", demoCategory), "patch",
		with("operations", ops, "branch", demoBranch, "message", fmt.Sprintf("raise %s prices by 10%%", demoCategory)),
		func(a *demoAnswer) []string {
			return []string{fmt.Sprintf("revision %s on %s (%d prices replaced)", a.num("revision"), a.str("branch"), len(ops))}
		})
	if err != nil {
		return err
	}
	disc := fmt.Sprintf("/products/%d/discontinued", discontinue)
	if _, err = d.call("And discontinues a tent: "+discontinued+".", "update",
		with("path", disc, "value", true, "branch", demoBranch, "message", "discontinue "+discontinued),
		func(a *demoAnswer) []string {
			return []string{fmt.Sprintf("revision %s on %s", a.num("revision"), a.str("branch"))}
		}); err != nil {
		return err
	}

	// 6. Review.
	if _, err := d.call("It reviews its branch against main.", "diff",
		demoArgs{"database", demoDB, "resource", demoResource, "from_branch", "main", "to_branch", demoBranch},
		func(a *demoAnswer) []string {
			c, _ := a.m["counts"].(map[string]any)
			l := []string{fmt.Sprintf("%v replaced, %v added, %v removed, %v moved; the first operation: %s",
				c["replaced"], c["added"], c["removed"], c["moved"], clipText(firstJSON(a, "operations"), 110))}
			return l
		}); err != nil {
		return err
	}

	// 7. Promote: main is protected, so the server answers with a plan.
	a, err = d.call("It promotes the branch into main. main is protected: the server answers with a plan, and writes nothing.",
		"promote", demoArgs{"database", demoDB, "branch", demoBranch, "message", "tent prices +10%, one tent discontinued"},
		planLines)
	if err != nil {
		return err
	}
	plan := a.str("plan_id")
	if plan == "" {
		return fmt.Errorf("promote into protected main committed instead of planning: %s", a.summary)
	}

	// 8. Apply: the client asks its user.
	a, err = d.call("It asks to apply the plan; the server has the client ask its user.", "apply_plan",
		demoArgs{"plan_id", plan}, commitLines)
	if err != nil {
		return err
	}
	promoted := a.num("revision")

	// 9. Time travel.
	if _, err := d.call("Time travel: the featured tent's price at the snapshot, before the change.", "read",
		with("path", price, "snapshot", demoSnapshot), valueLine); err != nil {
		return err
	}
	if _, err := d.call("And at revision "+fmt.Sprint(imported)+", the last one on main before the promotion.", "read",
		with("path", price, "revision", imported), valueLine); err != nil {
		return err
	}
	a, err = d.call("And now, on main.", "read", with("path", price), valueLine)
	if err != nil {
		return err
	}
	newPrice := a.field("value")

	// 10. Blame for one value.
	if _, err := d.call("Who changed that price, and when?", "path_history", with("path", price),
		func(a *demoAnswer) []string {
			var out []string
			cs, _ := a.m["changes"].([]any)
			for _, c := range cs {
				m, _ := c.(map[string]any)
				out = append(out, fmt.Sprintf("revision %v by %v: %v → %v", m["revision"], m["author"], jsonText(m["before"]), jsonText(m["after"])))
			}
			if len(out) == 0 {
				out = []string{a.summary}
			}
			return out
		}); err != nil {
		return err
	}

	// 11. Bisect.
	limit := maxOld.FloatString(2)
	if _, err := d.call(fmt.Sprintf("When did a tent first cost more than %s, the highest tent price before? Bisect.", limit), "bisect",
		with("predicate", `[.products[]? | select(.category == $category) | .price] | max > $limit`,
			"params", map[string]any{"category": demoCategory, "limit": json.Number(limit)}),
		func(a *demoAnswer) []string {
			return []string{fmt.Sprintf("first true at revision %s, after %d evaluations", a.num("revision"), lenOf(a.m["evaluations"]))}
		}); err != nil {
		return err
	}

	// 12. Revert: a plan again.
	a, err = d.call("Asked to undo it all, it reverts main to the snapshot: a plan again, since main is protected.", "revert",
		demoArgs{"database", demoDB, "snapshot", demoSnapshot, "message", "back to the catalogue before the agent"}, planLines)
	if err != nil {
		return err
	}
	plan = a.str("plan_id")
	if plan == "" {
		return fmt.Errorf("revert of protected main committed instead of planning: %s", a.summary)
	}
	if _, err := d.call("It applies the plan; the client asks its user again.", "apply_plan",
		demoArgs{"plan_id", plan}, commitLines); err != nil {
		return err
	}
	if _, err := d.call(fmt.Sprintf("main is back to the snapshot; the promoted state stays readable at revision %s.", promoted), "read",
		with("path", price), func(a *demoAnswer) []string {
			return []string{fmt.Sprintf("revision %s: %s, as at the snapshot (%s at revision %s)", a.num("revision"), a.field("value"), newPrice, promoted)}
		}); err != nil {
		return err
	}
	return nil
}

// demoArgs are a tool call's arguments: names and values in turn, written in that order.
type demoArgs []any

func (a demoArgs) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := 0; i+1 < len(a); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshalCompact(a[i])
		if err != nil {
			return nil, err
		}
		v, err := marshalCompact(a[i+1])
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// demoProduct is what the agent reads of a product.
type demoProduct struct {
	ID    string      `json:"id"`
	Name  string      `json:"name"`
	Price json.Number `json:"price"`
}

func planLines(a *demoAnswer) []string {
	p, _ := a.m["preview"].(map[string]any)
	c, _ := p["counts"].(map[string]any)
	return []string{
		fmt.Sprintf("plan %s: %v (%v replaced, %v removed); nothing written", a.str("plan_id"), p["summary"], c["replaced"], c["removed"]),
		fmt.Sprintf("confirmation required: %s; expires at %s", a.field("confirmation_required"), a.str("expires_at")),
	}
}

func commitLines(a *demoAnswer) []string {
	return []string{fmt.Sprintf("confirmed and committed: main is at revision %s (plan %s)", a.num("revision"), a.str("plan_id"))}
}

func valueLine(a *demoAnswer) []string {
	return []string{fmt.Sprintf("revision %s: %s", a.num("revision"), a.field("value"))}
}

// demoTent is a product of the category the agent changes, as its query returns it.
type demoTent struct {
	Index        int         `json:"index"`
	ID           string      `json:"id"`
	Name         string      `json:"name"`
	Price        json.Number `json:"price"`
	Discontinued bool        `json:"discontinued"`
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

// firstJSON is the JSON text of the first element of an array member of the answer.
func firstJSON(a *demoAnswer, k string) string {
	var arr []json.RawMessage
	if json.Unmarshal([]byte(a.field(k)), &arr) != nil || len(arr) == 0 {
		return "none"
	}
	return string(arr[0])
}

// jsonText shows a decoded JSON value as JSON.
func jsonText(v any) string {
	b, err := marshalCompact(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func lenOf(v any) int {
	if a, ok := v.([]any); ok {
		return len(a)
	}
	n, _ := v.(json.Number)
	i, _ := n.Int64()
	return int(i)
}

// clipText shortens text to at most max runes.
func clipText(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	return string(r[:max]) + "…"
}

// compactArgs shows a call's arguments on one line: arrays longer than two elements show their first two and how
// many more there are.
func compactArgs(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return clipText(string(raw), 200)
	}
	var b strings.Builder
	b.WriteString("{")
	for i, k := range keysInOrder(raw) {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q:", k)
		v := m[k]
		var arr []json.RawMessage
		if json.Unmarshal(v, &arr) == nil && len(arr) > 2 {
			fmt.Fprintf(&b, "[%s,%s,… %d more]", arr[0], arr[1], len(arr)-2)
			continue
		}
		b.Write(v)
	}
	b.WriteString("}")
	return clipText(b.String(), 300)
}

// keysInOrder lists the members of a JSON object in the order they are written.
func keysInOrder(raw json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var keys []string
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keys
		}
	}
	return keys
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

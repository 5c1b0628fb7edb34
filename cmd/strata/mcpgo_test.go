package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	mcpgo "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestMCPGoSession runs an agent's whole session against the built binary with a default client of
// github.com/mark3labs/mcp-go (the most used Go MCP client, with none of its options set), over stdio (`strata mcp`)
// and over Streamable HTTP (`strata serve` on loopback): the protocol it negotiates, tools, a branch, a write, a
// diff, a promotion into protected main that comes back as a plan, approved by a person with the CLI and applied,
// resources, a subscription notified of a commit made by another process (the CLI), prompts and completions. It
// asserts on what the client sees; the only calls that fail are the designed refusals (an unknown database, a
// misspelt argument, a plan applied before anyone confirmed it).
func TestMCPGoSession(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the mcp-go session")
	}
	bin := filepath.Join(t.TempDir(), "strata")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			strata(t, bin, data, "", "db", "create", "shop")
			strata(t, bin, data, `{"items":[{"id":1,"price":10},{"id":2,"price":20}],"owner":"ops"}`, "import", "shop", "catalog", "-")
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			var c *mcpgo.Client
			if transport == "stdio" {
				var err error
				if c, err = mcpgo.NewStdioMCPClient(bin, nil, "--data", data, "mcp", "--writes", "branches"); err != nil {
					t.Fatal(err)
				}
			} else {
				addr := freeLocalAddr(t)
				logPath := filepath.Join(t.TempDir(), "serve.log")
				logFile, err := os.Create(logPath)
				if err != nil {
					t.Fatal(err)
				}
				defer logFile.Close()
				serve := exec.Command(bin, "--data", data, "serve", "--listen", addr, "--writes", "branches")
				serve.Stdout, serve.Stderr = logFile, logFile
				if err := serve.Start(); err != nil {
					t.Fatal(err)
				}
				defer func() {
					_ = serve.Process.Kill()
					_ = serve.Wait()
					if t.Failed() {
						log, _ := os.ReadFile(logPath)
						t.Logf("strata serve's log:\n%s", log)
					}
				}()
				waitListening(t, addr, logPath)
				if c, err = mcpgo.NewStreamableHttpClient("http://" + addr + "/mcp"); err != nil {
					t.Fatal(err)
				}
			}
			defer c.Close()
			// As mcp-go's examples do: Start (idempotent) also routes the transport's notifications to OnNotification.
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			mcpGoSession(t, ctx, c, bin, data)
		})
	}
}

// strata runs the built binary on a data directory, with stdin, and returns its output; it must succeed.
func strata(t *testing.T, bin, data, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--data", data}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("strata %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// goAgent is a session of an mcp-go client, as an agent drives it.
type goAgent struct {
	t       *testing.T
	ctx     context.Context
	c       *mcpgo.Client
	outputs map[string]*jsonschema.Resolved // the tools' output schemas, as mcp-go re-serialises them
}

// call calls a tool and returns its text, its fields (the structured content; an error's fields from _meta) and
// whether it is an error result. A protocol error fails the test: no call of the session may end in one.
func (a *goAgent) call(name string, args map[string]any) (string, map[string]any, bool) {
	a.t.Helper()
	res, err := a.c.CallTool(a.ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		a.t.Fatalf("%s %v: %v", name, args, err)
	}
	if len(res.Content) != 1 {
		a.t.Fatalf("%s: %d content blocks, want 1", name, len(res.Content))
	}
	tc, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		a.t.Fatalf("%s: content is %T, want text", name, res.Content[0])
	}
	var fields any = res.StructuredContent
	if res.IsError {
		if res.StructuredContent != nil {
			a.t.Fatalf("%s: an error result with structured content: %v", name, res.StructuredContent)
		}
		if res.Meta != nil {
			fields = res.Meta.AdditionalFields["strata/error"]
		}
	}
	var m map[string]any
	b, _ := json.Marshal(fields)
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		a.t.Fatalf("%s: no fields (%v): %s", name, err, b)
	}
	// An answer matches the tool's output schema, as mcp-go hosts keep it (type, properties, required,
	// additionalProperties), as clients that validate check.
	if rs := a.outputs[name]; rs != nil && !res.IsError {
		if err := rs.Validate(m); err != nil {
			a.t.Fatalf("%s: structured content does not match the output schema: %v\n%s", name, err, b)
		}
	}
	return tc.Text, m, res.IsError
}

func (a *goAgent) ok(name string, args map[string]any) map[string]any {
	a.t.Helper()
	text, m, isErr := a.call(name, args)
	if isErr {
		a.t.Fatalf("%s %v failed:\n%s", name, args, text)
	}
	return m
}

// refused calls a tool that must fail with a designed refusal, code.
func (a *goAgent) refused(name string, args map[string]any, code string) string {
	a.t.Helper()
	text, m, isErr := a.call(name, args)
	if !isErr || m["code"] != code || !strings.HasPrefix(text, code+": ") {
		a.t.Fatalf("%s %v: want %s, got:\n%s", name, args, code, text)
	}
	return text
}

func mcpGoSession(t *testing.T, ctx context.Context, c *mcpgo.Client, bin, data string) {
	var mu sync.Mutex
	updated := map[string]int{}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationResourceUpdated) {
			uri, _ := n.Params.AdditionalFields["uri"].(string)
			mu.Lock()
			updated[uri]++
			mu.Unlock()
		}
	})
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: "mcp-go-agent", Version: "1"}}})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	// The client keeps the newest revision it speaks: the server supports it on this transport.
	if v := c.ProtocolVersion(); v != mcp.LATEST_PROTOCOL_VERSION {
		t.Errorf("negotiated protocol %s, want the client's newest, %s", v, mcp.LATEST_PROTOCOL_VERSION)
	}
	if init.ServerInfo.Name != "strata" || !strings.Contains(init.Instructions, "apply_plan") {
		t.Errorf("initialize: server %+v, instructions %q", init.ServerInfo, init.Instructions)
	}
	a := &goAgent{t: t, ctx: ctx, c: c, outputs: map[string]*jsonschema.Resolved{}}

	// Tools.
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema.Type != "object" || tool.Description == "" {
			t.Errorf("%s: input schema %+v, description %q", tool.Name, tool.InputSchema, tool.Description)
		}
		b, err := json.Marshal(tool.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil || s.Type != "object" || len(s.Required) == 0 {
			t.Fatalf("%s: output schema as mcp-go keeps it: %v %s", tool.Name, err, b)
		}
		if a.outputs[tool.Name], err = s.Resolve(nil); err != nil {
			t.Fatalf("%s: output schema does not resolve: %v", tool.Name, err)
		}
	}
	for _, want := range []string{"status", "read", "create_branch", "update", "diff", "promote", "apply_plan", "list_plans"} {
		if !slices.Contains(names, want) {
			t.Fatalf("tools/list lacks %s: %v", want, names)
		}
	}
	if st := a.ok("status", nil); st["writes"] != "branches" || !slices.Contains(st["protected_branches"].([]any), any("main")) {
		t.Fatalf("status: %v", st)
	}

	// Designed refusals: a database that does not exist, a misspelt argument.
	a.refused("read", map[string]any{"database": "nope", "resource": "catalog"}, "NOT_FOUND")
	if text := a.refused("read", map[string]any{"database": "shop", "resource": "catalog", "pth": "/items"}, "INVALID_ARGUMENT"); !strings.Contains(text, `"path"`) {
		t.Errorf("a misspelt argument is refused without naming the right one:\n%s", text)
	}

	// The safe change: a branch, a write there, the diff, a promotion into main that becomes a plan.
	br := a.ok("create_branch", map[string]any{"database": "shop", "name": "agent/reprice"})
	head := br["revision"].(float64)
	a.ok("update", map[string]any{"database": "shop", "resource": "catalog", "path": "/items/0/price", "value": 12,
		"branch": "agent/reprice", "expected_head": head, "message": "reprice item 1"})
	if r := a.ok("read", map[string]any{"database": "shop", "resource": "catalog", "path": "/items/0/price", "branch": "agent/reprice"}); r["value"] != 12.0 {
		t.Fatalf("read on the branch: %v", r)
	}
	d := a.ok("diff", map[string]any{"database": "shop", "from_branch": "main", "to_branch": "agent/reprice"})
	if counts := d["counts"].(map[string]any); counts["replaced"] != 1.0 || len(d["operations"].([]any)) != 1 {
		t.Fatalf("diff: %v", d)
	}
	plan := a.ok("promote", map[string]any{"database": "shop", "branch": "agent/reprice", "message": "reprice"})
	id, _ := plan["plan_id"].(string)
	if !strings.HasPrefix(id, "plan-") || plan["confirmation_required"] != true {
		t.Fatalf("promote into main must be a plan: %v", plan)
	}
	// Nobody confirmed it yet, and this client cannot ask its user: a designed refusal, nothing written.
	if text := a.refused("apply_plan", map[string]any{"plan_id": id}, "CONFIRMATION_REQUIRED"); !strings.Contains(text, "strata approve shop "+id) {
		t.Fatalf("apply_plan before approval does not say how to get one:\n%s", text)
	}
	if out := strata(t, bin, data, "", "approve", "shop", id); !strings.Contains(out, "approved plan "+id) {
		t.Fatalf("strata approve: %s", out)
	}
	applied := a.ok("apply_plan", map[string]any{"plan_id": id})
	if applied["plan_id"] != id || applied["branch"] != "main" || applied["database"] != "shop" {
		t.Fatalf("apply_plan: %v", applied)
	}
	if r := a.ok("read", map[string]any{"database": "shop", "resource": "catalog", "path": "/items/0/price"}); r["value"] != 12.0 {
		t.Fatalf("main after the plan was applied: %v", r)
	}

	// Cancellation (docs/design.md §3.7): a call whose context ends stops on the server, long before the query
	// deadline (5 s). Over stdio the client sends notifications/cancelled; over HTTP on the current revision,
	// ending the request is the cancellation. The call's audit record says how it ended, and when.
	cctx, ccancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = c.CallTool(cctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "query",
		Arguments: map[string]any{"database": "shop", "resource": "catalog", "query": "last(range(1e15))"}}})
	ccancel()
	if err == nil {
		t.Fatal("a query cancelled after 300 ms answered")
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var rec struct {
			Outcome    string  `json:"outcome"`
			DurationMS float64 `json:"duration_ms"`
		}
		out := strings.TrimSpace(strata(t, bin, data, "", "audit", "--tool", "query", "--json"))
		if out != "" && json.Unmarshal([]byte(out[strings.LastIndexByte(out, '\n')+1:]), &rec) == nil {
			if rec.Outcome != "UNAVAILABLE" || rec.DurationMS > 4000 {
				t.Fatalf("the cancelled query ended %s after %.0f ms, want UNAVAILABLE (cancelled) well before its deadline", rec.Outcome, rec.DurationMS)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled query has no audit record after 10 s:\n%s", out)
		}
	}
	if st := a.ok("status", nil); st["server"] != "strata" {
		t.Fatalf("status after a cancelled call: %v", st)
	}

	// Resources.
	listed, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil || len(listed.Resources) == 0 || listed.Resources[0].URI != "strata://databases" {
		t.Fatalf("resources/list: %v %+v", err, listed)
	}
	templates, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	if err != nil || !slices.ContainsFunc(templates.ResourceTemplates, func(rt mcp.ResourceTemplate) bool {
		return rt.URITemplate != nil && rt.URITemplate.Raw() == "strata://{database}/{resource}"
	}) {
		t.Fatalf("resources/templates/list: %v %+v", err, templates)
	}
	read, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "strata://shop/catalog"}})
	if err != nil || len(read.Contents) != 1 {
		t.Fatalf("resources/read: %v %+v", err, read)
	}
	if tc, ok := read.Contents[0].(mcp.TextResourceContents); !ok || !strings.Contains(tc.Text, `"price":12`) {
		t.Fatalf("resources/read strata://shop/catalog: %+v", read.Contents[0])
	}

	// A subscription, notified of a commit another process (the CLI) makes. On the current protocol revision a
	// subscription is a subscriptions/listen stream; on earlier ones, resources/subscribe.
	const uri = "strata://shop/catalog"
	if err := c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}); err != nil {
		t.Fatalf("resources/subscribe: %v", err)
	}
	if mcp.IsModernProtocol(c.ProtocolVersion()) {
		stop, err := c.ListenAsync(ctx, mcp.SubscriptionFilter{ResourceSubscriptions: []string{uri}}, func(err error) {
			t.Errorf("subscriptions/listen: %v", err)
		})
		if err != nil {
			t.Fatalf("subscriptions/listen: %v", err)
		}
		defer stop()
	}
	notified := func() int {
		mu.Lock()
		defer mu.Unlock()
		return updated[uri]
	}
	// The subscription is in place once the server has seen the resource (it polls every 200 ms); commit, and
	// commit again until the notification comes, so that a commit made before the listen stream opened cannot
	// make the test flaky.
	deadline := time.Now().Add(20 * time.Second)
	for n := 13; notified() == 0; n++ {
		if time.Now().After(deadline) {
			t.Fatalf("no notifications/resources/updated for %s within 20s of commits by the CLI", uri)
		}
		strata(t, bin, data, fmt.Sprintf(`{"items":[{"id":1,"price":%d}],"owner":"ops"}`, n), "import", "shop", "catalog", "-")
		for wait := time.Now().Add(2 * time.Second); notified() == 0 && time.Now().Before(wait); {
			time.Sleep(50 * time.Millisecond)
		}
	}

	// Prompts.
	prompts, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	if err != nil || !slices.ContainsFunc(prompts.Prompts, func(p mcp.Prompt) bool { return p.Name == "safe_change" }) {
		t.Fatalf("prompts/list: %v %+v", err, prompts)
	}
	p, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "safe_change",
		Arguments: map[string]string{"database": "shop", "change": "raise every price by 10%"}}})
	if err != nil || len(p.Messages) == 0 {
		t.Fatalf("prompts/get safe_change: %v %+v", err, p)
	}
	if tc, ok := p.Messages[0].Content.(mcp.TextContent); !ok || !strings.Contains(tc.Text, "create_branch") || !strings.Contains(tc.Text, "raise every price") {
		t.Fatalf("prompts/get safe_change: %+v", p.Messages[0].Content)
	}

	// Completions: of a resource template's argument and of a prompt's.
	comp, err := c.Complete(ctx, mcp.CompleteRequest{Params: mcp.CompleteParams{
		Ref:      mcp.ResourceReference{Type: "ref/resource", URI: "strata://{database}/{resource}"},
		Argument: mcp.CompleteArgument{Name: "database", Value: "sh"}}})
	if err != nil || !slices.Contains(comp.Completion.Values, "shop") {
		t.Fatalf("completion/complete of a template: %v %+v", err, comp)
	}
	comp, err = c.Complete(ctx, mcp.CompleteRequest{Params: mcp.CompleteParams{
		Ref:      mcp.PromptReference{Type: "ref/prompt", Name: "explore"},
		Argument: mcp.CompleteArgument{Name: "database", Value: "s"}}})
	if err != nil || !slices.Contains(comp.Completion.Values, "shop") {
		t.Fatalf("completion/complete of a prompt: %v %+v", err, comp)
	}
}

package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/strata-db/strata/gate"
)

// liveInputSchemas is tools/list as a client receives it over a real session, decoded as plain JSON, for every write
// mode (each registers a different set of tools).
func liveInputSchemas(t *testing.T) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, mode := range []string{gate.WritesOff, gate.WritesBranches, gate.WritesOn} {
		h := newHarness(t, Config{Writes: mode})
		for _, tool := range h.listTools() {
			b, err := json.Marshal(tool.InputSchema)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("%s: input schema is not a JSON object: %s", tool.Name, b)
			}
			out[tool.Name] = m
		}
	}
	return out
}

// TestInputSchemasOpenAIFunctionParameters holds every live input schema to what the OpenAI API takes as a
// function's `parameters` (non-strict mode; the README says "clients built on those APIs take every tool"): an
// object at the top, with no top-level oneOf/anyOf/allOf/enum/not, and — the rule the API enforces with
// `Invalid schema for function 'X': In context=(), object schema missing properties.` (HTTP 400,
// invalid_function_parameters, failing the whole request) — a `properties` member on the top-level object.
func TestInputSchemasOpenAIFunctionParameters(t *testing.T) {
	for name, s := range liveInputSchemas(t) {
		if s["type"] != "object" {
			t.Errorf("%s: top-level type %v, want object", name, s["type"])
		}
		for _, k := range []string{"oneOf", "anyOf", "allOf", "enum", "not"} {
			if _, has := s[k]; has {
				t.Errorf("%s: top-level %s", name, k)
			}
		}
		if _, has := s["properties"]; !has {
			t.Errorf("%s: inputSchema %v has no \"properties\": OpenAI refuses the whole request with "+
				"\"object schema missing properties\"", name, s)
		}
	}
}

// TestInputSchemasAnthropic: Anthropic's input_schema must be an object schema at the top.
func TestInputSchemasAnthropic(t *testing.T) {
	for name, s := range liveInputSchemas(t) {
		if s["type"] != "object" {
			t.Errorf("%s: top-level type %v, want object", name, s["type"])
		}
		if p, has := s["properties"]; has {
			if _, ok := p.(map[string]any); !ok {
				t.Errorf("%s: properties is %T", name, p)
			}
		}
	}
}

// geminiSchemaFields are the fields of Gemini's function-declaration Schema (the OpenAPI subset of
// FunctionDeclaration.parameters); any other name is refused with `Invalid JSON payload received. Unknown name "X"
// at 'tools[0].function_declarations[N].parameters…': Cannot find field.`
var geminiSchemaFields = []string{"type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
	"properties", "required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example",
	"anyOf", "propertyOrdering", "default", "items", "minimum", "maximum"}

func geminiWalk(where string, s map[string]any, faults *[]string) {
	for k := range s {
		if !slices.Contains(geminiSchemaFields, k) {
			*faults = append(*faults, fmt.Sprintf("%s: field %q is not in Gemini's Schema", where, k))
		}
	}
	if t, has := s["type"]; has {
		if _, one := t.(string); !one {
			*faults = append(*faults, fmt.Sprintf("%s: type %v is not one name", where, t))
		}
	}
	if s["type"] == "object" {
		if p, _ := s["properties"].(map[string]any); len(p) == 0 {
			*faults = append(*faults, where+": an OBJECT without properties (\"properties: should be non-empty for OBJECT type\")")
		}
	}
	if s["type"] == "array" && s["items"] == nil {
		*faults = append(*faults, where+": array without items")
	}
	props, _ := s["properties"].(map[string]any)
	for n, p := range props {
		if pm, ok := p.(map[string]any); ok {
			geminiWalk(where+"."+n, pm, faults)
		}
	}
	if it, ok := s["items"].(map[string]any); ok {
		geminiWalk(where+"[]", it, faults)
	}
}

// TestInputSchemasGeminiSubset holds every live input schema to Gemini's OpenAPI subset (the Schema of
// FunctionDeclaration.parameters) but for what the README says it refuses: the closed objects'
// additionalProperties, and so the one empty object, a tool without arguments (Gemini's "properties: should be
// non-empty for OBJECT type"; OpenAI needs the properties member). Anything else would be a new way to break it.
func TestInputSchemasGeminiSubset(t *testing.T) {
	var faults []string
	for name, s := range liveInputSchemas(t) {
		geminiWalk(name, s, &faults)
	}
	slices.Sort(faults)
	for _, f := range faults {
		if strings.HasSuffix(f, `field "additionalProperties" is not in Gemini's Schema`) || f == `status: an OBJECT without properties ("properties: should be non-empty for OBJECT type")` {
			continue
		}
		t.Errorf("against Gemini's function-declaration Schema: %s", f)
	}
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if text := strings.Join(strings.Fields(string(readme)), " "); !strings.Contains(text, "refuse the closed objects' `additionalProperties: false`") {
		t.Errorf("the README does not say what Gemini's OpenAPI parameters refuse")
	}
}

// TestConfirmURLOnlyClient: a client of protocol 2025-11-25 that declares elicitation for URL mode only
// cannot be asked a form question (the go-sdk refuses to send it). apply_plan should then answer
// CONFIRMATION_REQUIRED with the hint to run strata approve, as it does for a client that cannot ask its user at all
// (canElicit: "whether the client declared it can ask its user (elicitation, form mode)"), not fail the call with a
// go-sdk protocol error that names neither the plan nor strata approve.
func TestConfirmURLOnlyClient(t *testing.T) {
	h := newHarness(t, Config{Writes: gate.WritesBranches, Principal: "agent-1"})
	h.ok("create_database", `{"database":"shop"}`)
	base := h.seed("shop", "catalog", `{"price":10}`)
	id := h.planned("update", `{"database":"shop","resource":"catalog","path":"/price","value":1}`)

	srv, err := NewServer(h.dir, Config{Writes: gate.WritesBranches, Principal: "agent-1"})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcpsdk.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	asked := 0
	copts := &mcpsdk.ClientOptions{
		Capabilities: &mcpsdk.ClientCapabilities{Elicitation: &mcpsdk.ElicitationCapabilities{URL: &mcpsdk.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcpsdk.ElicitRequest) (*mcpsdk.ElicitResult, error) {
			asked++
			return &mcpsdk.ElicitResult{Action: "cancel"}, nil
		},
	}
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "url-only", Version: "0"}, copts).Connect(context.Background(), ct,
		&mcpsdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Fatalf("negotiated %s", v)
	}
	res, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "apply_plan", Arguments: json.RawMessage(`{"plan_id":"` + id + `"}`)})
	if err != nil {
		t.Fatalf("apply_plan from a URL-only elicitation client: protocol error %q; want a CONFIRMATION_REQUIRED result naming strata approve", err)
	}
	r := h.check("apply_plan", res)
	if !res.IsError || r.str("code") != codeConfirmationRequired || !strings.Contains(r.text, "strata approve") {
		t.Fatalf("apply_plan: %s", r.text)
	}
	if h.head("shop", "main") != base || asked != 0 {
		t.Fatalf("head moved or the client was asked (%d)", asked)
	}
}

// TestPromptsNameRegisteredTools: every tool a prompt tells the agent to call is a tool this server lists, in
// every write mode. A read-only server (the default) has no create_branch, promote or delete_branch, so a prompt
// that walks the agent through them sends it to call tools that do not exist.
func TestPromptsNameRegisteredTools(t *testing.T) {
	var every []string
	for _, ts := range allTools() {
		every = append(every, ts.name)
	}
	for _, mode := range []string{gate.WritesOff, gate.WritesBranches, gate.WritesOn} {
		h := newHarness(t, Config{Writes: mode})
		listed := toolNames(h.listTools())
		list, err := h.cs.ListPrompts(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range list.Prompts {
			args := map[string]string{}
			for _, a := range p.Arguments {
				if a.Required {
					args[a.Name] = "shop"
				}
			}
			if _, ok := args["from"]; ok {
				args["from"] = "1"
			}
			res, err := h.cs.GetPrompt(context.Background(), &mcpsdk.GetPromptParams{Name: p.Name, Arguments: args})
			if err != nil {
				t.Fatalf("%s: %v", p.Name, err)
			}
			text := res.Messages[0].Content.(*mcpsdk.TextContent).Text
			// The numbered steps: what the agent is told to do (a closing "suggest restore" is advice to report).
			var steps []string
			for _, line := range strings.Split(text, "\n") {
				if len(line) > 1 && line[0] >= '1' && line[0] <= '9' && line[1] == '.' {
					steps = append(steps, line)
				}
			}
			words := regexp.MustCompile(`[a-z_]+`).FindAllString(strings.Join(steps, " "), -1)
			for _, name := range every {
				if slices.Contains(words, name) && !slices.Contains(listed, name) {
					t.Errorf("writes=%s: prompt %s tells the agent to call %s, which this server does not list", mode, p.Name, name)
				}
			}
		}
	}
}

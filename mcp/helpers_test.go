package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/strata-db/strata/snapshots"
)

// harness is a server over a fresh data directory and an in-process client connected to it.
type harness struct {
	t       *testing.T
	dir     *snapshots.Dir
	path    string
	cs      *mcpsdk.ClientSession
	outputs map[string]*jsonschema.Resolved // output schemas by tool, as listed
	copts   *mcpsdk.ClientOptions           // the client's options (nil: the defaults)
}

// clock is a test clock: every call is one second later, so times are distinct and time travel is repeatable.
type clock struct {
	mu sync.Mutex // handlers read it concurrently (plans expire by it)
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	return newHarnessAt(t, t.TempDir(), cfg)
}

// newHarnessAt serves an existing data directory.
func newHarnessAt(t *testing.T, path string, cfg Config) *harness {
	t.Helper()
	return newHarnessWith(t, path, cfg, nil)
}

// newHarnessWith serves an existing data directory to a client with options copts.
func newHarnessWith(t *testing.T, path string, cfg Config, copts *mcpsdk.ClientOptions) *harness {
	t.Helper()
	ck := &clock{t: time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)}
	dir, err := snapshots.OpenDir(path, &snapshots.DirOptions{DB: snapshots.Options{Now: ck.now}})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, dir: dir, path: path, copts: copts}
	h.connect(cfg)
	return h
}

// connect starts a server with cfg on the harness's directory and connects a client to it.
func (h *harness) connect(cfg Config) {
	t := h.t
	t.Helper()
	srv, err := NewServer(h.dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, ct := mcpsdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "strata-test", Version: "0"}, h.copts)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
		h.dir.Close()
	})
	h.cs = cs
	h.outputs = map[string]*jsonschema.Resolved{}
	for _, tool := range h.listTools() {
		b, err := json.Marshal(tool.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: output schema: %v", tool.Name, err)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: output schema does not resolve: %v", tool.Name, err)
		}
		h.outputs[tool.Name] = r
	}
}

func (h *harness) listTools() []*mcpsdk.Tool {
	h.t.Helper()
	res, err := h.cs.ListTools(context.Background(), nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return res.Tools
}

// result is a checked tool result.
type result struct {
	res     *mcpsdk.CallToolResult
	text    string          // the text block
	summary string          // its first part, before the data
	data    json.RawMessage // the JSON inside the boundary: exactly the structured content's bytes
	m       map[string]any  // data decoded, numbers as json.Number
}

func (r *result) str(key string) string {
	s, _ := r.m[key].(string)
	return s
}

func (r *result) num(key string) uint64 {
	n, _ := r.m[key].(json.Number)
	var v uint64
	fmt.Sscan(n.String(), &v)
	return v
}

func (r *result) raw(key string) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.data, &m); err != nil {
		return ""
	}
	return string(m[key])
}

var boundaryRE = regexp.MustCompile(`(?s)^(.*)\n<(data-[a-z2-7]{13})>\n(.*)\n</(data-[a-z2-7]{13})>$`)

// call calls a tool with raw JSON arguments and checks the shape every result must have: one text block made of a
// summary and the data inside a random boundary, and structured content that is that same data and matches the
// tool's output schema.
func (h *harness) call(name, args string) *result {
	h.t.Helper()
	res, err := h.cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		h.t.Fatalf("%s %s: protocol error: %v", name, args, err)
	}
	return h.check(name, res)
}

func (h *harness) check(name string, res *mcpsdk.CallToolResult) *result {
	h.t.Helper()
	if len(res.Content) != 1 {
		h.t.Fatalf("%s: %d content blocks, want 1", name, len(res.Content))
	}
	tc, ok := res.Content[0].(*mcpsdk.TextContent)
	if !ok {
		h.t.Fatalf("%s: content is %T, want text", name, res.Content[0])
	}
	m := boundaryRE.FindStringSubmatch(tc.Text)
	if m == nil || m[2] != m[4] {
		h.t.Fatalf("%s: text is not summary + <data-X> data </data-X>:\n%s", name, tc.Text)
	}
	if strings.Count(tc.Text, m[2]) != 2 {
		h.t.Fatalf("%s: the boundary occurs more than twice in the text", name)
	}
	r := &result{res: res, text: tc.Text, summary: m[1], data: json.RawMessage(m[3])}
	if !res.IsError && strings.Contains(r.summary, "\n") {
		h.t.Fatalf("%s: summary is not one line: %q", name, r.summary)
	}
	dec := json.NewDecoder(bytes.NewReader(r.data))
	dec.UseNumber()
	if err := dec.Decode(&r.m); err != nil {
		h.t.Fatalf("%s: data is not a JSON object: %v\n%s", name, err, r.data)
	}
	var fromText any
	json.Unmarshal(r.data, &fromText)
	if res.IsError {
		// An error result carries no structured content (the output schema describes answers only); its fields are
		// in _meta, the same data as the text's.
		if res.StructuredContent != nil {
			h.t.Fatalf("%s: an error result carries structured content: %v", name, res.StructuredContent)
		}
		var fromMeta any
		mb, _ := json.Marshal(res.Meta[errorMetaKey])
		json.Unmarshal(mb, &fromMeta)
		if !reflect.DeepEqual(fromText, fromMeta) {
			h.t.Fatalf("%s: the error in _meta differs from the text's data:\n%s\n%s", name, mb, r.data)
		}
	} else {
		// The structured content is the same data, and matches the tool's output schema (clients validate it).
		var fromStructured any
		sb, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(sb, &fromStructured)
		if !reflect.DeepEqual(fromText, fromStructured) {
			h.t.Fatalf("%s: structured content differs from the text's data:\n%s\n%s", name, sb, r.data)
		}
		if rs := h.outputs[name]; rs != nil {
			if err := rs.Validate(fromStructured); err != nil {
				h.t.Fatalf("%s: structured content does not match the output schema: %v\n%s", name, err, r.data)
			}
		}
	}
	if res.IsError {
		if code := r.str("code"); code == "" || !strings.HasPrefix(tc.Text, code+": ") {
			h.t.Fatalf("%s: error text does not begin with its code: %s", name, tc.Text)
		}
	}
	return r
}

// ok calls a tool that must succeed.
func (h *harness) ok(name, args string) *result {
	h.t.Helper()
	r := h.call(name, args)
	if r.res.IsError {
		h.t.Fatalf("%s %s: unexpected error:\n%s", name, args, r.text)
	}
	return r
}

// fail calls a tool that must fail with code.
func (h *harness) fail(name, args, code string) *result {
	h.t.Helper()
	r := h.call(name, args)
	if !r.res.IsError {
		h.t.Fatalf("%s %s: succeeded, want %s:\n%s", name, args, code, r.text)
	}
	if got := r.str("code"); got != code {
		h.t.Fatalf("%s %s: code %s, want %s:\n%s", name, args, got, code, r.text)
	}
	return r
}

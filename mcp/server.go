package mcp

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/query"
	"github.com/strata-db/strata/snapshots"
)

// server holds what every handler needs.
type server struct {
	dir   *snapshots.Dir
	cfg   Config
	key   []byte // signs cursors; drawn at random for each server
	tools []*toolSpec
	// engine runs jq programs (query, bisect, transform).
	engine *query.Engine
	// auditFailed is set while the last audit record could not be appended: writes are refused (checkAudit).
	auditFailed atomic.Bool
}

// toolSpec declares one tool: its metadata, its arguments (from which both its input schema and the decoding of its
// arguments come), its output schema and its handler.
type toolSpec struct {
	name, title, desc string
	write             bool // registered only when the policy lets something change
	plans             bool // registered only when the policy can answer a call with a plan (ask)
	destructive       bool // can remove or overwrite data
	params            []param
	output            schema
	handle            func(ctx context.Context, c *call) (summary string, out any, err error)
}

func (t *toolSpec) param(name string) (param, bool) {
	for _, p := range t.params {
		if p.name == name {
			return p, true
		}
	}
	return param{}, false
}

func (t *toolSpec) paramNames() []string {
	names := make([]string, len(t.params))
	for i, p := range t.params {
		names[i] = p.name
	}
	return names
}

// mcpTool is the tool as tools/list shows it.
func (t *toolSpec) mcpTool() *mcpsdk.Tool {
	no := false
	destructive := t.destructive
	return &mcpsdk.Tool{
		Name:         t.name,
		Title:        t.title,
		Description:  t.desc,
		InputSchema:  mustJSON(inputSchema(t.params)),
		OutputSchema: mustJSON(t.output),
		Annotations: &mcpsdk.ToolAnnotations{
			Title:           t.title,
			ReadOnlyHint:    !t.write,
			IdempotentHint:  !t.write,
			DestructiveHint: &destructive,
			OpenWorldHint:   &no,
		},
	}
}

// call is one tool call in progress.
type call struct {
	s   *server
	t   *toolSpec
	a   *args
	raw json.RawMessage         // the arguments as received
	req *mcpsdk.CallToolRequest // the request (its session, and the answers of a confirmation round trip)
	// applying is set when the call carries out a confirmed plan (apply_plan).
	applying *applying
}

// NewServer returns an MCP server over a data directory. It refuses an unknown write mode, so that a typo stops
// startup instead of leaving the server writable. With writes off (the default) no write tool is registered at all.
func NewServer(dir *snapshots.Dir, cfg Config) (*mcpsdk.Server, error) {
	if dir == nil {
		return nil, errors.New("mcp.NewServer: no data directory")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &server{dir: dir, cfg: cfg.withDefaults(), key: make([]byte, 32)}
	if _, err := rand.Read(s.key); err != nil {
		return nil, err
	}
	engine, own, err := newEngine(cfg, s.budget())
	if err != nil {
		return nil, err
	}
	s.engine = engine
	w := newWatcher(s)
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "strata", Title: "Strata", Version: s.cfg.Version},
		&mcpsdk.ServerOptions{
			Instructions:       instructions,
			Logger:             s.cfg.Logger,
			SubscribeHandler:   w.subscribe,
			UnsubscribeHandler: w.unsubscribe,
			CompletionHandler:  s.complete,
		})
	w.srv = srv
	srv.AddReceivingMiddleware(s.auditMiddleware)
	plans := s.cfg.Policy.Write == gate.Ask || s.cfg.Policy.Protected == gate.Ask
	for _, t := range allTools() {
		if (t.write && !s.cfg.Policy.Writes()) || (t.plans && !plans) {
			continue
		}
		s.tools = append(s.tools, t)
		srv.AddTool(t.mcpTool(), s.handler(t))
	}
	s.addResources(srv)
	s.addPrompts(srv)
	if own {
		runtime.AddCleanup(srv, func(e *query.Engine) { e.Close() }, engine)
	}
	return srv, nil
}

// allTools is every tool this package defines, reads and writes.
func allTools() []*toolSpec {
	ts := append(append(readTools(), queryTools()...), writeTools()...)
	ts = append(ts, transformTool())
	ts = append(ts, planTools()...)
	slices.SortFunc(ts, func(a, b *toolSpec) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	return ts
}

// toolNames lists the tools this server registered.
func (s *server) toolNames() []string {
	names := make([]string, len(s.tools))
	for i, t := range s.tools {
		names[i] = t.name
	}
	return names
}

// handler adapts a tool to the go-sdk: it decodes the raw arguments, runs the tool, and shapes its answer or error.
// A panic becomes a JSON-RPC internal error without a stack trace (the stack goes to the server's log), and the
// server goes on serving: the go-sdk has no recovery of its own. A call that carries a progress token gets progress
// notifications while its tool runs, and none after its result (startProgress).
func (s *server) handler(t *toolSpec) mcpsdk.ToolHandler {
	return func(ctx context.Context, req *mcpsdk.CallToolRequest) (res *mcpsdk.CallToolResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				s.cfg.Logger.Error("panic in a tool handler", "tool", t.name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				msg := fmt.Sprintf("internal error in tool %s; the server is still serving", t.name)
				if t.write {
					msg += " (use history to see whether the write happened)"
				}
				res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
			}
		}()
		// ctx is the request's context: a client's notifications/cancelled cancels it (docs/design.md §3.7).
		if h := s.cfg.afterHandler; h != nil {
			defer h(t.name)
		}
		defer s.startProgress(ctx, req, t.name)()
		if h := s.cfg.beforeHandler; h != nil {
			h(t.name)
		}
		var raw json.RawMessage
		if req != nil && req.Params != nil {
			raw = req.Params.Arguments
		}
		a, err := decodeArgs(t, raw)
		if err != nil {
			return s.errorResult(err), nil
		}
		if t.write {
			if err := s.checkAudit(); err != nil {
				return s.errorResult(err), nil
			}
		}
		c := &call{s: s, t: t, a: a, raw: raw, req: req}
		if err := c.checkScope(ctx); err != nil {
			return s.errorResult(err), nil
		}
		if err := c.checkRevisionArgs(ctx); err != nil {
			return s.errorResult(err), nil
		}
		summary, out, err := t.handle(ctx, c)
		if err != nil {
			return s.errorResult(c.scopeWriteErr(err)), nil
		}
		if r, ok := out.(*mcpsdk.CallToolResult); ok {
			return r, nil // an input request (apply_plan asking for a confirmation)
		}
		return s.okResult(summary, out)
	}
}

// budget is how many characters of JSON a handler may put into one answer: the cap, less room for the fields around
// the data.
func (s *server) budget() int {
	return s.cfg.MaxOutputChars*9/10 - 600
}

// db opens the database the call names.
func (c *call) db(ctx context.Context) (*snapshots.DB, error) {
	return c.s.dir.Open(ctx, c.a.str("database"))
}

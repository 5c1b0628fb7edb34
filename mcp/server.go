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

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/query"
	"github.com/strata-db/strata/snapshots"
)

// server holds what every handler needs. Every read and write goes through actor: the gate, which holds the
// principal's policy, scopes, plans and audit; this package only decodes arguments and shapes answers.
type server struct {
	actor *gate.Actor
	cfg   Config
	key   []byte // signs cursors; drawn at random for each server
	tools []*toolSpec
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
}

// NewServer returns an MCP server over a data directory, for the principal cfg describes, through a gate of its own
// (with cfg's engine and audit log). It refuses an unknown write mode, so that a typo stops startup instead of
// leaving the server writable. With writes off (the default) no write tool is registered at all.
func NewServer(dir *snapshots.Dir, cfg Config) (*mcpsdk.Server, error) {
	if dir == nil {
		return nil, errors.New("mcp.NewServer: no data directory")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	engine := cfg.Engine
	if engine == nil {
		var err error
		engine, err = query.New(query.Options{MaxOutputBytes: budget(cfg.withDefaults()), MaxConcurrent: cfg.withDefaults().MaxConcurrentQueries})
		if err != nil {
			return nil, err
		}
	}
	g, err := gate.New(dir, &gate.Options{Engine: engine, Audit: cfg.Audit, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	actor, err := g.As(cfg.principal())
	if err != nil {
		return nil, err
	}
	srv, err := NewServerFor(actor, cfg)
	if err == nil && cfg.Engine == nil {
		// Its workers also end with the process.
		runtime.AddCleanup(srv, func(e *query.Engine) { e.Close() }, engine)
	}
	return srv, err
}

// NewServerFor returns an MCP server for one principal of a gate. cfg gives what is the transport's (the output
// cap, the version, the logger, the transport's name for the audit log); its policy, scope and principal fields are
// ignored: the actor's are in force.
func NewServerFor(actor *gate.Actor, cfg Config) (*mcpsdk.Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := actor.Principal()
	cfg.Writes, cfg.Policy, cfg.Scope, cfg.Protected, cfg.Principal, cfg.PlanTTL = p.Mode, p.Policy, p.Scope, p.Protected, p.Name, p.PlanTTL
	s := &server{actor: actor, cfg: cfg.withDefaults(), key: make([]byte, 32)}
	if _, err := rand.Read(s.key); err != nil {
		return nil, err
	}
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
	for _, t := range allTools() {
		if (t.write && !p.Writes()) || (t.plans && !p.Plans()) {
			continue
		}
		s.tools = append(s.tools, t)
		srv.AddTool(t.mcpTool(), s.handler(t))
	}
	if s.cfg.Observe != nil || s.cfg.Tracer != nil {
		srv.AddReceivingMiddleware(s.telemetryMiddleware) // around the audit's: added last, runs first
	}
	s.addResources(srv)
	s.addPrompts(srv)
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
		c := &call{s: s, t: t, a: a, raw: raw, req: req}
		summary, out, err := t.handle(ctx, c)
		if err != nil {
			return s.errorResult(err), nil
		}
		if r, ok := out.(*mcpsdk.CallToolResult); ok {
			return r, nil // an input request (apply_plan asking for a confirmation)
		}
		return s.okResult(summary, out)
	}
}

// budget is how many characters of JSON a handler may put into one answer: the cap, less room for the fields around
// the data.
func (s *server) budget() int { return budget(s.cfg) }

func budget(cfg Config) int { return cfg.MaxOutputChars*9/10 - 600 }

// view opens the database the call names, as the principal may see it.
func (c *call) view(ctx context.Context) (*gate.View, error) {
	return c.s.actor.Open(ctx, c.a.str("database"))
}

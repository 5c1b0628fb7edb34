package mcp

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/strata-db/strata/audit"
	"github.com/strata-db/strata/gate"
)

// Every call that reaches the data — tools, resource reads, subscriptions, prompts — is one call of the gate, and so
// one audit record (docs/design.md §4, docs/security.md T12): one receiving middleware, around everything else,
// begins it with what the request says (the client, the tool, the arguments' digest) and ends it with how the
// request ended, whatever happened inside (allowed, planned, denied, failed, timed out, panicked). The gate fills in
// the decision, the revision a write created and the plan it made. Writes fail closed: the gate refuses them while
// the log cannot be appended to.

// audited are the methods the log records.
var audited = map[string]bool{
	"tools/call": true, "resources/read": true, "resources/subscribe": true, "resources/unsubscribe": true, "prompts/get": true,
}

// listenKey marks the context of a subscriptions/listen request: the stream lasts as long as the client keeps it,
// so each resource it subscribes is recorded as it is subscribed (watcher.subscribe), not when the stream ends.
// (Found in review: these subscriptions were not recorded at all; resources/subscribe's are.)
type listenKey struct{}

func (s *server) auditMiddleware(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
	return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
		if method == "subscriptions/listen" {
			return next(context.WithValue(ctx, listenKey{}, true), method, req)
		}
		if !audited[method] {
			return next(ctx, method, req)
		}
		ctx, call := s.actor.Call(ctx, s.callInfo(method, req))
		res, err := next(ctx, method, req)
		noteRecord(ctx, call.End(outcomeOf(res, err)))
		return res, err
	}
}

// callInfo is what the audit record of a request says of it: the transport, the client, the tool (or method, or
// prompt), the digest of the arguments, the database and the plan they name.
func (s *server) callInfo(method string, req mcpsdk.Request) gate.CallInfo {
	info := gate.CallInfo{Transport: s.cfg.Transport, Tool: method}
	if info.Transport == "" {
		info.Transport = audit.TransportStdio
	}
	if ss, ok := req.GetSession().(*mcpsdk.ServerSession); ok && ss != nil {
		if ip := ss.InitializeParams(); ip != nil && ip.ClientInfo != nil {
			info.Client = ip.ClientInfo.Name
			if ip.ClientInfo.Version != "" {
				info.Client += "/" + ip.ClientInfo.Version
			}
		}
	}
	switch p := req.GetParams().(type) {
	case *mcpsdk.CallToolParamsRaw:
		info.Tool, info.Args = p.Name, p.Arguments
	case *mcpsdk.ReadResourceParams:
		info.Args, _ = json.Marshal(p.URI)
	case *mcpsdk.SubscribeParams:
		info.Args, _ = json.Marshal(p.URI)
	case *mcpsdk.UnsubscribeParams:
		info.Args, _ = json.Marshal(p.URI)
	case *mcpsdk.GetPromptParams:
		info.Tool = "prompts/get " + p.Name
		info.Args, _ = json.Marshal(p.Arguments)
	}
	if info.Args == nil {
		info.Args = []byte{}
	}
	if db := gjson.GetBytes(info.Args, "database"); db.Type == gjson.String {
		info.Database = db.String()
	}
	if id := gjson.GetBytes(info.Args, "plan_id"); id.Type == gjson.String && info.Tool == "apply_plan" {
		info.PlanID = id.String() // refused applies name their plan too
	}
	return info
}

// outcomeOf is how a request ended, for its audit record: ok, the error code of an error result, INPUT_REQUIRED
// (a confirmation asked of the client's user; the call comes again with the answer), or a protocol error.
func outcomeOf(res mcpsdk.Result, err error) string {
	if err != nil {
		var je *jsonrpc.Error
		if errors.As(err, &je) && je.Code == jsonrpc.CodeInternalError {
			return "INTERNAL"
		}
		return "PROTOCOL_ERROR"
	}
	tr, ok := res.(*mcpsdk.CallToolResult)
	switch {
	case !ok || tr == nil:
		return audit.OutcomeOK
	case tr.InputRequests != nil:
		return "INPUT_REQUIRED"
	case tr.IsError:
		if te := resultError(tr); te != nil && te.Code != "" {
			return te.Code
		}
		return "ERROR"
	}
	return audit.OutcomeOK
}

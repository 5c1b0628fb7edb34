package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/strata-db/strata/audit"
)

// Every call that reaches the data — tools, resource reads, subscriptions, prompts — is appended to the audit log
// (docs/design.md §4, docs/security.md T12) by one receiving middleware, around everything else: one record per request,
// whatever happened inside (allowed, planned, denied, failed, timed out, panicked). The record holds who, which
// client, which tool, a digest of the arguments, the decision, the outcome, the revision a write created or the
// plan it made, and how long it took; never the arguments themselves.
//
// Writes fail closed: a write tool does not run while the log cannot be appended to (handler calls checkAudit).

// audited are the methods the log records.
var audited = map[string]bool{
	"tools/call": true, "resources/read": true, "resources/subscribe": true, "resources/unsubscribe": true, "prompts/get": true,
}

func (s *server) auditMiddleware(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
	return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
		if s.cfg.Audit == nil || !audited[method] {
			return next(ctx, method, req)
		}
		start := time.Now()
		res, err := next(ctx, method, req)
		rec := s.auditRecord(method, req, res, err)
		rec.DurationMS = float64(time.Since(start).Microseconds()) / 1000
		if _, aerr := s.cfg.Audit.Append(rec); aerr != nil {
			s.auditFailed.Store(true)
			s.cfg.Logger.Error("audit log: a record could not be appended; write tools are refused until it can", "method", method, "tool", rec.Tool, "err", aerr)
		} else {
			s.auditFailed.Store(false)
		}
		return res, err
	}
}

// auditRecord describes one request and how it ended.
func (s *server) auditRecord(method string, req mcpsdk.Request, res mcpsdk.Result, err error) audit.Record {
	rec := audit.Record{Principal: s.cfg.Principal, Transport: s.cfg.Transport, Tool: method, Decision: audit.DecisionAllow, Outcome: audit.OutcomeOK}
	if rec.Transport == "" {
		rec.Transport = audit.TransportStdio
	}
	if ss, ok := req.GetSession().(*mcpsdk.ServerSession); ok && ss != nil {
		if ip := ss.InitializeParams(); ip != nil && ip.ClientInfo != nil {
			rec.Client = ip.ClientInfo.Name
			if ip.ClientInfo.Version != "" {
				rec.Client += "/" + ip.ClientInfo.Version
			}
		}
	}
	var raw []byte
	write := false
	switch p := req.GetParams().(type) {
	case *mcpsdk.CallToolParamsRaw:
		rec.Tool, raw = p.Name, p.Arguments
		if t := s.tool(p.Name); t != nil {
			write = t.write
		}
	case *mcpsdk.ReadResourceParams:
		raw, _ = json.Marshal(p.URI)
	case *mcpsdk.SubscribeParams:
		raw, _ = json.Marshal(p.URI)
	case *mcpsdk.UnsubscribeParams:
		raw, _ = json.Marshal(p.URI)
	case *mcpsdk.GetPromptParams:
		rec.Tool = "prompts/get " + p.Name
		raw, _ = json.Marshal(p.Arguments)
	}
	rec.ArgsDigest = audit.Digest(raw)
	if db := gjson.GetBytes(raw, "database"); db.Type == gjson.String {
		rec.Database = db.String()
	}
	if id := gjson.GetBytes(raw, "plan_id"); id.Type == gjson.String && rec.Tool == "apply_plan" {
		rec.PlanID = id.String() // refused applies name their plan too
	}
	if err != nil {
		rec.Outcome = "PROTOCOL_ERROR"
		var je *jsonrpc.Error
		if errors.As(err, &je) && je.Code == jsonrpc.CodeInternalError {
			rec.Outcome = "INTERNAL"
		}
		return rec
	}
	tr, ok := res.(*mcpsdk.CallToolResult)
	if !ok || tr == nil {
		return rec
	}
	if tr.InputRequests != nil {
		rec.Outcome = "INPUT_REQUIRED" // a confirmation asked of the client's user; the call comes again with the answer
		return rec
	}
	data, _ := tr.StructuredContent.(json.RawMessage)
	if tr.IsError {
		rec.Outcome = gjson.GetBytes(data, "code").String()
		if rec.Outcome == "" {
			rec.Outcome = "ERROR"
		}
		if rec.Outcome == codeDenied {
			rec.Decision = audit.DecisionDeny
		}
		return rec
	}
	if id := gjson.GetBytes(data, "plan_id"); id.Type == gjson.String {
		rec.PlanID = id.String()
		if gjson.GetBytes(data, "confirmation_required").Bool() {
			rec.Decision = audit.DecisionAsk
			return rec
		}
	}
	if write {
		rec.Revision = gjson.GetBytes(data, "revision").Uint()
	}
	return rec
}

// checkAudit refuses to run a write while the audit log cannot take its record.
func (s *server) checkAudit() error {
	if s.cfg.Audit == nil {
		return nil
	}
	// A record that could not be appended (the disk full, say) keeps writes refused until one is appended again.
	err := s.cfg.Audit.Check()
	if err == nil && s.auditFailed.Load() {
		err = errors.New("the last audit record could not be appended")
	}
	if err != nil {
		s.cfg.Logger.Error("audit log unusable: refusing writes", "err", err)
		return newError(codeUnavailable, "the audit log cannot be written, so no write runs until it can; nothing was written").
			withHint("tell the operator: the server's log says why")
	}
	return nil
}

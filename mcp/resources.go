package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/strata-db/strata/snapshots"
)

// Resources (docs/design.md §3.5). Every resource is read through the read tool that answers the same question (list_databases,
// list_resources, read, history, list_branches, list_snapshots), so a resource shows exactly what the tool would,
// with the same caps, and its text is the tool's text: a summary line, then the data inside a random untrusted-data
// boundary. Names in URIs are percent-encoded path segments (a resource named "a/b" is strata://db/a%2Fb).
// The names log, resources, branches and snapshots after the database are the listings, not resources of those
// names; such resources can still be read through …/{resource}/rev/{revision} or the read tool.

const (
	uriScheme    = "strata://"
	databasesURI = uriScheme + "databases"
	// resourceMIME is the media type of every resource's text: a summary line and JSON inside a boundary.
	resourceMIME = "text/plain"
	// pollInterval is how often subscribed resources are checked for changes (commits by this server and by
	// other processes alike).
	pollInterval = 200 * time.Millisecond
)

// resourceTemplates are the URI templates of §3.5, with what each resource shows.
var resourceTemplates = []*mcpsdk.ResourceTemplate{
	{Name: "resources", Title: "Resources of a database", URITemplate: uriScheme + "{database}/resources", MIMEType: resourceMIME,
		Description: "The resources of a database at the head of main, with their sizes (as the list_resources tool)."},
	{Name: "log", Title: "Revision log", URITemplate: uriScheme + "{database}/log", MIMEType: resourceMIME,
		Description: "The newest revisions of a database's main branch (as the history tool). Subscribers are notified on every commit."},
	{Name: "branches", Title: "Branches", URITemplate: uriScheme + "{database}/branches", MIMEType: resourceMIME,
		Description: "The branches of a database, with their heads and bases (as the list_branches tool)."},
	{Name: "snapshots", Title: "Snapshots", URITemplate: uriScheme + "{database}/snapshots", MIMEType: resourceMIME,
		Description: "The snapshots of a database, with their revisions and notes (as the list_snapshots tool)."},
	{Name: "resource", Title: "A resource at the head of main", URITemplate: uriScheme + "{database}/{resource}", MIMEType: resourceMIME,
		Description: "A resource's value at the head of main (as the read tool; big values are elided with markers). Subscribers are notified when a commit changes it."},
	{Name: "resource-revision", Title: "A resource at a revision", URITemplate: uriScheme + "{database}/{resource}/rev/{revision}", MIMEType: resourceMIME,
		Description: "A resource's value at a revision (as the read tool). Revisions never change."},
}

// resourceRef is a parsed resource URI.
type resourceRef struct {
	kind     string // databases, resources, log, branches, snapshots, resource, revision
	database string
	resource string
	revision uint64
}

var errBadURI = errors.New("not a strata resource URI")

// parseResourceURI parses one of the URIs of §3.5.
func parseResourceURI(uri string) (resourceRef, error) {
	if uri == databasesURI {
		return resourceRef{kind: "databases"}, nil
	}
	rest, ok := strings.CutPrefix(uri, uriScheme)
	if !ok || strings.ContainsAny(rest, "?#") {
		return resourceRef{}, errBadURI
	}
	segs := strings.Split(rest, "/")
	for i, s := range segs {
		u, err := url.PathUnescape(s)
		if err != nil || u == "" {
			return resourceRef{}, errBadURI
		}
		segs[i] = u
	}
	switch {
	case len(segs) == 2:
		switch segs[1] {
		case "resources", "log", "branches", "snapshots":
			return resourceRef{kind: segs[1], database: segs[0]}, nil
		}
		return resourceRef{kind: "resource", database: segs[0], resource: segs[1]}, nil
	case len(segs) == 4 && segs[2] == "rev":
		n, err := strconv.ParseUint(segs[3], 10, 64)
		if err != nil || n == 0 || segs[3] != strconv.FormatUint(n, 10) {
			return resourceRef{}, errBadURI
		}
		return resourceRef{kind: "revision", database: segs[0], resource: segs[1], revision: n}, nil
	}
	return resourceRef{}, errBadURI
}

// toolCall is the read tool call that answers a resource, and its arguments.
func (r resourceRef) toolCall() (string, map[string]any) {
	switch r.kind {
	case "databases":
		return "list_databases", map[string]any{}
	case "resources":
		return "list_resources", map[string]any{"database": r.database}
	case "log":
		return "history", map[string]any{"database": r.database}
	case "branches":
		return "list_branches", map[string]any{"database": r.database}
	case "snapshots":
		return "list_snapshots", map[string]any{"database": r.database}
	case "revision":
		return "read", map[string]any{"database": r.database, "resource": r.resource, "revision": r.revision}
	}
	return "read", map[string]any{"database": r.database, "resource": r.resource}
}

// tool returns the registered tool of that name.
func (s *server) tool(name string) *toolSpec {
	for _, t := range s.tools {
		if t.name == name {
			return t
		}
	}
	return nil
}

// readResource answers resources/read through the matching read tool.
func (s *server) readResource(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
	uri := req.Params.URI
	ref, err := parseResourceURI(uri)
	if err != nil {
		return nil, mcpsdk.ResourceNotFoundError(uri)
	}
	name, a := ref.toolCall()
	t := s.tool(name)
	if t == nil {
		return nil, mcpsdk.ResourceNotFoundError(uri)
	}
	raw, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	res, err := s.handler(t)(ctx, &mcpsdk.CallToolRequest{Params: &mcpsdk.CallToolParamsRaw{Name: name, Arguments: raw}})
	if err != nil {
		return nil, err
	}
	text := res.Content[0].(*mcpsdk.TextContent).Text
	if res.IsError {
		if te := resultError(res); te != nil && te.Code == codeNotFound {
			return nil, mcpsdk.ResourceNotFoundError(uri)
		}
		headline, _, _ := strings.Cut(text, "\n")
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: headline}
	}
	return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: resourceMIME, Text: text}}}, nil
}

// addResources registers the resources and templates on srv.
func (s *server) addResources(srv *mcpsdk.Server) {
	srv.AddResource(&mcpsdk.Resource{URI: databasesURI, Name: "databases", Title: "Databases", MIMEType: resourceMIME,
		Description: "The databases of this server, with sizes, revision counts and heads (as the list_databases tool)."},
		s.readResource)
	for _, t := range resourceTemplates {
		srv.AddResourceTemplate(t, s.readResource)
	}
}

// watcher polls the resources clients subscribed to and notifies them when one changes. Polling, rather than a hook
// in the library, also notices commits made by other processes (the CLI, another server).
type watcher struct {
	s        *server
	srv      *mcpsdk.Server
	interval time.Duration

	mu      sync.Mutex
	subs    map[string]map[*mcpsdk.ServerSession]bool // URI → subscribed sessions
	last    map[string]string                         // URI → fingerprint last seen
	running bool
}

func newWatcher(s *server) *watcher {
	return &watcher{s: s, interval: pollInterval, subs: map[string]map[*mcpsdk.ServerSession]bool{}, last: map[string]string{}}
}

// subscribe is the go-sdk's SubscribeHandler: it checks the URI and records the subscription. One made by a
// subscriptions/listen stream is audited here, a record per resource (resources/subscribe is, by the middleware).
func (w *watcher) subscribe(ctx context.Context, req *mcpsdk.SubscribeRequest) error {
	if ctx.Value(listenKey{}) == nil {
		return w.doSubscribe(ctx, req)
	}
	ctx, call := w.s.actor.Call(ctx, w.s.callInfo("subscriptions/listen", req))
	err := w.doSubscribe(ctx, req)
	noteRecord(ctx, call.End(outcomeOf(nil, err)))
	return err
}

// Bounds on subscriptions, each polled every pollInterval (found in review: one session held 3,000).
const (
	maxSubscriptionsPerSession = 256
	maxSubscribedURIs          = 4096 // per principal, over all its sessions
	maxURIBytes                = 1024
)

func (w *watcher) doSubscribe(ctx context.Context, req *mcpsdk.SubscribeRequest) error {
	uri := req.Params.URI
	if len(uri) > maxURIBytes {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("the URI is %d bytes, over the limit of %d", len(uri), maxURIBytes)}
	}
	ref, err := parseResourceURI(uri)
	if err != nil {
		return mcpsdk.ResourceNotFoundError(uri)
	}
	if ref.database != "" {
		if _, err := w.s.actor.Open(ctx, ref.database); err != nil {
			return mcpsdk.ResourceNotFoundError(uri) // missing, or hidden, which looks the same
		}
	}
	fp, err := w.s.fingerprint(ctx, ref)
	if err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("cannot watch %s now; try again", clip(uri))}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.subs[uri][req.Session] {
		return nil // already
	}
	mine := 0
	for _, m := range w.subs {
		if m[req.Session] {
			mine++
		}
	}
	switch {
	case mine >= maxSubscriptionsPerSession:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("this session holds %d subscriptions, the most it may; unsubscribe from some first", mine)}
	case w.subs[uri] == nil && len(w.subs) >= maxSubscribedURIs:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("your sessions hold subscriptions to %d resources, the most they may; unsubscribe from some first", len(w.subs))}
	}
	if w.subs[uri] == nil {
		w.subs[uri] = map[*mcpsdk.ServerSession]bool{}
		w.last[uri] = fp
	}
	w.subs[uri][req.Session] = true
	if !w.running {
		w.running = true
		go w.run()
	}
	return nil
}

// unsubscribe is the go-sdk's UnsubscribeHandler.
func (w *watcher) unsubscribe(_ context.Context, req *mcpsdk.UnsubscribeRequest) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drop(req.Params.URI, req.Session)
	return nil
}

// drop removes one subscription; w.mu is held.
func (w *watcher) drop(uri string, ss *mcpsdk.ServerSession) {
	if m := w.subs[uri]; m != nil {
		delete(m, ss)
		if len(m) == 0 {
			delete(w.subs, uri)
			delete(w.last, uri)
		}
	}
}

// run polls while anyone is subscribed.
func (w *watcher) run() {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for range t.C {
		if !w.poll() {
			return
		}
	}
}

// poll checks every subscribed URI once and notifies those that changed. It reports whether to go on polling.
func (w *watcher) poll() bool {
	live := map[*mcpsdk.ServerSession]bool{}
	for ss := range w.srv.Sessions() {
		live[ss] = true
	}
	w.mu.Lock()
	// Sessions that ended without unsubscribing are forgotten.
	for uri, m := range w.subs {
		for ss := range m {
			if !live[ss] {
				w.drop(uri, ss)
			}
		}
	}
	if len(w.subs) == 0 {
		w.running = false
		w.mu.Unlock()
		return false
	}
	uris := make([]string, 0, len(w.subs))
	for uri := range w.subs {
		uris = append(uris, uri)
	}
	w.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 10*w.interval)
	defer cancel()
	for _, uri := range uris {
		ref, err := parseResourceURI(uri)
		if err != nil {
			continue
		}
		fp, err := w.s.fingerprint(ctx, ref)
		if err != nil {
			continue // try again at the next tick
		}
		w.mu.Lock()
		prev, ok := w.last[uri]
		changed := ok && prev != fp
		if ok {
			w.last[uri] = fp
		}
		w.mu.Unlock()
		if changed {
			w.srv.ResourceUpdated(ctx, &mcpsdk.ResourceUpdatedNotificationParams{URI: uri})
		}
	}
	return true
}

// fingerprint is a string that changes when what a resource URI shows changes, as the principal sees it: a commit
// that changed only hidden resources is not news.
func (s *server) fingerprint(ctx context.Context, ref resourceRef) (string, error) {
	a := s.actor
	if ref.kind == "databases" {
		names, err := a.Databases(ctx)
		if err != nil {
			return "", err
		}
		var infos []snapshots.DatabaseInfo
		for _, n := range names {
			info, err := a.DatabaseInfo(ctx, n)
			if err != nil {
				return "", err
			}
			if !a.Principal().Scope.Unlimited() {
				info.FileBytes, info.Revisions = 0, 0 // they move with hidden commits too
			}
			infos = append(infos, info)
		}
		b, err := json.Marshal(infos)
		return string(b), err
	}
	if ref.kind == "revision" {
		return "immutable", nil
	}
	v, err := a.Open(ctx, ref.database)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return "", err
		}
		return "missing database", nil
	}
	var x any
	switch ref.kind {
	case "log":
		if !a.Principal().Scope.Unlimited() {
			// Only visible revisions count: a commit that changed hidden resources only is not news.
			p, err := v.History(ctx, snapshots.HistoryQuery{Limit: 1})
			if err != nil {
				return "", err
			}
			x = p.Revisions
			break
		}
		info, err := a.DatabaseInfo(ctx, ref.database)
		if err != nil {
			return "", err
		}
		x = info.Revisions
	case "branches":
		x, err = v.Branches(ctx)
	case "snapshots":
		x, err = v.Snapshots(ctx)
	case "resources":
		var st snapshots.State
		if st, err = v.Resolve(ctx, snapshots.Ref{}); err == nil {
			x, err = v.Resources(ctx, st)
		}
	case "resource":
		st, rerr := v.Resolve(ctx, snapshots.Ref{})
		if rerr != nil {
			return "", rerr
		}
		val, gerr := v.Get(ctx, st, ref.resource)
		var nf *snapshots.NotFoundError
		switch {
		case errors.As(gerr, &nf):
			x = "missing" // or hidden, whose changes are not news
		case gerr != nil:
			return "", gerr
		default:
			x = fmt.Sprintf("%x", val.Hash())
		}
	}
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(x)
	return string(b), err
}

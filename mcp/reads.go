package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
	"github.com/strata-db/strata/store"
)

// The read tools of docs/design.md §3.2. None of them has a code path that can commit.
// query and bisect are in query.go; list_plans is in plans.go.

// Common output properties.
var (
	oDatabase   = prop{"database", strS("the database")}
	oRevision   = prop{"revision", intS("the revision that answered")}
	oBranch     = prop{"branch", strS("the branch the state was read through, when one was")}
	oMore       = prop{"more", boolS("true when there is more: pass next_cursor as cursor to continue")}
	oNextCursor = prop{"next_cursor", strS("present when there is more: pass it as cursor, with the same other arguments, to continue")}
	oResource   = prop{"resource", strS("the resource")}
	oPath       = prop{"path", strS("the JSON Pointer inside the resource")}
	oTruncated  = prop{"truncated", boolS("true when something was left out (elided with {\"$elided\": …} markers, or cut at the output cap)")}
)

// oResourcesMore is how many resources a list of changed resources left out to fit the answer.
var oResourcesMore = prop{"resources_more", intS("present when resources was cut to fit the answer: how many more resources it changed (show_revision lists what changed)")}

// revisionSchema describes a revision record.
func revisionSchema(desc string, extra ...prop) schema {
	props := append([]prop{
		{"revision", intS("the revision number")},
		{"parent", intS("the revision it was made on (absent for the first)")},
		{"merged", intS("for a promote that merged: the revision it brought in (its second parent)")},
		{"branch", strS("the branch it was committed on")},
		{"time", strS("when it was committed (RFC 3339)")},
		{"author", strS("who made it (the principal)")},
		{"tool", strS("the tool or command that made it")},
		{"message", strS("the message recorded with it")},
		{"resources", strArrS("the resources it changed", "a resource name")},
		oResourcesMore,
	}, extra...)
	return closedObject(desc, []string{"revision", "branch", "time", "author", "tool", "message", "resources"}, props...)
}

// revisionJSON is a revision as the tools show it (docs/design.md §3.4).
type revisionJSON struct {
	Revision  uint64    `json:"revision"`
	Parent    uint64    `json:"parent,omitempty"`
	Merged    uint64    `json:"merged,omitempty"`
	Branch    string    `json:"branch"`
	Time      time.Time `json:"time"`
	Author    string    `json:"author"`
	Tool      string    `json:"tool"`
	Message   string    `json:"message"`
	Resources []string  `json:"resources"`
	// ResourcesMore is how many more resources it changed than Resources lists (cut to fit the answer).
	ResourcesMore int `json:"resources_more,omitempty"`
}

// maxMessage clips revision messages and notes in listings; show_revision shows them whole.
const maxMessage = 2000

// revisionOf is a revision as the tools show it: its message clipped at clipAt bytes (0: whole), its resources at
// namesBudget characters of JSON. A revision may change thousands of resources; its record must still fit an answer
// (found in review: a revert of 30 long-named resources under a small cap committed and answered LIMIT_EXCEEDED, and
// history could never page past it).
func revisionOf(r store.RevisionRecord, clipAt, namesBudget int) revisionJSON {
	j := revisionJSON{Revision: r.Number, Branch: r.Branch, Time: r.Time, Author: r.Author, Tool: r.Tool,
		Message: clipText(r.Message, clipAt)}
	j.Resources, j.ResourcesMore = clipNames(r.Resources, namesBudget)
	if len(r.Parents) > 0 {
		j.Parent = r.Parents[0]
	}
	if len(r.Parents) > 1 {
		j.Merged = r.Parents[1]
	}
	return j
}

// clipNames keeps the first names whose JSON fits budget characters; more is how many were left out.
func clipNames(names []string, budget int) (kept []string, more int) {
	used := 2
	for i, n := range names {
		b, _ := json.Marshal(n)
		if used+len(b)+1 > budget {
			return append([]string{}, names[:i]...), len(names) - i
		}
		used += len(b) + 1
	}
	return append([]string{}, names...), 0
}

// clipText shortens stored text in a listing.
func clipText(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	return clip(s[:n]) + " …(clipped)"
}

func readTools() []*toolSpec {
	return []*toolSpec{
		{
			name: "status", title: "Server status",
			desc:   "What you may do here: write mode, protected branches, your policy, the output cap, your tools.",
			output: statusSchema(),
			handle: status,
		},
		{
			name: "list_databases", title: "List databases",
			desc:   "The databases, with sizes, revision counts and branch heads.",
			params: one(pLimit(1000), pCursor),
			output: outputSchema([]string{"databases", "more"},
				prop{"databases", arrS("the databases", closedObject("one database", []string{"name"},
					prop{"name", strS("the database name")},
					prop{"file_bytes", intS("the size of its file")},
					prop{"revisions", intS("how many revisions it has (the newest revision number)")},
					prop{"heads", arrS("its branches and their heads", closedObject("a branch head", []string{"branch", "revision"},
						prop{"branch", strS("the branch")}, prop{"revision", intS("its head revision")}))},
					prop{"error", strS("why it could not be read, when it could not")}))},
				oMore, oNextCursor),
			handle: listDatabases,
		},
		{
			name: "list_resources", title: "List resources",
			desc:   "The resources of a database at a state, with kinds and sizes.",
			params: params(one(pDatabase), refParams(""), one(pLimit(1000), pCursor)),
			output: outputSchema([]string{"database", "revision", "resources", "more"},
				oDatabase, oRevision, oBranch,
				prop{"resources", arrS("the resources", resourceSummarySchema())},
				oMore, oNextCursor),
			handle: listResources,
		},
		{
			name: "resource_info", title: "Resource information",
			desc:   "Kind, size and member count of a resource at a state, the revisions that created and last changed it, and how many changed it.",
			params: params(one(pDatabase, pResource), refParams("")),
			output: outputSchema([]string{"database", "revision", "resource", "kind", "size", "count", "history_complete"},
				oDatabase, oRevision, oBranch, oResource,
				prop{"kind", strS("its JSON type: object, array, string, number, boolean or null")},
				prop{"size", intS("its size as compact JSON, in bytes")},
				prop{"count", intS("its members (object) or elements (array); 0 for other kinds")},
				prop{"created_revision", intS("the oldest revision, on the history searched, that changed it (present when history_complete)")},
				prop{"created_time", strS("when that revision was made")},
				prop{"modified_revision", intS("the newest revision, up to the state read, that changed it")},
				prop{"modified_time", strS("when that revision was made")},
				prop{"changed_in", intS("how many revisions changed it, up to the state read")},
				prop{"history_branch", strS("the branch whose history (first parents) was searched")},
				prop{"history_complete", boolS("false when the history was too long to search whole, or could not be searched: then created_revision and changed_in are missing or a lower bound")},
				prop{"schema", anyS("the JSON Schema (draft 2020-12) the operator set for the resource: a write that would leave the resource invalid against it is refused with SCHEMA_VIOLATION (absent: it has none)")}),
			handle: resourceInfo,
		},
		{
			name: "read", title: "Read a value",
			desc: "The value at path in a resource, at a state; numbers keep their exact text. Containers deeper than max_depth, and what passes the output cap, become {\"$elided\": …} markers (read their path); then truncated is true and next_cursor continues.",
			params: params(one(pDatabase, pResource, pPath), refParams(""),
				one(param{name: "max_depth", kind: kInteger, min: 1, desc: "levels shown; the value read is 1"},
					param{name: "limit", kind: kInteger, min: 1, desc: "members or elements shown"},
					pCursor)),
			output: outputSchema([]string{"database", "revision", "resource", "path", "kind", "count", "value", "truncated"},
				oDatabase, oRevision, oBranch, oResource, oPath,
				prop{"kind", strS("the JSON type of the value read")},
				prop{"count", intS("the members or elements of the value read (0 for other kinds)")},
				prop{"value", anyS("the value, exactly as stored (numbers keep their text), possibly with $elided markers")},
				oTruncated, oNextCursor),
			handle: read,
		},
		{
			name: "history", title: "History",
			desc: "Revisions of branch, newest first, along first parents; with resource (and path), only those that changed it.",
			params: params(one(pDatabase,
				param{name: "resource", kind: kString},
				param{name: "path", kind: kString},
				param{name: "branch", kind: kString},
				pLimit(500), pCursor)),
			output: outputSchema([]string{"database", "branch", "revisions", "more"},
				oDatabase, prop{"branch", strS("the branch listed")},
				prop{"resource", strS("the resource the revisions changed, when one was given")},
				prop{"path", strS("the path inside it whose value they changed, when a resource was given")},
				prop{"revisions", arrS("the revisions; long messages are clipped (show_revision shows them whole)", revisionSchema("a revision"))},
				oMore, oNextCursor),
			handle: history,
		},
		{
			name: "show_revision", title: "Show a revision",
			desc:   "One revision: author, time, tool, message, storage added, and its first changes against its parent (diff lists them all).",
			params: one(pDatabase, param{name: "revision", kind: kInteger, min: 1, required: true}),
			output: outputSchema([]string{"database", "revision", "branch", "time", "author", "tool", "message", "resources", "new_nodes", "new_bytes", "changes"},
				oDatabase,
				prop{"revision", intS("the revision number")},
				prop{"parent", intS("the revision it was made on (absent for the first)")},
				prop{"merged", intS("for a promote that merged: the revision it brought in")},
				prop{"branch", strS("the branch it was committed on")},
				prop{"time", strS("when it was committed (RFC 3339)")},
				prop{"author", strS("who made it")},
				prop{"tool", strS("the tool or command that made it")},
				prop{"message", strS("the message recorded with it")},
				prop{"resources", strArrS("the resources it changed", "a resource name")},
				oResourcesMore,
				prop{"new_nodes", intS("how many storage nodes it added")},
				prop{"new_bytes", intS("how many bytes of storage it added")},
				prop{"changes", diffSchema("what it changed against its parent, as operations from the database root (the first ones)")}),
			handle: showRevision,
		},
		{
			name: "diff", title: "Diff two states",
			desc: "What changed from one state (from_…) to another (to_…), in the whole database or one resource (and path): counts and RFC 6902 operations; remove and replace carry old_value.",
			params: params(one(pDatabase,
				param{name: "resource", kind: kString},
				param{name: "path", kind: kString}),
				refParams("from_"), refParams("to_"),
				one(pLimit(1000), pCursor)),
			output: outputSchema([]string{"database", "from_revision", "to_revision", "counts", "counts_complete", "operations", "more", "truncated"},
				oDatabase,
				prop{"from_revision", intS("the revision compared from")},
				prop{"from_branch", strS("the branch the from state was read through, when one was")},
				prop{"to_revision", intS("the revision compared to")},
				prop{"to_branch", strS("the branch the to state was read through, when one was")},
				oResource, oPath,
				prop{"counts", countsSchema()},
				prop{"counts_complete", boolS("true when counts cover the whole diff; false when the diff was cut after the operations computed so far")},
				prop{"operations", arrS("RFC 6902 operations that turn the first state into the second, in order", diffOpSchema())},
				oMore, oNextCursor,
				prop{"truncated", boolS("true when a value in an operation was too big and was replaced by an $elided marker (read it at to_revision or from_revision)")}),
			handle: diff,
		},
		{
			name: "path_history", title: "History of one value",
			desc: "Each revision of branch where the value at path changed, newest first, with before and after (blame).",
			params: params(one(pDatabase, pResource, pPath,
				param{name: "branch", kind: kString},
				pLimit(200), pCursor)),
			output: outputSchema([]string{"database", "branch", "resource", "path", "changes", "more"},
				oDatabase, prop{"branch", strS("the branch searched")}, oResource, oPath,
				prop{"changes", arrS("the revisions where the value changed", revisionSchema("one change",
					prop{"before", anyS("the value before (absent when the path did not exist); big values are $elided markers")},
					prop{"after", anyS("the value after (absent when the path was removed); big values are $elided markers")}))},
				oMore, oNextCursor),
			handle: pathHistory,
		},
		{
			name: "list_branches", title: "List branches",
			desc:   "The branches, with heads, bases, creators and whether they are protected.",
			params: one(pDatabase, pLimit(1000), pCursor),
			output: outputSchema([]string{"database", "branches", "more"},
				oDatabase,
				prop{"branches", arrS("the branches", branchSchema("a branch"))},
				oMore, oNextCursor),
			handle: listBranches,
		},
		{
			name: "list_snapshots", title: "List snapshots",
			desc:   "The snapshots (fixed names of revisions), with revisions and notes.",
			params: one(pDatabase, pLimit(1000), pCursor),
			output: outputSchema([]string{"database", "snapshots", "more"},
				oDatabase,
				prop{"snapshots", arrS("the snapshots; long notes are clipped", snapshotSchema("a snapshot"))},
				oMore, oNextCursor),
			handle: listSnapshots,
		},
	}
}

func resourceSummarySchema() schema {
	return closedObject("one resource", []string{"name", "kind", "size", "count"},
		prop{"name", strS("the resource name")},
		prop{"kind", strS("its JSON type")},
		prop{"size", intS("its size as compact JSON, in bytes")},
		prop{"count", intS("its members or elements (0 for other kinds)")})
}

func countsSchema() schema {
	return closedObject("how many operations of each kind", []string{"added", "removed", "replaced", "moved"},
		prop{"added", intS("add and copy operations")},
		prop{"removed", intS("remove operations")},
		prop{"replaced", intS("replace operations")},
		prop{"moved", intS("move operations")})
}

func diffOpSchema() schema {
	return closedObject("one RFC 6902 operation", []string{"op", "path"},
		prop{"op", schema{"type": "string", "enum": []string{"add", "remove", "replace", "move", "copy"}, "description": "the operation"}},
		prop{"path", strS("JSON Pointer of the target")},
		prop{"from", strS("JSON Pointer of the source, for move and copy")},
		prop{"value", anyS("the new value, for add and replace")},
		prop{"old_value", anyS("the value removed or replaced, for remove and replace")})
}

func diffSchema(desc string) schema {
	return closedObject(desc, []string{"counts", "counts_complete", "operations", "more"},
		prop{"counts", countsSchema()},
		prop{"counts_complete", boolS("true when counts cover the whole change")},
		prop{"operations", arrS("the first operations", diffOpSchema())},
		prop{"more", boolS("true when there are more operations than shown")})
}

func branchSchema(desc string) schema {
	return closedObject(desc, []string{"name", "head", "base", "created", "protected"},
		prop{"name", strS("the branch name")},
		prop{"head", intS("its head revision")},
		prop{"base", intS("the revision it was created from")},
		prop{"creator", strS("who created it")},
		prop{"created", strS("when it was created (RFC 3339)")},
		prop{"protected", boolS("true when agents may change it only through a confirmed plan")})
}

func snapshotSchema(desc string) schema {
	return closedObject(desc, []string{"name", "revision", "created"},
		prop{"name", strS("the snapshot name")},
		prop{"revision", intS("the revision it names")},
		prop{"note", strS("its note")},
		prop{"creator", strS("who created it")},
		prop{"created", strS("when it was created (RFC 3339)")})
}

// ---- status

type statusOut struct {
	Server            string      `json:"server"`
	Version           string      `json:"version"`
	Writes            string      `json:"writes"`
	WritesMeaning     string      `json:"writes_meaning"`
	ProtectedBranches []string    `json:"protected_branches"`
	Principal         string      `json:"principal"`
	Limits            limitsOut   `json:"limits"`
	Policy            gate.Policy `json:"policy"`
	Tools             []string    `json:"tools"`
}

type limitsOut struct {
	MaxOutputChars int `json:"max_output_chars"`
}

func statusSchema() schema {
	decision := func(class, what string) prop {
		return prop{class, schema{"type": "string", "enum": []string{gate.Allow, gate.Ask, gate.Approve, gate.Deny}, "description": what + ": allow (runs), ask (answers a plan a person must confirm), approve (a plan only a person approves out of band) or deny"}}
	}
	return outputSchema([]string{"server", "version", "writes", "writes_meaning", "protected_branches", "principal", "limits", "policy", "tools"},
		prop{"server", strS("the server name: strata")},
		prop{"version", strS("the server version")},
		prop{"writes", schema{"type": "string", "enum": []string{gate.WritesOff, gate.WritesBranches, gate.WritesOn}, "description": "the write mode the operator chose"}},
		prop{"writes_meaning", strS("what the write mode lets you do")},
		prop{"protected_branches", strArrS("branches that change only through a confirmed plan (in mode on: only changes that remove or overwrite data need one)", "a branch name")},
		prop{"principal", strS("who you are here: recorded as the author of your revisions")},
		prop{"limits", closedObject("limits that arguments cannot raise", []string{"max_output_chars"},
			prop{"max_output_chars", intS("the most characters of JSON one answer holds; longer answers are cut, with a cursor to continue")})},
		prop{"policy", closedObject("what the operator lets you do, by class of call", []string{"read", "write", "protected", "admin"},
			decision("read", "reads"), decision("write", "changes on branches that are not protected"),
			decision("protected", "changes to protected branches, and deleting branches or snapshots others created"),
			decision("admin", "creating databases"))},
		prop{"tools", strArrS("the tools you may call", "a tool name")})
}

func status(_ context.Context, c *call) (string, any, error) {
	s := c.s
	out := statusOut{Server: "strata", Version: s.cfg.Version, Writes: s.cfg.Writes, WritesMeaning: modeText(s.cfg.Writes),
		ProtectedBranches: s.cfg.Protected, Principal: s.cfg.Principal,
		Limits: limitsOut{MaxOutputChars: s.cfg.MaxOutputChars}, Policy: s.cfg.Policy, Tools: s.toolNames()}
	return fmt.Sprintf("strata %s, writes %s: %s.", s.cfg.Version, s.cfg.Writes, modeText(s.cfg.Writes)), out, nil
}

// ---- paging helpers

// page keeps items, up to limit, while their JSON stays within budget. more reports whether any were left.
func page[T any](items []T, limit int, budget int) (kept []T, more bool) {
	kept = []T{}
	used := 0
	for _, it := range items {
		if len(kept) >= limit {
			return kept, true
		}
		b, _, err := marshalData(it)
		if err != nil {
			return kept, true
		}
		if used+len(b)+1 > budget && len(kept) > 0 {
			return kept, true
		}
		used += len(b) + 1
		kept = append(kept, it)
	}
	return kept, false
}

func (c *call) limit(def uint64) int {
	if c.a.has("limit") {
		return int(c.a.uint("limit"))
	}
	return int(def)
}

// ---- list_databases

type databaseJSON struct {
	Name      string     `json:"name"`
	FileBytes int64      `json:"file_bytes,omitempty"`
	Revisions uint64     `json:"revisions"`
	Heads     []headJSON `json:"heads"`
	Error     string     `json:"error,omitempty"`
}

type headJSON struct {
	Branch   string `json:"branch"`
	Revision uint64 `json:"revision"`
}

type listDatabasesOut struct {
	Databases  []databaseJSON `json:"databases"`
	More       bool           `json:"more"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

func listDatabases(ctx context.Context, c *call) (string, any, error) {
	cur, err := c.s.cursor(c.t, c.a)
	if err != nil {
		return "", nil, err
	}
	names, err := c.s.actor.Databases(ctx)
	if err != nil {
		return "", nil, err
	}
	limit := c.limit(100)
	var dbs []databaseJSON
	for _, n := range names {
		if cur != nil && n <= cur.After {
			continue
		}
		if len(dbs) > limit {
			break
		}
		d := databaseJSON{Name: n, Heads: []headJSON{}}
		info, err := c.s.actor.DatabaseInfo(ctx, n)
		if err != nil {
			d.Error = c.s.toolError(err).headline()
		} else {
			d.FileBytes, d.Revisions = info.FileBytes, info.Revisions
			for b, h := range info.Heads {
				d.Heads = append(d.Heads, headJSON{b, h})
			}
			slices.SortFunc(d.Heads, func(a, b headJSON) int { return cmpString(a.Branch, b.Branch) })
		}
		dbs = append(dbs, d)
	}
	out := listDatabasesOut{}
	out.Databases, out.More, out.NextCursor = pageByName(c, dbs, limit, func(d databaseJSON) string { return d.Name }, cursorState{})
	return fmt.Sprintf("%d database(s)%s.", len(out.Databases), moreText(out.More)), out, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func moreText(more bool) string {
	if more {
		return "; there are more: pass next_cursor as cursor to continue"
	}
	return ""
}

// cursorAndView reads the call's cursor and opens its database, the first steps of the paged read tools.
func (c *call) cursorAndView(ctx context.Context) (*cursorState, *gate.View, error) {
	cur, err := c.s.cursor(c.t, c.a)
	if err != nil {
		return nil, nil, err
	}
	v, err := c.view(ctx)
	if err != nil {
		return nil, nil, err
	}
	return cur, v, nil
}

// pageByName pages items, which are in the order of their names, and where more follow makes the cursor (st with
// After set) that continues after the name of the last item kept.
func pageByName[T any](c *call, items []T, limit int, name func(T) string, st cursorState) (kept []T, more bool, next string) {
	kept, more = page(items, limit, c.s.budget())
	if more {
		st.After = name(kept[len(kept)-1])
		next = c.s.newCursor(c.t, c.a, st)
	}
	return kept, more, next
}

// ---- list_resources

type listResourcesOut struct {
	Database   string                      `json:"database"`
	Revision   uint64                      `json:"revision"`
	Branch     string                      `json:"branch,omitempty"`
	Resources  []snapshots.ResourceSummary `json:"resources"`
	More       bool                        `json:"more"`
	NextCursor string                      `json:"next_cursor,omitempty"`
}

// state resolves the call's ref (fields with the prefix), or the revision a cursor recorded.
func (c *call) state(ctx context.Context, v *gate.View, prefix string, cur *cursorState, i int) (snapshots.State, error) {
	ref, _, err := c.a.ref(prefix)
	if err != nil {
		return snapshots.State{}, err
	}
	if cur == nil || i >= len(cur.Revs) {
		return v.Resolve(ctx, ref)
	}
	st, err := v.Resolve(ctx, snapshots.Ref{Revision: cur.Revs[i]})
	if err == nil && ref.Revision == 0 && ref.Snapshot == "" {
		st.Branch = branchOr(ref.Branch) // still name the branch the first page was read through
	}
	return st, err
}

func branchOr(b string) string {
	if b == "" {
		return snapshots.Main
	}
	return b
}

func listResources(ctx context.Context, c *call) (string, any, error) {
	cur, v, err := c.cursorAndView(ctx)
	if err != nil {
		return "", nil, err
	}
	st, err := c.state(ctx, v, "", cur, 0)
	if err != nil {
		return "", nil, err
	}
	all, err := v.Resources(ctx, st)
	if err != nil {
		return "", nil, err
	}
	if cur != nil {
		i, _ := slices.BinarySearchFunc(all, cur.After, func(r snapshots.ResourceSummary, n string) int { return cmpString(r.Name, n) })
		for i < len(all) && all[i].Name <= cur.After {
			i++
		}
		all = all[i:]
	}
	out := listResourcesOut{Database: c.a.str("database"), Revision: st.Rev.Number, Branch: st.Branch}
	out.Resources, out.More, out.NextCursor = pageByName(c, all, c.limit(100),
		func(r snapshots.ResourceSummary) string { return r.Name }, cursorState{Revs: []uint64{st.Rev.Number}})
	return fmt.Sprintf("%d resource(s) at revision %d%s.", len(out.Resources), st.Rev.Number, moreText(out.More)), out, nil
}

// ---- resource_info

type resourceInfoOut struct {
	Database         string          `json:"database"`
	Revision         uint64          `json:"revision"`
	Branch           string          `json:"branch,omitempty"`
	Resource         string          `json:"resource"`
	Kind             string          `json:"kind"`
	Size             uint64          `json:"size"`
	Count            uint64          `json:"count"`
	CreatedRevision  uint64          `json:"created_revision,omitempty"`
	CreatedTime      *time.Time      `json:"created_time,omitempty"`
	ModifiedRevision uint64          `json:"modified_revision,omitempty"`
	ModifiedTime     *time.Time      `json:"modified_time,omitempty"`
	ChangedIn        uint64          `json:"changed_in,omitempty"`
	HistoryBranch    string          `json:"history_branch,omitempty"`
	HistoryComplete  bool            `json:"history_complete"`
	Schema           json.RawMessage `json:"schema,omitempty"`
}

// infoPages bounds the history resource_info searches: pages of infoPageSize revisions that changed the resource
// (each page scans at most the library's own bound of revisions).
const (
	infoPages    = 5
	infoPageSize = 1000
)

func resourceInfo(ctx context.Context, c *call) (string, any, error) {
	db, err := c.view(ctx)
	if err != nil {
		return "", nil, err
	}
	res := c.a.str("resource")
	st, err := c.state(ctx, db, "", nil, 0)
	if err != nil {
		return "", nil, err
	}
	val, err := db.Get(ctx, st, res)
	if err != nil {
		return "", nil, err
	}
	out := resourceInfoOut{Database: c.a.str("database"), Revision: st.Rev.Number, Branch: st.Branch, Resource: res,
		Kind: val.Kind().String(), Size: val.Size(), Count: val.Len()}

	// Search the first-parent history of the branch the state was read through (else the branch the revision was
	// made on), from the revision read down, if that revision is on it.
	hb := st.Branch
	if hb == "" {
		hb = st.Rev.Branch
	}
	top, err := db.History(ctx, snapshots.HistoryQuery{Branch: hb, Limit: 1, Before: st.Rev.Number + 1})
	if err == nil && len(top.Revisions) == 1 && top.Revisions[0].Number == st.Rev.Number {
		out.HistoryBranch = hb
		before := st.Rev.Number + 1
		var oldest store.RevisionRecord
		for i := 0; i < infoPages; i++ {
			p, err := db.History(ctx, snapshots.HistoryQuery{Branch: hb, Resource: res, Limit: infoPageSize, Before: before})
			if err != nil {
				break
			}
			for _, r := range p.Revisions {
				if out.ModifiedRevision == 0 {
					out.ModifiedRevision, out.ModifiedTime = r.Number, timePtr(r.Time)
				}
				out.ChangedIn++
				oldest = r
			}
			if p.Next == 0 {
				out.HistoryComplete = true
				break
			}
			before = p.Next
		}
		if out.HistoryComplete && oldest.Number != 0 {
			out.CreatedRevision, out.CreatedTime = oldest.Number, timePtr(oldest.Time)
		}
	}
	if rec, ok, err := db.Schema(ctx, res); err != nil {
		return "", nil, err
	} else if ok {
		out.Schema = rec.Schema
	}
	summary := fmt.Sprintf("%s %s at revision %d: %d bytes, %d member(s) or element(s)", res, out.Kind, st.Rev.Number, out.Size, out.Count)
	if out.Schema != nil {
		summary += ", with a schema"
	}
	if out.HistoryComplete {
		summary += fmt.Sprintf(", changed in %d revision(s)", out.ChangedIn)
	}
	return summary + ".", out, nil
}

func timePtr(t time.Time) *time.Time { return &t }

// ---- read

type readOut struct {
	Database   string          `json:"database"`
	Revision   uint64          `json:"revision"`
	Branch     string          `json:"branch,omitempty"`
	Resource   string          `json:"resource"`
	Path       string          `json:"path"`
	Kind       string          `json:"kind"`
	Count      uint64          `json:"count"`
	Value      json.RawMessage `json:"value"`
	Truncated  bool            `json:"truncated"`
	NextCursor string          `json:"next_cursor,omitempty"`
}

// elided is the marker that stands for a value left out (the same shape as package revision's markers).
func elisionOf(v revision.Value, p string) json.RawMessage {
	b, _ := json.Marshal(gate.Elided{Elided: v.Kind().String(), Path: p, Count: v.Len(), Bytes: v.Size()})
	return b
}

// shownLen is how long raw JSON will be in an answer (escaped as marshalData escapes it).
func shownLen(raw json.RawMessage) int {
	b, _, err := marshalData(raw)
	if err != nil {
		return len(raw)
	}
	return len(b)
}

func read(ctx context.Context, c *call) (string, any, error) {
	cur, db, err := c.cursorAndView(ctx)
	if err != nil {
		return "", nil, err
	}
	ptr, err := c.a.pointer("path")
	if err != nil {
		return "", nil, err
	}
	st, err := c.state(ctx, db, "", cur, 0)
	if err != nil {
		return "", nil, err
	}
	res := c.a.str("resource")
	v, err := db.Get(ctx, st, res)
	if err != nil {
		return "", nil, err
	}
	f := db.Forest()
	target, err := f.Get(ctx, v, ptr)
	if err != nil {
		return "", nil, err
	}
	out := readOut{Database: c.a.str("database"), Revision: st.Rev.Number, Branch: st.Branch, Resource: res,
		Path: ptr.String(), Kind: target.Kind().String(), Count: target.Len()}
	budget := max(c.s.budget()-300-len(res)-2*len(out.Path), 200)
	if k := target.Kind(); k != revision.Object && k != revision.Array {
		out.Count = 0
		if target.Size() > uint64(budget) {
			out.Value, out.Truncated = elisionOf(target, out.Path), true
		} else if out.Value, err = f.JSON(ctx, target); err != nil {
			return "", nil, err
		}
		if shownLen(out.Value) > budget {
			out.Value, out.Truncated = elisionOf(target, out.Path), true
		}
	} else {
		opts := revision.ReadOptions{Limit: c.a.uint("limit"), MaxBytes: budget}
		if c.a.has("max_depth") {
			opts.MaxDepth = int(c.a.uint("max_depth"))
		}
		if cur != nil {
			opts.Offset = cur.Offset
		}
		var rr *revision.ReadResult
		for try := 0; ; try++ {
			if rr, err = f.Read(ctx, v, ptr, opts); err != nil {
				return "", nil, err
			}
			n := shownLen(rr.JSON)
			if n <= budget || try == 5 {
				break
			}
			// Escaping made it longer than it read: ask for proportionally less.
			opts.MaxBytes = max(1, opts.MaxBytes*budget/n*9/10)
		}
		out.Value, out.Truncated = rr.JSON, rr.Truncated
		if rr.HasNext {
			out.NextCursor = c.s.newCursor(c.t, c.a, cursorState{Revs: []uint64{st.Rev.Number}, Offset: rr.Next})
		}
	}
	summary := fmt.Sprintf("%s%s at revision %d: %s", res, out.Path, st.Rev.Number, out.Kind)
	if out.Count > 0 {
		summary += fmt.Sprintf(" of %d", out.Count)
	}
	if out.Truncated {
		summary += "; truncated: $elided markers stand for what was left out"
	}
	if out.NextCursor != "" {
		summary += "; pass next_cursor as cursor to continue"
	}
	return summary + ".", out, nil
}

// ---- list_branches and list_snapshots

type branchJSON struct {
	Name      string    `json:"name"`
	Head      uint64    `json:"head"`
	Base      uint64    `json:"base"`
	Creator   string    `json:"creator,omitempty"`
	Created   time.Time `json:"created"`
	Protected bool      `json:"protected"`
}

type listBranchesOut struct {
	Database   string       `json:"database"`
	Branches   []branchJSON `json:"branches"`
	More       bool         `json:"more"`
	NextCursor string       `json:"next_cursor,omitempty"`
}

func listBranches(ctx context.Context, c *call) (string, any, error) {
	out := listBranchesOut{Database: c.a.str("database")}
	var err error
	out.Branches, out.More, out.NextCursor, err = listNamed(ctx, c, (*gate.View).Branches,
		func(b store.BranchRecord) branchJSON {
			return branchJSON{Name: b.Name, Head: b.Head, Base: b.Base, Creator: b.Creator, Created: b.Created,
				Protected: c.s.cfg.protected(b.Name)}
		},
		func(b branchJSON) string { return b.Name })
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("%d branch(es)%s.", len(out.Branches), moreText(out.More)), out, nil
}

type snapshotJSON struct {
	Name     string    `json:"name"`
	Revision uint64    `json:"revision"`
	Note     string    `json:"note,omitempty"`
	Creator  string    `json:"creator,omitempty"`
	Created  time.Time `json:"created"`
}

type listSnapshotsOut struct {
	Database   string         `json:"database"`
	Snapshots  []snapshotJSON `json:"snapshots"`
	More       bool           `json:"more"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

func listSnapshots(ctx context.Context, c *call) (string, any, error) {
	out := listSnapshotsOut{Database: c.a.str("database")}
	var err error
	out.Snapshots, out.More, out.NextCursor, err = listNamed(ctx, c, (*gate.View).Snapshots,
		func(l store.LabelRecord) snapshotJSON {
			return snapshotJSON{Name: l.Name, Revision: l.Revision, Note: clipText(l.Note, maxMessage), Creator: l.Creator, Created: l.Created}
		},
		func(l snapshotJSON) string { return l.Name })
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("%d snapshot(s)%s.", len(out.Snapshots), moreText(out.More)), out, nil
}

// listNamed lists the records of a database that have names (branches, snapshots) for list_branches and
// list_snapshots: shown, in the order of their names, after the cursor's name, and paged with the cursor that continues.
func listNamed[R, J any](ctx context.Context, c *call, fetch func(*gate.View, context.Context) ([]R, error),
	show func(R) J, name func(J) string) (kept []J, more bool, next string, err error) {
	cur, db, err := c.cursorAndView(ctx)
	if err != nil {
		return nil, false, "", err
	}
	rs, err := fetch(db, ctx)
	if err != nil {
		return nil, false, "", err
	}
	all := []J{}
	for _, r := range rs {
		if j := show(r); cur == nil || name(j) > cur.After {
			all = append(all, j)
		}
	}
	slices.SortFunc(all, func(a, b J) int { return cmpString(name(a), name(b)) })
	kept, more, next = pageByName(c, all, c.limit(100), name, cursorState{})
	return kept, more, next, nil
}

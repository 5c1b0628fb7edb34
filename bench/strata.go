package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/strata-db/strata/mcp"
	"github.com/strata-db/strata/query"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
)

const (
	strataDB       = "bench"
	strataResource = "users"
	jqProgram      = `[.[] | select(.score > 90)] | length`
)

// engineOptions are the query engine's defaults but for the deadline: the suite measures how long a query takes,
// so a whole-document query over a large N must not be cut off at the default 5 s.
var engineOptions = query.Options{Timeout: 30 * time.Minute}

// strataSystem is Strata through its library: a data directory (snapshots.Dir, the backend the CLI and the MCP server
// use), the query engine for jq, and an MCP server with an in-process client.
type strataSystem struct {
	pg       *pgServer // strata-pg: the data location is a database on this server (strata_pg.go)
	dir      *snapshots.Dir
	db       *snapshots.DB
	revs     []uint64 // revs[k] is revision k's number
	newBytes int64
	engine   *query.Engine
	cs       *mcpsdk.ClientSession
	ss       *mcpsdk.ServerSession
}

func (s *strataSystem) open(ctx context.Context, dir string) error {
	loc := dir
	if s.pg != nil {
		var err error
		if loc, err = s.pg.newStrataLocation(ctx, dir); err != nil {
			return err
		}
	}
	d, err := snapshots.OpenDir(loc, nil)
	if err != nil {
		return err
	}
	s.dir = d
	s.db, err = d.Create(ctx, strataDB, "bench")
	return err
}

func (s *strataSystem) load(ctx context.Context, d *doc) error {
	res, err := s.db.Put(ctx, strataResource, d.json, snapshots.WriteOptions{Author: "bench"})
	if err != nil {
		return err
	}
	s.revs = append(s.revs[:0], res.Revision)
	return nil
}

func scoreOp(i, score int) []revision.Operation {
	return []revision.Operation{{Op: "replace", Path: "/" + strconv.Itoa(i) + "/score", Value: []byte(strconv.Itoa(score)), HasValue: true}}
}

func (s *strataSystem) commit(ctx context.Context, k, i, score int) error {
	res, err := s.db.Patch(ctx, strataResource, scoreOp(i, score), snapshots.WriteOptions{Author: "bench"})
	if err != nil {
		return err
	}
	s.revs = append(s.revs, res.Revision)
	s.newBytes = res.NewBytes
	return nil
}

func (s *strataSystem) lastNewBytes() int64 { return s.newBytes }

func (s *strataSystem) concurrentCommit(ctx context.Context, i, score int) error {
	_, err := s.db.Patch(ctx, strataResource, scoreOp(i, score), snapshots.WriteOptions{Author: "bench"})
	return err
}

func (s *strataSystem) diskBytes(ctx context.Context) (int64, error) {
	if s.pg != nil {
		return pgStrataBytes(ctx, s.dir)
	}
	fi, err := os.Stat(filepath.Join(s.dir.Path(), strataDB+snapshots.Ext))
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// strataBolt is Strata on a data directory: its bbolt file also tells the pages in use.
type strataBolt struct{ *strataSystem }

func (s strataBolt) usedBytes() (int64, error) {
	return boltUsedBytes(filepath.Join(s.dir.Path(), strataDB+snapshots.Ext))
}

func (s *strataSystem) ref(k int) snapshots.Ref { return snapshots.Ref{Revision: s.revs[k]} }

func (s *strataSystem) snapshot(ctx context.Context, name string, k int) error {
	_, err := s.db.CreateSnapshot(ctx, name, s.ref(k), "", "bench")
	return err
}

func (s *strataSystem) branch(ctx context.Context, name string, k int) error {
	_, err := s.db.CreateBranch(ctx, name, s.ref(k), "bench")
	return err
}

func (s *strataSystem) readElement(ctx context.Context, k, i int) ([]byte, error) {
	v, _, err := s.db.Get(ctx, s.ref(k), strataResource, revision.Pointer{strconv.Itoa(i)})
	if err != nil {
		return nil, err
	}
	return s.db.Forest().JSON(ctx, v)
}

func (s *strataSystem) diff(ctx context.Context, a, b int) (int, error) {
	d, _, _, err := s.db.Diff(ctx, s.ref(a), s.ref(b), strataResource, nil, nil)
	if err != nil {
		return 0, err
	}
	if d.Truncated {
		return 0, fmt.Errorf("diff truncated")
	}
	// Each operation replaces one score: count the elements they touch.
	seen := map[string]bool{}
	for _, op := range d.Operations {
		p, err := revision.ParsePointer(op.Path)
		if err != nil || len(p) == 0 {
			return 0, fmt.Errorf("diff operation at %q", op.Path)
		}
		seen[p[0]] = true
	}
	return len(seen), nil
}

func (s *strataSystem) export(ctx context.Context, k int, w io.Writer) error {
	v, _, err := s.db.Get(ctx, s.ref(k), strataResource, nil)
	if err != nil {
		return err
	}
	return s.db.Forest().WriteJSON(ctx, w, v)
}

func (s *strataSystem) materialise(ctx context.Context, k int) (any, error) {
	v, _, err := s.db.Get(ctx, s.ref(k), strataResource, nil)
	if err != nil {
		return nil, err
	}
	return s.db.Forest().Materialize(ctx, v)
}

// jq runs the program in a new engine each time, so that its cache of materialised inputs starts cold (the forest's
// node cache stays warm).
func (s *strataSystem) jq(ctx context.Context, k int) (int, error) {
	e, err := query.New(engineOptions)
	if err != nil {
		return 0, err
	}
	defer e.Close()
	res, err := e.Query(ctx, s.db, s.ref(k), query.Request{Resource: strataResource, Program: jqProgram, Caller: "bench"})
	if err != nil {
		return 0, err
	}
	if len(res.Results) != 1 {
		return 0, fmt.Errorf("jq gave %d results", len(res.Results))
	}
	return strconv.Atoi(string(res.Results[0]))
}

// jqAfterCommit answers the program at revision k-1 in a new engine, then times it at k in the same engine: the
// results of the nodes the commit did not change are reused (query/split.go).
func (s *strataSystem) jqAfterCommit(ctx context.Context, k int) (int, time.Duration, error) {
	e, err := query.New(engineOptions)
	if err != nil {
		return 0, 0, err
	}
	defer e.Close()
	if _, err := e.Query(ctx, s.db, s.ref(k-1), query.Request{Resource: strataResource, Program: jqProgram, Caller: "bench"}); err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	res, err := e.Query(ctx, s.db, s.ref(k), query.Request{Resource: strataResource, Program: jqProgram, Caller: "bench"})
	took := time.Since(t0)
	if err != nil {
		return 0, 0, err
	}
	if len(res.Results) != 1 {
		return 0, 0, fmt.Errorf("jq gave %d results", len(res.Results))
	}
	n, err := strconv.Atoi(string(res.Results[0]))
	return n, took, err
}

func (s *strataSystem) jqLiteral(ctx context.Context, k, i int) ([]byte, error) {
	if s.engine == nil {
		e, err := query.New(engineOptions)
		if err != nil {
			return nil, err
		}
		s.engine = e
	}
	res, err := s.engine.Query(ctx, s.db, s.ref(k), query.Request{Resource: strataResource, Program: fmt.Sprintf(".[%d].name", i), Caller: "bench"})
	if err != nil {
		return nil, err
	}
	if len(res.Results) != 1 {
		return nil, fmt.Errorf("jq gave %d results", len(res.Results))
	}
	return res.Results[0], nil
}

// mcpRead calls the read tool through an MCP client (the go-sdk's) connected to the server over OS pipes, the way
// a client talks to `strata mcp` over stdio.
func (s *strataSystem) mcpRead(ctx context.Context, k, i int) ([]byte, error) {
	if s.cs == nil {
		srv, err := mcp.NewServer(s.dir, mcp.Config{Writes: mcp.WritesOff, Principal: "bench"})
		if err != nil {
			return nil, err
		}
		// Two OS pipes, as a client's stdio to a `strata mcp` process: every message crosses the kernel.
		toServer, fromClient, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		toClient, fromServer, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		st := &mcpsdk.IOTransport{Reader: toServer, Writer: fromServer}
		ct := &mcpsdk.IOTransport{Reader: toClient, Writer: fromClient}
		if s.ss, err = srv.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "strata-bench", Version: "0"}, nil)
		if s.cs, err = client.Connect(ctx, ct, nil); err != nil {
			return nil, err
		}
	}
	args := fmt.Sprintf(`{"database":%q,"resource":%q,"path":"/%d","revision":%d}`, strataDB, strataResource, i, s.revs[k])
	res, err := s.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "read", Arguments: json.RawMessage(args)})
	if err != nil {
		return nil, err
	}
	if res.IsError {
		var msg string
		if len(res.Content) > 0 {
			if t, ok := res.Content[0].(*mcpsdk.TextContent); ok {
				msg = t.Text
			}
		}
		return nil, fmt.Errorf("read: %s", msg)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, err
	}
	var out struct {
		Value     json.RawMessage `json:"value"`
		Truncated bool            `json:"truncated"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	if out.Truncated {
		return nil, fmt.Errorf("read: truncated")
	}
	return out.Value, nil
}

func (s *strataSystem) close() error {
	if s.cs != nil {
		s.cs.Close()
		s.ss.Wait()
	}
	if s.engine != nil {
		s.engine.Close()
	}
	if s.dir != nil {
		return s.dir.Close()
	}
	return nil
}

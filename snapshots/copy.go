package snapshots

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// CopyReport says what CopyDatabase copied.
type CopyReport struct {
	Database  string `json:"database"`
	Revisions int    `json:"revisions"`     // revision records (numbers keep their gaps)
	Last      uint64 `json:"last_revision"` // the newest revision's number
	Branches  int    `json:"branches"`
	Snapshots int    `json:"snapshots"`
	Nodes     int    `json:"nodes"`      // distinct nodes the revisions reach
	NodeBytes int64  `json:"node_bytes"` // their canonical (uncompressed) size
}

// copySkipped are the buckets a copy leaves behind: the leases and node lists of imports in progress, which only
// the process running the import can finish, in the original.
var copySkipped = []string{importsBucket, importNodesBucket}

// copyBatchBytes is how many node bytes a copy writes per transaction.
const copyBatchBytes = 4 << 20

// CopyDatabase copies database name from src into dst (a directory to PostgreSQL or back, or between two of a kind)
// as it is: every revision record with its number, author, time and parents (and the gaps garbage collection left),
// every branch with its id, head and base, every snapshot, the head logs that time travel reads, idempotency keys,
// plans and approvals, and every node the revisions reach, under the same hashes. It fails with a ConflictError if
// dst has a database of that name, and changes nothing in src.
//
// The copy reads one consistent view of the original's catalog, then its trees (checking each node's hash and the
// trees' structure on the way), and builds the copy under a name no one can open; only once it is whole does it take
// its name, in one step. An interrupted copy leaves no database called name in dst (at most a file or a database
// called "name.copy-…" to delete). The original may be written meanwhile: the copy is the state it had when the copy
// began. A garbage collection of the original that removes revisions while they are being copied makes the copy fail
// (start it again).
func CopyDatabase(ctx context.Context, src, dst *Dir, name string, progress func(done, total int)) (*CopyReport, error) {
	if err := ValidDatabaseName(name); err != nil {
		return nil, err
	}
	taken := &ConflictError{Msg: fmt.Sprintf("database %q already exists in %s: drop it there first, or copy into another location", name, dst.Path())}
	if names, err := dst.Names(); err != nil {
		return nil, err
	} else if slices.Contains(names, name) {
		return nil, taken
	}
	from, err := src.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	var dump *store.CatalogDump
	if err := from.be.View(ctx, func(c store.CatalogReader) error {
		var err error
		dump, err = store.DumpCatalog(c)
		return err
	}); err != nil {
		return nil, fmt.Errorf("reading the catalog of %q in %s: %w", name, src.Path(), err)
	}
	for _, b := range copySkipped {
		delete(dump.Buckets, b)
	}

	var b [6]byte
	_, _ = rand.Read(b[:])
	tmp := name + ".copy-" + hex.EncodeToString(b[:]) // not a valid database name: nobody opens it meanwhile
	be, err := dst.createBackend(ctx, tmp)
	if err != nil {
		return nil, err
	}
	done := false
	defer func() {
		if !done {
			be.Close()
			_ = dst.dropStorage(context.WithoutCancel(ctx), tmp)
		}
	}()

	// The nodes: every node any revision reaches, read (and checked) from the original as the walk goes.
	cn := &copyNodes{src: from.be, dst: be}
	f := revision.New(cn, &revision.Options{CacheBytes: -1})
	seen := map[store.Hash]bool{}
	for i, rec := range dump.Revisions {
		if err := ctx.Err(); err != nil { // a revision whose nodes were all copied already reads nothing that would see it
			return nil, err
		}
		root, err := revision.ValueFromEncoding(string(rec.Root))
		if err != nil {
			return nil, fmt.Errorf("revision %d of %q: %w", rec.Number, name, err)
		}
		err = f.Walk(ctx, root, func(h store.Hash) bool { return seen[h] }, func(v revision.NodeVisit) error {
			seen[v.Hash] = true
			return nil
		})
		if errors.Is(err, store.ErrNodeMissing) {
			return nil, fmt.Errorf("copying revision %d of %q: %w (was the original garbage-collected during the copy? copy again)", rec.Number, name, err)
		}
		if err != nil {
			return nil, fmt.Errorf("copying revision %d of %q: %w", rec.Number, name, err)
		}
		if err := cn.flush(ctx, false); err != nil {
			return nil, err
		}
		if progress != nil {
			progress(i+1, len(dump.Revisions))
		}
	}
	if err := cn.flush(ctx, true); err != nil {
		return nil, err
	}
	// The catalog, in one transaction, once every node is there.
	if err := be.Update(ctx, func(tx store.CatalogTx) error { return store.LoadCatalog(tx, dump) }); err != nil {
		return nil, fmt.Errorf("writing the catalog of %q in %s: %w", name, dst.Path(), err)
	}
	if err := be.Close(); err != nil {
		return nil, err
	}
	done = true
	if err := dst.renameStorage(ctx, tmp, name); err != nil {
		_ = dst.dropStorage(context.WithoutCancel(ctx), tmp)
		if errors.Is(err, store.ErrExists) || errors.Is(err, os.ErrExist) {
			return nil, taken
		}
		return nil, err
	}
	// A copy of this database killed before it took its name left its half under a temporary name, which no one
	// can open, list or drop: now that the name is taken, any other copy to it would fail anyway, so they go.
	dst.dropStaleCopies(ctx, name)
	rep := &CopyReport{Database: name, Revisions: len(dump.Revisions), Branches: len(dump.Branches), Snapshots: len(dump.Labels),
		Nodes: len(seen), NodeBytes: cn.bytes}
	if n := len(dump.Revisions); n > 0 {
		rep.Last = dump.Revisions[n-1].Number
	}
	return rep, nil
}

// copyNodes is the node store a copy's walk reads through: each node read from the original is also queued for
// the copy, and written a few MiB at a time.
type copyNodes struct {
	src   store.NodeReader
	dst   store.NodeWriter
	batch []store.Node
	size  int
	bytes int64
}

func (c *copyNodes) GetNodes(ctx context.Context, hs []store.Hash) ([][]byte, error) {
	out, err := c.src.GetNodes(ctx, hs)
	if err != nil {
		return nil, err
	}
	for i, h := range hs {
		c.batch = append(c.batch, store.Node{Hash: h, Data: out[i]})
		c.size += len(out[i])
	}
	return out, nil
}

func (c *copyNodes) PutNodes(context.Context, []store.Node) (store.PutStats, error) {
	return store.PutStats{}, errors.New("a copy's walk writes nothing")
}

// flush writes the queued nodes when there are enough of them, or all of them.
func (c *copyNodes) flush(ctx context.Context, all bool) error {
	if len(c.batch) == 0 || !all && c.size < copyBatchBytes {
		return nil
	}
	st, err := c.dst.PutNodes(ctx, c.batch)
	if err != nil {
		return fmt.Errorf("writing nodes of the copy: %w", err)
	}
	c.bytes += st.RawBytes
	c.batch, c.size = nil, 0
	return nil
}

// dropStaleCopies removes the storage of copies of database name that were interrupted (a process killed in the
// middle of CopyDatabase): names "name.copy-…", which Names hides and Drop refuses.
func (d *Dir) dropStaleCopies(ctx context.Context, name string) {
	prefix := name + ".copy-"
	var stale []string
	if d.pg != nil {
		names, err := d.pg.Names(ctx)
		if err != nil {
			return
		}
		for _, n := range names {
			if strings.HasPrefix(n, prefix) {
				stale = append(stale, n)
			}
		}
	} else {
		ents, err := os.ReadDir(d.path)
		if err != nil {
			return
		}
		for _, e := range ents {
			if n, ok := strings.CutSuffix(e.Name(), Ext); ok && strings.HasPrefix(n, prefix) && e.Type().IsRegular() {
				stale = append(stale, n)
			}
		}
	}
	for _, n := range stale {
		_ = d.dropStorage(context.WithoutCancel(ctx), n)
	}
}

package snapshots

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// Put creates or replaces a whole resource with a JSON document. A document of putImportBytes or more is built as
// Import builds one, from memory, before it waits for the writer; the result, the revision and the errors are a
// Put's either way.
func (db *DB) Put(ctx context.Context, resource string, value []byte, w WriteOptions) (*Result, error) {
	if err := ValidResourceName(resource); err != nil {
		return nil, err
	}
	if len(value) >= putImportBytes && !w.DryRun {
		return db.putImport(ctx, resource, value, w)
	}
	return db.commit(ctx, w, func(ctx context.Context, f *revision.Forest, head State) (*revision.Change, []uint64, error) {
		c, err := f.Patch(ctx, head.Root, []revision.Operation{{Op: putOp, Path: revision.Pointer{resource}.String(), Value: value, HasValue: true}})
		return c, nil, err
	})
}

// putOp is the operation a Put is, as its errors name it.
const putOp = "add"

// putImportBytes is the size from which a Put is built as an import is (importValue): its tree is built on the
// caller's goroutine, before the request reaches the writer, so that other commits go on meanwhile; and its nodes
// go to the store in batches of the forest's default size (4 MiB, an import's own are smaller, to bound its resident
// set) as they are cut, instead of joining the write's overlay, each decoded again, to be walked at the commit.
// BenchmarkPut (-benchmem), three alternating runs on 2026-12-03: at 1,000,000 elements (104 MB) 674–739 ms against
// 710–820 ms, 162 against 218 MB allocated; at 100,000 (11 MB) 77–106 against 79–101 ms; at 40,000 (4.4 MB) the
// overlay was 4–10% faster, the import's own transactions (the lease, a batch, the lease's removal) costing more
// than the overlay saves.
var putImportBytes = 8 << 20

// putImport is Put for a large value. Its errors are a Put's: those of the value name the operation, as Patch's do.
func (db *DB) putImport(ctx context.Context, resource string, value []byte, w WriteOptions) (*Result, error) {
	return db.importValue(ctx, resource, w, func(ctx context.Context, f *revision.Forest) (revision.Value, revision.Stats, error) {
		v, st, err := f.ImportBytesWith(ctx, value, &revision.ImportOptions{Depth: 1})
		var je *revision.JSONError
		if errors.As(err, &je) || errors.Is(err, revision.ErrLimit) {
			err = &revision.PatchError{Index: 0, Op: putOp, Err: err}
		}
		return v, st, err
	})
}

// Patch applies RFC 6902 operations, with paths inside the resource, as one revision: all or nothing.
func (db *DB) Patch(ctx context.Context, resource string, ops []revision.Operation, w WriteOptions) (*Result, error) {
	if err := ValidResourceName(resource); err != nil {
		return nil, err
	}
	prefix := revision.Pointer{resource}.String()
	scoped := make([]revision.Operation, len(ops))
	for i, op := range ops {
		if op.Path != "" && op.Path[0] != '/' {
			return nil, &revision.PatchError{Index: i, Op: op.Op, Err: fmt.Errorf("%w: path %q must be empty or start with \"/\"", revision.ErrInvalidPath, op.Path)}
		}
		op.Path = prefix + op.Path
		if op.Op == "move" || op.Op == "copy" {
			if op.From != "" && op.From[0] != '/' {
				return nil, &revision.PatchError{Index: i, Op: op.Op, Err: fmt.Errorf("%w: from %q must be empty or start with \"/\"", revision.ErrInvalidPath, op.From)}
			}
			op.From = prefix + op.From
		}
		scoped[i] = op
	}
	return db.commit(ctx, w, func(ctx context.Context, f *revision.Forest, head State) (*revision.Change, []uint64, error) {
		if _, err := resourceIn(ctx, f, head, resource, "use put to create it"); err != nil {
			return nil, nil, err
		}
		c, err := f.Patch(ctx, head.Root, scoped)
		return c, nil, unscope(err, prefix)
	})
}

// unscope rewrites errors about root paths ("/res/a") into paths inside the resource ("/a"): the paths a PathError
// names, and the paths its message (or any other error's) quotes after "at" (found in review: "the array at
// \"/res/a\" has 3 elements" reached the caller, whose paths have no "/res").
func unscope(err error, prefix string) error {
	if err == nil {
		return nil
	}
	var pt *revision.PatchError
	inPatch := errors.As(err, &pt)
	var pe *revision.PathError
	if errors.As(err, &pe) && len(pe.Path) >= len(prefix) && pe.Path[:len(prefix)] == prefix {
		cp := *pe
		cp.Path = pe.Path[len(prefix):]
		if len(cp.At) >= len(prefix) && cp.At[:len(prefix)] == prefix {
			cp.At = cp.At[len(prefix):]
		}
		cp.Msg = unscopeText(cp.Msg, prefix)
		if inPatch {
			return &revision.PatchError{Index: pt.Index, Op: pt.Op, Err: &cp}
		}
		return &cp
	}
	if inPatch && pe == nil {
		if msg := pt.Err.Error(); unscopeText(msg, prefix) != msg {
			return &revision.PatchError{Index: pt.Index, Op: pt.Op, Err: &unscoped{msg: unscopeText(msg, prefix), err: pt.Err}}
		}
	}
	return err
}

// unscopeText rewrites the root paths quoted after "at" in a message into paths inside the resource.
func unscopeText(msg, prefix string) string {
	return strings.NewReplacer(`at "`+prefix+`/`, `at "/`, `at "`+prefix+`"`, `at ""`).Replace(msg)
}

// unscoped is an error whose message unscope rewrote; it wraps the original.
type unscoped struct {
	msg string
	err error
}

func (e *unscoped) Error() string { return e.msg }
func (e *unscoped) Unwrap() error { return e.err }

// resourceIn returns a resource's value in a state, read through f; a missing one is a NotFoundError with the
// closest names and hint.
func resourceIn(ctx context.Context, f *revision.Forest, st State, name, hint string) (revision.Value, error) {
	v, err := f.Get(ctx, st.Root, revision.Pointer{name})
	if errors.Is(err, revision.ErrNotFound) {
		var pe *revision.PathError
		var near []string
		if errors.As(err, &pe) {
			near = pe.DidYouMean
		}
		return v, &NotFoundError{What: "resource", Name: name, DidYouMean: near, Hint: hint}
	}
	return v, err
}

// DeleteResource removes a whole resource (its history stays).
func (db *DB) DeleteResource(ctx context.Context, resource string, w WriteOptions) (*Result, error) {
	if err := ValidResourceName(resource); err != nil {
		return nil, err
	}
	return db.commit(ctx, w, func(ctx context.Context, f *revision.Forest, head State) (*revision.Change, []uint64, error) {
		if _, err := resourceIn(ctx, f, head, resource, "use put to create it"); err != nil {
			return nil, nil, err
		}
		c, err := f.Patch(ctx, head.Root, []revision.Operation{{Op: "remove", Path: revision.Pointer{resource}.String()}})
		return c, nil, err
	})
}

// Revert makes a new revision on a branch whose whole state equals the target's. It writes no nodes.
func (db *DB) Revert(ctx context.Context, target Ref, w WriteOptions) (*Result, error) {
	st, err := db.Resolve(ctx, target)
	if err != nil {
		return nil, err
	}
	if w.Message == "" {
		w.Message = fmt.Sprintf("revert to %s (revision %d)", target, st.Rev.Number)
	}
	// The target must still be there when the revert commits: garbage collection removes a revision's record before
	// any of its nodes, so a record still there is a tree still whole, and one gone is refused as missing.
	w.InTx = BothInTx(func(tx store.CatalogTx, _ store.RevisionRecord) error {
		if _, err := tx.Revision(st.Rev.Number); errors.Is(err, store.ErrNotFound) {
			return &NotFoundError{What: "revision", Name: fmt.Sprint(st.Rev.Number),
				Hint: "garbage collection removed it while the revert waited; nothing was written"}
		} else if err != nil {
			return err
		}
		return nil
	}, w.InTx)
	return db.commit(ctx, w, func(ctx context.Context, f *revision.Forest, head State) (*revision.Change, []uint64, error) {
		// Read the target's root node: if garbage collection removed it since it was resolved, say so now
		// rather than commit a root whose nodes are gone.
		if st.Root.IsTree() || st.Root.Kind() == revision.Object {
			if err := f.Members(ctx, st.Root, func(string, revision.Value) error { return errStopScan }); err != nil && err != errStopScan {
				return nil, nil, err
			}
		}
		return &revision.Change{Root: st.Root}, nil, nil
	})
}

var errStopScan = errors.New("stop")

// Restore sets the value at ptr inside a resource to what it was at a ref; if it did not exist there, it is removed.
// An empty ptr restores (or undeletes) the whole resource.
func (db *DB) Restore(ctx context.Context, resource string, ptr revision.Pointer, from Ref, w WriteOptions) (*Result, error) {
	if err := ValidResourceName(resource); err != nil {
		return nil, err
	}
	src, err := db.Resolve(ctx, from)
	if err != nil {
		return nil, err
	}
	full := append(revision.Pointer{resource}, ptr...)
	prefix := revision.Pointer{resource}.String()
	old, err := db.forest.Get(ctx, src.Root, full)
	absent := errors.Is(err, revision.ErrNotFound)
	if err != nil && !absent {
		return nil, unscope(err, prefix)
	}
	if w.Message == "" {
		w.Message = fmt.Sprintf("restore %s%s from %s (revision %d)", resource, ptr, from, src.Rev.Number)
	}
	return db.commit(ctx, w, func(ctx context.Context, f *revision.Forest, head State) (*revision.Change, []uint64, error) {
		if absent {
			if _, err := f.Get(ctx, head.Root, full); errors.Is(err, revision.ErrNotFound) {
				return &revision.Change{Root: head.Root}, nil, nil
			}
			c, err := f.Patch(ctx, head.Root, []revision.Operation{{Op: "remove", Path: full.String()}})
			return c, nil, unscope(err, prefix)
		}
		text, err := f.JSON(ctx, old)
		if err != nil {
			return nil, nil, err
		}
		// The value at the path becomes the old one: replaced where the path is, added where it is not. (An add at
		// an array element inserts before it: found in review, restoring /arr/1 lengthened the array.)
		op := "replace"
		if _, err := f.Get(ctx, head.Root, full); errors.Is(err, revision.ErrNotFound) {
			op = "add"
		} else if err != nil {
			return nil, nil, unscope(err, prefix)
		}
		c, err := f.Patch(ctx, head.Root, []revision.Operation{{Op: op, Path: full.String(), Value: text, HasValue: true}})
		return c, nil, unscope(err, prefix)
	})
}

// Commit applies an arbitrary change to a branch head: fn returns the new root (for example from Forest.Patch).
func (db *DB) Commit(ctx context.Context, w WriteOptions, fn func(ctx context.Context, f *revision.Forest, head State) (*revision.Change, error)) (*Result, error) {
	return db.commit(ctx, w, func(ctx context.Context, f *revision.Forest, head State) (*revision.Change, []uint64, error) {
		c, err := fn(ctx, f, head)
		return c, nil, err
	})
}

// nameTaken refuses a branch or snapshot name already used by either (they share one namespace).
func nameTaken(tx store.CatalogReader, name string) error {
	if _, err := tx.Branch(name); err == nil {
		return &ConflictError{Msg: fmt.Sprintf("the name %q is already a branch; branch and snapshot names share one namespace", name)}
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if _, err := tx.Label(name); err == nil {
		return &ConflictError{Msg: fmt.Sprintf("the name %q is already a snapshot; branch and snapshot names share one namespace", name)}
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return nil
}

// CreateBranch makes a branch at a ref (default the head of main). O(1): it writes one small record.
func (db *DB) CreateBranch(ctx context.Context, name string, from Ref, creator string) (store.BranchRecord, error) {
	if err := ValidRefName("branch", name); err != nil {
		return store.BranchRecord{}, err
	}
	if err := from.Validate(); err != nil {
		return store.BranchRecord{}, err
	}
	v, err := db.catalogOp(ctx, func(tx store.CatalogTx, now time.Time) (any, error) {
		if err := nameTaken(tx, name); err != nil {
			return nil, err
		}
		st, err := resolve(tx, from)
		if err != nil {
			return nil, err
		}
		id, err := tx.NextID()
		if err != nil {
			return nil, err
		}
		b := store.BranchRecord{Name: name, ID: id, Head: st.Rev.Number, Base: st.Rev.Number, Creator: creator, Created: now}
		if err := tx.PutBranch(b); err != nil {
			return nil, err
		}
		return b, tx.LogHead(id, now, b.Head)
	})
	if err != nil {
		return store.BranchRecord{}, err
	}
	return v.(store.BranchRecord), nil
}

// DeleteBranch drops a branch name; its revisions stay (until garbage collection, if nothing else reaches them).
func (db *DB) DeleteBranch(ctx context.Context, name string) (store.BranchRecord, error) {
	return db.DeleteBranchOf(ctx, name, "")
}

// DeleteBranchOf deletes a branch only if creator created it (checked in the deleting transaction); an empty
// creator deletes whoever created it.
func (db *DB) DeleteBranchOf(ctx context.Context, name, creator string) (store.BranchRecord, error) {
	return db.deleteBranchIf(ctx, name, nil, func(_ store.CatalogTx, b store.BranchRecord) error {
		if creator != "" && b.Creator != creator {
			return fmt.Errorf("%w: branch %s was created by another principal", ErrConflict, name)
		}
		return nil
	})
}

// deleteBranchIf deletes a branch once check accepts its record, in the deleting transaction. missing, if set, is
// the error when there is no such branch (else: not found, with the closest names).
func (db *DB) deleteBranchIf(ctx context.Context, name string, missing error, check func(store.CatalogTx, store.BranchRecord) error) (store.BranchRecord, error) {
	if name == Main {
		return store.BranchRecord{}, invalid("branch main cannot be deleted")
	}
	v, err := db.catalogOp(ctx, func(tx store.CatalogTx, now time.Time) (any, error) {
		b, err := tx.Branch(name)
		if err != nil {
			if missing != nil && errors.Is(err, store.ErrNotFound) {
				return nil, missing
			}
			return nil, notFoundRef(tx, "branch", name, err)
		}
		if err := check(tx, b); err != nil {
			return nil, err
		}
		if err := recordDropped(tx, now, "branch", name, b.Head); err != nil {
			return nil, err
		}
		return b, tx.DeleteBranch(name)
	})
	if err != nil {
		return store.BranchRecord{}, err
	}
	return v.(store.BranchRecord), nil
}

// CreateSnapshot labels the revision a ref names (default the head of main). O(1).
func (db *DB) CreateSnapshot(ctx context.Context, name string, at Ref, note, creator string) (store.LabelRecord, error) {
	if err := ValidRefName("snapshot", name); err != nil {
		return store.LabelRecord{}, err
	}
	if err := at.Validate(); err != nil {
		return store.LabelRecord{}, err
	}
	v, err := db.catalogOp(ctx, func(tx store.CatalogTx, now time.Time) (any, error) {
		if err := nameTaken(tx, name); err != nil {
			return nil, err
		}
		st, err := resolve(tx, at)
		if err != nil {
			return nil, err
		}
		l := store.LabelRecord{Name: name, Revision: st.Rev.Number, Note: note, Creator: creator, Created: now}
		return l, tx.PutLabel(l)
	})
	if err != nil {
		return store.LabelRecord{}, err
	}
	return v.(store.LabelRecord), nil
}

// DeleteSnapshot removes a label.
func (db *DB) DeleteSnapshot(ctx context.Context, name string) (store.LabelRecord, error) {
	return db.DeleteSnapshotOf(ctx, name, "")
}

// DeleteSnapshotOf deletes a snapshot only if creator created it (checked in the deleting transaction); an empty
// creator deletes whoever created it.
func (db *DB) DeleteSnapshotOf(ctx context.Context, name, creator string) (store.LabelRecord, error) {
	return db.deleteLabelIf(ctx, name, nil, func(_ store.CatalogTx, l store.LabelRecord) error {
		if creator != "" && l.Creator != creator {
			return fmt.Errorf("%w: snapshot %s was created by another principal", ErrConflict, name)
		}
		return nil
	})
}

// deleteLabelIf deletes a snapshot once check accepts its record, in the deleting transaction. missing, if set,
// is the error when there is no such snapshot (else: not found, with the closest names).
func (db *DB) deleteLabelIf(ctx context.Context, name string, missing error, check func(store.CatalogTx, store.LabelRecord) error) (store.LabelRecord, error) {
	v, err := db.catalogOp(ctx, func(tx store.CatalogTx, now time.Time) (any, error) {
		l, err := tx.Label(name)
		if err != nil {
			if missing != nil && errors.Is(err, store.ErrNotFound) {
				return nil, missing
			}
			return nil, notFoundRef(tx, "snapshot", name, err)
		}
		if err := check(tx, l); err != nil {
			return nil, err
		}
		if err := recordDropped(tx, now, "snapshot", name, l.Revision); err != nil {
			return nil, err
		}
		return l, tx.DeleteLabel(name)
	})
	if err != nil {
		return store.LabelRecord{}, err
	}
	return v.(store.LabelRecord), nil
}

package revision

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/strata-db/strata/revision/internal/codec"
	"github.com/strata-db/strata/revision/internal/jsonscan"
	"github.com/strata-db/strata/store"
)

// Operation is one RFC 6902 JSON Patch operation. Value holds the exact JSON text of "value" (numbers keep their
// text); HasValue distinguishes a missing value from null.
//
// OldValue, Strata's one addition to RFC 6902, is a precondition: when HasOldValue, the value at Path must equal it
// (as a test operation compares) before the operation applies, or the whole patch fails with ErrTestFailed. A diff
// reports each remove and replace with the value it removes as "old_value", so its operations apply verbatim
// elsewhere and refuse to overwrite what changed since.
type Operation struct {
	Op          string          `json:"op"`
	Path        string          `json:"path"`
	From        string          `json:"from,omitempty"`
	Value       json.RawMessage `json:"value,omitempty"`
	HasValue    bool            `json:"-"`
	OldValue    json.RawMessage `json:"old_value,omitempty"`
	HasOldValue bool            `json:"-"`
}

// ParsePatch parses a JSON Patch document: an array of operation objects. It refuses duplicate keys, invalid UTF-8,
// unknown operations and missing fields, naming the operation at fault. Members that RFC 6902 does not define are
// ignored, as the RFC requires.
func ParsePatch(data []byte) ([]Operation, error) {
	if err := checkJSON(data); err != nil {
		return nil, fmt.Errorf("%w: the patch is not valid JSON: %v", ErrInvalidPatch, err)
	}
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%w: a patch must be a JSON array of operation objects like {\"op\":\"add\",\"path\":\"/a\",\"value\":1}", ErrInvalidPatch)
	}
	ops := make([]Operation, len(raw))
	for i, m := range raw {
		op, err := operationFromMap(m)
		if err != nil {
			return nil, &PatchError{Index: i, Op: op.Op, Err: err}
		}
		ops[i] = op
	}
	return ops, nil
}

func operationFromMap(m map[string]json.RawMessage) (Operation, error) {
	var op Operation
	str := func(name string) (string, bool, error) {
		r, ok := m[name]
		if !ok {
			return "", false, nil
		}
		var s string
		if err := json.Unmarshal(r, &s); err != nil || string(r) == "null" {
			return "", true, fmt.Errorf("%w: %q must be a string, not %s", ErrInvalidPatch, name, r)
		}
		return s, true, nil
	}
	var ok bool
	var err error
	if op.Op, ok, err = str("op"); err != nil {
		return op, err
	} else if !ok {
		return op, fmt.Errorf(`%w: missing "op" (one of add, remove, replace, move, copy, test)`, ErrInvalidPatch)
	}
	switch op.Op {
	case "add", "remove", "replace", "move", "copy", "test":
	default:
		return op, fmt.Errorf("%w: unknown op %q (use add, remove, replace, move, copy or test)", ErrInvalidPatch, op.Op)
	}
	if op.Path, ok, err = str("path"); err != nil {
		return op, err
	} else if !ok {
		return op, fmt.Errorf(`%w: missing "path" (a JSON Pointer such as "/users/0")`, ErrInvalidPatch)
	}
	if op.Op == "move" || op.Op == "copy" {
		if op.From, ok, err = str("from"); err != nil {
			return op, err
		} else if !ok {
			return op, fmt.Errorf(`%w: %s needs "from" (the JSON Pointer of the value to %s)`, ErrInvalidPatch, op.Op, op.Op)
		}
	}
	if v, ok := m["value"]; ok {
		op.Value, op.HasValue = v, true
	} else if op.Op == "add" || op.Op == "replace" || op.Op == "test" {
		return op, fmt.Errorf(`%w: %s needs "value"`, ErrInvalidPatch, op.Op)
	}
	if v, ok := m["old_value"]; ok {
		op.OldValue, op.HasOldValue = v, true
	}
	return op, nil
}

// CheckJSON validates a JSON text with Strata's rules, as an import would (strict syntax, valid UTF-8, no duplicate
// keys, at most MaxDepth levels), without storing it. The error wraps ErrInvalidJSON.
func CheckJSON(data []byte) error {
	if err := checkJSON(data); err != nil {
		var se *jsonscan.SyntaxError
		if errors.As(err, &se) {
			return &JSONError{Offset: se.Offset, Line: se.Line, Column: se.Column, Msg: se.Msg}
		}
		return &JSONError{Msg: err.Error()}
	}
	return nil
}

// checkJSON validates a JSON text with Strata's rules: strict syntax, valid UTF-8, no duplicate keys, bounded depth.
func checkJSON(data []byte) error {
	sc := jsonscan.NewBytes(data, MaxDepth+2) // a patch document holds its values two levels down: [{"value": …}]
	var keys []map[string]struct{}
	for {
		k, b, err := sc.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch k {
		case jsonscan.BeginObject:
			keys = append(keys, map[string]struct{}{})
		case jsonscan.EndObject:
			keys = keys[:len(keys)-1]
		case jsonscan.Key:
			set := keys[len(keys)-1]
			if _, dup := set[string(b)]; dup {
				return fmt.Errorf("duplicate key %q", b)
			}
			set[string(b)] = struct{}{}
		}
	}
}

// Change is the result of a write: the new root and the nodes it created that the root reaches. Nothing is stored
// until the caller writes Nodes (with Forest.Save, or inside its own commit).
type Change struct {
	Root  Value
	Nodes []store.Node
	// parsed holds Nodes[i] decoded, as the write built it, for Remember.
	parsed []*codec.Node
}

// rememberNodes bounds the changes Remember caches: a point edit's path (a few nodes), not a whole load, which would
// push out of the cache what readers use.
const rememberNodes = 64

// Remember puts the nodes of a change that is now stored into the forest's node cache, decoded as the write built
// them, if it made at most rememberNodes: the next change on the same document starts from this one's root and
// inner nodes, and would otherwise read each back from the store (decompress it, check its hash, decode it), ~15 µs
// a node, on every commit.
func (f *Forest) Remember(c *Change) {
	for i, n := range c.parsed { // empty for a change of more than rememberNodes
		if n != nil {
			f.cache.put(c.Nodes[i].Hash, n)
		}
	}
}

// Save writes a change's nodes to the forest's store.
func (f *Forest) Save(ctx context.Context, c *Change) (Stats, error) {
	if len(c.Nodes) == 0 {
		return Stats{}, nil
	}
	return f.ns.PutNodes(ctx, c.Nodes)
}

// Patch applies the operations in order, as one change: if any fails, none is applied. The result is not stored
// yet (see Change).
func (f *Forest) Patch(ctx context.Context, root Value, ops []Operation) (*Change, error) {
	t := f.newTxn(ctx)
	v := root
	kept := 0
	for i, op := range ops {
		var err error
		if v, err = t.applyOp(v, op); err != nil {
			return nil, &PatchError{Index: i, Op: op.Op, Err: err}
		}
		// The overlay holds every node each operation built, the intermediate versions' too: 10,000 appends to
		// one array held 1 GB (found in review). Once it has grown well past what the current value still reaches,
		// let the rest go, so that it stays within a constant factor of the change (amortised linear).
		if len(t.overlay) > 2*kept+pruneSlack {
			if kept, err = t.prune(v); err != nil {
				return nil, err
			}
		}
	}
	return t.change(v)
}

// pruneSlack is how many nodes a patch's overlay may hold beyond twice what it held after the last pruning.
const pruneSlack = 256

// prune drops from the overlay the nodes that root no longer reaches (built by earlier operations of this write, and
// replaced since), and returns how many it kept.
func (t *txn) prune(root Value) (int, error) {
	keep := make(map[store.Hash]bool)
	if err := t.reachable(root, func(h store.Hash, _ *codec.Node) { keep[h] = true }); err != nil {
		return 0, err
	}
	for h := range t.overlay {
		if !keep[h] {
			delete(t.overlay, h)
		}
	}
	return len(keep), nil
}

func (t *txn) change(v Value) (*Change, error) {
	nodes, err := t.newNodes(v)
	if err != nil {
		return nil, err
	}
	c := &Change{Root: v, Nodes: nodes}
	if len(nodes) <= rememberNodes {
		c.parsed = make([]*codec.Node, len(nodes))
		for i, n := range nodes {
			c.parsed[i] = t.overlay[n.Hash]
		}
	}
	return c, nil
}

// Apply is Patch followed by Save.
func (f *Forest) Apply(ctx context.Context, root Value, ops []Operation) (Value, Stats, error) {
	c, err := f.Patch(ctx, root, ops)
	if err != nil {
		return Value{}, Stats{}, err
	}
	st, err := f.Save(ctx, c)
	return c.Root, st, err
}

func (t *txn) applyOp(root Value, op Operation) (Value, error) {
	ptr, err := ParsePointer(op.Path)
	if err != nil {
		return Value{}, err
	}
	if op.HasOldValue {
		if err := t.checkOldValue(root, ptr, op); err != nil {
			return Value{}, err
		}
	}
	var val Value
	if op.HasValue && op.Op != "remove" && op.Op != "move" && op.Op != "copy" {
		if val, err = t.parseAt(op.Value, len(ptr)); err != nil {
			return Value{}, err
		}
	}
	switch op.Op {
	case "add":
		return t.put(root, ptr, editAdd, val)
	case "replace":
		if len(ptr) == 0 {
			return val, nil
		}
		return t.put(root, ptr, editReplace, val)
	case "remove":
		if len(ptr) == 0 {
			return Value{}, &PathError{Op: "remove", Path: "", Err: ErrInvalidPath, Msg: "cannot remove the whole document; replace it instead"}
		}
		v, _, err := t.setIn(root, ptr, 0, editRemove, Value{})
		return v, err
	case "test":
		cur, err := t.get(root, ptr, "test")
		if err != nil {
			return Value{}, err
		}
		eq, err := t.equalJSON(cur, val)
		if err != nil {
			return Value{}, err
		}
		if !eq {
			return Value{}, &PathError{Op: "test", Path: op.Path, At: op.Path, Err: ErrTestFailed, Msg: "the value there differs from the test value"}
		}
		return root, nil
	case "move", "copy":
		from, err := ParsePointer(op.From)
		if err != nil {
			return Value{}, err
		}
		v, err := t.get(root, from, op.Op)
		if err != nil {
			return Value{}, err
		}
		if len(ptr) > len(from) {
			if err := t.checkDepth(v, len(ptr), op.Path); err != nil {
				return Value{}, err
			}
		}
		if op.Op == "move" {
			if from.IsPrefixOf(ptr) {
				if len(from) == len(ptr) {
					return root, nil
				}
				// A PathError, so that a resource's own paths are shown without its name (found in review).
				return Value{}, &PathError{Op: "move", Path: op.Path, At: op.From, Err: ErrInvalidPatch,
					Msg: "a value cannot be moved into its own child: from is a prefix of path"}
			}
			if root, _, err = t.setIn(root, from, 0, editRemove, Value{}); err != nil {
				return Value{}, err
			}
		}
		return t.put(root, ptr, editAdd, v)
	}
	return Value{}, fmt.Errorf("%w: unknown op %q", ErrInvalidPatch, op.Op)
}

// checkOldValue checks an operation's old_value precondition: the value at ptr must equal it.
func (t *txn) checkOldValue(root Value, ptr Pointer, op Operation) error {
	want, err := t.parseAt(op.OldValue, len(ptr))
	if err != nil {
		return fmt.Errorf("old_value: %w", err)
	}
	cur, err := t.get(root, ptr, op.Op)
	if errors.Is(err, ErrNotFound) {
		return &PathError{Op: op.Op, Path: op.Path, At: op.Path, Err: ErrTestFailed, Want: clipJSON(op.OldValue),
			Msg: "old_value does not hold: there is no value there now"}
	}
	if err != nil {
		return err
	}
	eq, err := t.equalJSON(cur, want)
	if err != nil || eq {
		return err
	}
	have, err := t.clippedJSON(cur)
	if err != nil {
		return err
	}
	return &PathError{Op: op.Op, Path: op.Path, At: op.Path, Err: ErrTestFailed, Have: have, Want: clipJSON(op.OldValue),
		Msg: "old_value does not hold: the value there has changed"}
}

// maxQuotedJSON is how much of a value an error quotes.
const maxQuotedJSON = 200

// clippedJSON is a value's JSON for an error message: whole when short, else its kind and size.
func (t *txn) clippedJSON(v Value) (string, error) {
	if v.Size() > maxQuotedJSON {
		return fmt.Sprintf("(%s of %d bytes of JSON)", v.Kind(), v.Size()), nil
	}
	x, err := t.materializeExact(v.enc)
	if err != nil {
		return "", err
	}
	b, err := marshalExact(x)
	return string(b), err
}

// clipJSON is a JSON text for an error message: whole when short, else cut.
func clipJSON(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) <= maxQuotedJSON {
		return string(b)
	}
	return fmt.Sprintf("(%d bytes of JSON beginning %s…)", len(b), strings.ToValidUTF8(string(b[:maxQuotedJSON/2]), ""))
}

// parseAt parses a value that will sit k levels below the database root, so that its resource stays within
// MaxDepth. A value too deep is invalid input; the message gives the resource's limit, never how far below the root
// the value sits (a resource's place in the database is not the caller's business).
func (t *txn) parseAt(data []byte, k int) (Value, error) {
	v, err := t.parseDepth(data, depthAt(k))
	if err != nil && k > 1 && errors.Is(err, ErrInvalidJSON) && strings.Contains(err.Error(), "nesting") {
		return Value{}, fmt.Errorf("%w: the value would make its resource nest deeper than %d levels, the most a resource may", ErrInvalidJSON, MaxDepth)
	}
	return v, err
}

// checkDepth refuses to place v k levels below the root if its resource would then nest deeper than MaxDepth.
func (t *txn) checkDepth(v Value, k int, path string) error {
	ok, err := t.depthAtMost(v.enc, depthAt(k))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: placing this value at %q would make its resource nest deeper than %d levels, the most a resource may", ErrInvalidJSON, path, MaxDepth)
	}
	return nil
}

// depthAtMost reports whether the containers in v nest at most limit deep. It stops as soon as they do not. A tree
// shared several times over (copy doubles a value in O(1), its nodes shared) is walked once: its depth is
// remembered by its encoding (found in review: a patch of 40 copies walked 2^40 members).
func (r *reader) depthAtMost(enc string, limit int) (bool, error) {
	d, err := r.depthOf(enc, limit, map[string]int{})
	return err == nil && d <= limit, err
}

// depthOf is how deep the containers in enc nest, or more than limit as soon as they nest deeper.
func (r *reader) depthOf(enc string, limit int, memo map[string]int) (int, error) {
	v := Value{enc}
	if k := v.Kind(); k != Object && k != Array {
		return 0, nil
	}
	if limit <= 0 {
		return limit + 1, nil
	}
	tree := v.IsTree()
	if tree {
		if d, ok := memo[enc]; ok {
			return d, nil
		}
		if err := r.ctx.Err(); err != nil {
			return 0, err
		}
	}
	deepest, over := 0, false
	err := r.each(v, 0, func(_, val string) error {
		d, err := r.depthOf(val, limit-1, memo)
		if err != nil {
			return err
		}
		if d > limit-1 {
			over = true
			return errStop
		}
		deepest = max(deepest, d)
		return nil
	})
	if err != nil {
		return 0, err
	}
	if over {
		return limit + 1, nil
	}
	if tree {
		memo[enc] = deepest + 1
	}
	return deepest + 1, nil
}

func (t *txn) put(root Value, ptr Pointer, kind editKind, val Value) (Value, error) {
	if len(ptr) == 0 {
		return val, nil
	}
	v, _, err := t.setIn(root, ptr, 0, kind, val)
	return v, err
}

// equalJSON is JSON equality as RFC 6902's test defines it: numbers compare by value (1 equals 1.0), objects
// regardless of member order.
func (r *reader) equalJSON(a, b Value) (bool, error) {
	if a == b {
		return true, nil
	}
	if a.Kind() != b.Kind() {
		return false, nil
	}
	switch a.Kind() {
	case Number:
		return numbersEqual(a.NumberText(), b.NumberText()), nil
	case Object, Array:
		if err := r.ctx.Err(); err != nil {
			return false, err
		}
		if a.Len() != b.Len() {
			return false, nil
		}
		ea, err := r.entries(a)
		if err != nil {
			return false, err
		}
		eb, err := r.entries(b)
		if err != nil {
			return false, err
		}
		for i := range ea {
			if ea[i].Key != eb[i].Key {
				return false, nil
			}
			eq, err := r.equalJSON(Value{ea[i].Val}, Value{eb[i].Val})
			if err != nil || !eq {
				return false, err
			}
		}
		return true, nil
	}
	return false, nil // strings, booleans and null are equal only when their encodings are
}

type kv struct{ Key, Val string }

// entries lists a container's members or elements.
func (r *reader) entries(v Value) ([]kv, error) {
	out := make([]kv, 0, v.Len())
	err := r.each(v, 0, func(k, val string) error {
		out = append(out, kv{k, val})
		return nil
	})
	return out, err
}

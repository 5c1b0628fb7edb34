package revision

import (
	"context"
	"fmt"

	"github.com/strata-db/strata/revision/internal/codec"
	"github.com/strata-db/strata/store"
)

// errStop ends an iteration early without error.
type stopIteration struct{}

func (stopIteration) Error() string { return "stop" }

var errStop error = stopIteration{}

// each calls fn for the members or elements of container v in order, starting at index from. Members of a tree
// before from are skipped by their counts, without reading their nodes. fn may return errStop.
func (r *reader) each(v Value, from uint64, fn func(key, val string) error) error {
	if !v.IsTree() {
		return ignoreStop(eachInline(v.enc, from, fn))
	}
	n, err := r.root(v)
	if err != nil {
		return err
	}
	return ignoreStop(r.eachNode(n, from, fn))
}

// eachInline walks the entries of an inline container straight from its encoding, without allocating.
func eachInline(enc string, from uint64, fn func(key, val string) error) error {
	r := codec.Reader{S: enc, I: 1}
	obj := enc[0] == codec.TagObj
	n := r.Uvarint()
	for i := uint64(0); i < n && !r.Bad; i++ {
		var key string
		if obj {
			key = r.Str(r.Uvarint())
		}
		start := r.I
		end, err := codec.SkipValue(enc, start)
		if err != nil {
			r.Bad = true
			break
		}
		r.I = end
		if i < from {
			continue
		}
		if err := fn(key, enc[start:end]); err != nil {
			return err
		}
	}
	if r.Bad {
		return fmt.Errorf("%w: malformed inline container", store.ErrCorruptNode)
	}
	return nil
}

func ignoreStop(err error) error {
	if err == errStop {
		return nil
	}
	return err
}

func (r *reader) eachNode(n *codec.Node, from uint64, fn func(key, val string) error) error {
	if n.Level == 0 {
		if from >= uint64(len(n.Entries)) {
			return nil
		}
		for _, e := range n.Entries[from:] {
			if err := fn(e.Key, e.Val); err != nil {
				return err
			}
		}
		return nil
	}
	cs := n.Children
	i := 0
	for i < len(cs) && from >= cs[i].Count {
		from -= cs[i].Count
		i++
	}
	if i == len(cs) {
		return nil
	}
	if err := r.ctx.Err(); err != nil {
		return err
	}
	kids, err := r.nodes(cs[i:])
	if err != nil {
		return err
	}
	for k, kid := range kids {
		if kid.Level != n.Level-1 {
			_, err := r.child(cs[i+k].Hash, n) // reports the corruption
			return err
		}
		if err := r.eachNode(kid, from, fn); err != nil {
			return err
		}
		from = 0
	}
	return nil
}

// stringBytes returns the whole text of a string value.
func (r *reader) stringBytes(v Value) (string, error) {
	if v.enc[0] == codec.TagStr {
		return codec.Payload(v.enc), nil
	}
	n, err := r.root(v)
	if err != nil {
		return "", err
	}
	buf := make([]byte, 0, v.Len())
	if err := r.eachFrag(n, func(s string) { buf = append(buf, s...) }); err != nil {
		return "", err
	}
	return string(buf), nil
}

func (r *reader) eachFrag(n *codec.Node, fn func(string)) error {
	if n.Kind == codec.NodeStrLeaf {
		fn(n.Frag)
		return nil
	}
	kids, err := r.nodes(n.Children)
	if err != nil {
		return err
	}
	for _, k := range kids {
		if err := r.eachFrag(k, fn); err != nil {
			return err
		}
	}
	return nil
}

// Members calls fn for each member of an object (in key order) or element of an array, reading nodes in batches.
func (f *Forest) Members(ctx context.Context, v Value, fn func(key string, v Value) error) error {
	if k := v.Kind(); k != Object && k != Array {
		return fmt.Errorf("%w: %s has no members", ErrInvalidPath, k)
	}
	return f.reader(ctx).each(v, 0, func(key, val string) error { return fn(key, Value{val}) })
}

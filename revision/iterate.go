package revision

import (
	"github.com/strata-db/strata/revision/internal/codec"
)

// errStop ends an iteration early without error.
type stopIteration struct{}

func (stopIteration) Error() string { return "stop" }

var errStop error = stopIteration{}

// each calls fn for the members or elements of container v in order, starting at index from. Members of a tree
// before from are skipped by their counts, without reading their nodes. fn may return errStop.
func (r *reader) each(v Value, from uint64, fn func(key, val string) error) error {
	if !v.IsTree() {
		es, err := inlineEntries(v)
		if err != nil {
			return err
		}
		if from >= uint64(len(es)) {
			return nil
		}
		for _, e := range es[from:] {
			if err := fn(e.Key, e.Val); err != nil {
				return ignoreStop(err)
			}
		}
		return nil
	}
	n, err := r.root(v)
	if err != nil {
		return err
	}
	return ignoreStop(r.eachNode(n, from, fn))
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

package snapshots

import (
	"context"

	"github.com/strata-db/strata/store"
)

// overlay is a node store that serves a batch's not-yet-committed nodes in front of the real store, so that a later
// write in the same group commit can build on an earlier one.
type overlay struct {
	base  store.NodeReader
	nodes map[store.Hash][]byte
}

func (o *overlay) GetNodes(ctx context.Context, hs []store.Hash) ([][]byte, error) {
	out := make([][]byte, len(hs))
	var miss []store.Hash
	var at []int
	for i, h := range hs {
		if b, ok := o.nodes[h]; ok {
			out[i] = b
		} else {
			miss = append(miss, h)
			at = append(at, i)
		}
	}
	if len(miss) > 0 {
		got, err := o.base.GetNodes(ctx, miss)
		if err != nil {
			return nil, err
		}
		for k, i := range at {
			out[i] = got[k]
		}
	}
	return out, nil
}

func (o *overlay) PutNodes(ctx context.Context, ns []store.Node) (store.PutStats, error) {
	for _, n := range ns {
		o.nodes[n.Hash] = n.Data
	}
	return store.PutStats{}, nil
}

package revision

import (
	"context"

	"github.com/strata-db/strata/revision/internal/codec"
	"github.com/strata-db/strata/store"
)

// prepareBatchBytes is how many bytes of nodes a write collects before it hands them to the forest's prepare
// function (Forest.WithPrepare). A point edit's few nodes never reach it, and are prepared with the rest of its
// change; a 1,000,000-element document (87 MB of nodes) is prepared in about 83 batches while its tree is built.
const prepareBatchBytes = 1 << 20

// preparer hands a write's nodes to a prepare function in batches, each on a goroutine of its own that waits for the
// one before, so that at most one batch of a write is prepared at a time and the write goes on building meanwhile.
// Every node the write builds is handed over, those that its result does not reach too (the intermediate versions
// of a multi-operation patch, a merge's candidates): preparing them is wasted, not wrong. A write that fails leaves
// its goroutines to finish on their own (they hold nothing but their batch); once its context is done they skip
// what is left.
type preparer struct {
	ctx context.Context
	fn  func([]store.Node)
	// The nodes not handed over yet: copied into a batch only when they are, so that a point edit, whose few nodes
	// never fill one, costs an append and no copy.
	hashes []store.Hash
	raws   []string
	bytes  int
	sent   [][]store.Node // batches handed over: read only once last is closed
	last   chan struct{}  // closed when the last batch handed over is prepared
	// byHash is what wait returned, until a batch is handed over again: a merge asks for the nodes of each of its
	// conflicts.
	byHash map[store.Hash]store.Node
}

func (p *preparer) add(h store.Hash, raw string) {
	p.hashes, p.raws = append(p.hashes, h), append(p.raws, raw)
	if p.bytes += len(raw); p.bytes < prepareBatchBytes {
		return
	}
	batch := make([]store.Node, len(p.hashes))
	for i, h := range p.hashes {
		batch[i] = storeNode(h, p.raws[i])
	}
	p.hashes, p.raws, p.bytes = p.hashes[:0], p.raws[:0], 0
	prev, done := p.last, make(chan struct{})
	go func() {
		if prev != nil {
			<-prev
		}
		if p.ctx.Err() == nil {
			p.fn(batch)
		}
		close(done)
	}()
	p.sent, p.last, p.byHash = append(p.sent, batch), done, nil
}

// storeNode is the node raw at address h as a store takes it, marked incompressible if it is a node of hashes, so
// that no codec is tried on it.
func storeNode(h store.Hash, raw string) store.Node {
	return store.Node{Hash: h, Data: unsafeBytes(raw), Incompressible: codec.OfHashes(raw)}
}

// wait waits for the batches handed over and returns their nodes by address (nil if none was; p may be nil).
func (p *preparer) wait() map[store.Hash]store.Node {
	if p == nil || p.last == nil {
		return nil
	}
	if p.byHash == nil {
		<-p.last
		p.byHash = make(map[store.Hash]store.Node)
		for _, b := range p.sent {
			for _, n := range b {
				p.byHash[n.Hash] = n
			}
		}
	}
	return p.byHash
}

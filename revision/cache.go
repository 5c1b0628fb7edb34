package revision

import (
	"container/list"
	"sync"

	"github.com/strata-db/strata/revision/internal/codec"
	"github.com/strata-db/strata/store"
)

// NodeCache is a sharded LRU of decoded nodes, bounded in bytes. Nodes are immutable and addressed by content, so an
// entry is never invalidated, only evicted, and one cache can serve the forests of many databases (equal hashes are
// equal nodes wherever they are stored): a server then has one budget for all its databases. It is safe for
// concurrent use.
type NodeCache = nodeCache

// NewNodeCache returns a cache of decoded nodes of at most maxBytes (estimated as decoded; <= 0: no caching).
func NewNodeCache(maxBytes int64) *NodeCache { return newNodeCache(maxBytes) }

type nodeCache struct {
	shards [16]cacheShard
}

type cacheShard struct {
	mu           sync.Mutex
	max          int64
	bytes        int64
	ll           list.List
	m            map[store.Hash]*list.Element
	hits, misses uint64 // lookups, counted under mu
}

// CacheStats describes a cache: its lookups since it was made, and what it holds now.
type CacheStats struct {
	Hits, Misses uint64
	Entries      int
	Bytes        int64 // estimated, as decoded
	MaxBytes     int64
}

// Stats returns the cache's lookups so far and what it holds (for an operator's metrics).
func (c *nodeCache) Stats() CacheStats {
	var st CacheStats
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		st.Hits += s.hits
		st.Misses += s.misses
		st.Entries += len(s.m)
		st.Bytes += s.bytes
		st.MaxBytes += s.max
		s.mu.Unlock()
	}
	return st
}

type cacheItem struct {
	h store.Hash
	n *codec.Node
}

func newNodeCache(maxBytes int64) *nodeCache {
	c := &nodeCache{}
	for i := range c.shards {
		c.shards[i].max = maxBytes / int64(len(c.shards))
		c.shards[i].m = make(map[store.Hash]*list.Element)
	}
	return c
}

func (c *nodeCache) shard(h store.Hash) *cacheShard { return &c.shards[h[0]&15] }

func (c *nodeCache) get(h store.Hash) *codec.Node {
	s := c.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.m[h]; ok {
		s.hits++
		s.ll.MoveToFront(e)
		return e.Value.(*cacheItem).n
	}
	s.misses++
	return nil
}

func (c *nodeCache) put(h store.Hash, n *codec.Node) {
	s := c.shard(h)
	size := n.MemSize()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.max <= 0 || size > s.max {
		return
	}
	if _, ok := s.m[h]; ok {
		return
	}
	s.m[h] = s.ll.PushFront(&cacheItem{h: h, n: n})
	s.bytes += size
	for s.bytes > s.max {
		e := s.ll.Back()
		it := e.Value.(*cacheItem)
		s.ll.Remove(e)
		delete(s.m, it.h)
		s.bytes -= it.n.MemSize()
	}
}

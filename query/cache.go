package query

import (
	"container/list"
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// lru is a least-recently-used map bounded by the sum of its entries' costs. It is safe for concurrent use.
type lru[K comparable, V any] struct {
	mu    sync.Mutex
	max   int64
	used  int64
	order *list.List // front = most recent; elements hold *lruEntry
	items map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key  K
	val  V
	cost int64
}

func newLRU[K comparable, V any](max int64) *lru[K, V] {
	return &lru[K, V]{max: max, order: list.New(), items: map[K]*list.Element{}}
}

func (c *lru[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*lruEntry[K, V]).val, true
	}
	var zero V
	return zero, false
}

// put adds an entry, evicting the least recently used ones to make room. An entry costing more than the whole
// budget is not kept.
func (c *lru[K, V]) put(k K, v V, cost int64) {
	if cost > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		old := e.Value.(*lruEntry[K, V])
		c.used += cost - old.cost
		old.val, old.cost = v, cost
		c.order.MoveToFront(e)
	} else {
		c.items[k] = c.order.PushFront(&lruEntry[K, V]{k, v, cost})
		c.used += cost
	}
	for c.used > c.max {
		e := c.order.Back()
		ent := e.Value.(*lruEntry[K, V])
		c.order.Remove(e)
		delete(c.items, ent.key)
		c.used -= ent.cost
	}
}

func (c *lru[K, V]) stats() (n int, used int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items), c.used
}

// materialCache holds materialised values (Go values for gojq) by the hash of the Value they came from. Content
// addressing makes entries valid forever and across databases; gojq never modifies its input, so one materialised
// value serves any number of concurrent queries. Concurrent misses on one hash materialise it once.
type materialCache struct {
	lru *lru[store.Hash, material]

	mu          sync.Mutex
	loading     map[store.Hash]*loadCall
	slots       chan struct{}
	loadTimeout time.Duration
	stats       *engineStats // the engine's: lookups are counted there
}

type loadCall struct {
	done chan struct{}
	v    material
	err  error
}

// material is a materialised value and whether it holds a number too long for gojq to handle in bounded time.
type material struct {
	v    any
	long bool
}

// maxNumberText is the longest number text a program may meet in-process. gojq turns a number text that is not
// an int64 or a float into a *big.Int with big.Int.SetString, which takes time quadratic in its length (measured:
// 1,000,000 digits 3.1 s, 4,000,000 digits 31 s) in one uninterruptible step; a comparison with a stored number
// of megabytes of digits would ignore the deadline. Inputs holding a longer number run in a worker.
const maxNumberText = 10_000

// material walks a materialised value for long numbers.
func materialOf(x any) material {
	return material{v: x, long: hasLongNumber(x)}
}

func hasLongNumber(x any) bool {
	switch x := x.(type) {
	case json.Number:
		return len(x) > maxNumberText
	case []any:
		for _, e := range x {
			if hasLongNumber(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if hasLongNumber(e) {
				return true
			}
		}
	}
	return false
}

// materialFactor estimates the Go heap a materialised value takes per byte of its JSON text (measured: 4.0 on the
// docs/benchmarks.md workload of small objects, 438 MB for 109.6 MB of JSON).
const materialFactor = 4

// inlineSize is below what a value is materialised afresh rather than cached: small values (inline in their
// parent's node) are cheaper to decode than to hash.
const inlineSize = 1024

// loadSlots is how many materialisations for the cache may run at once.
const loadSlots = 2

func newMaterialCache(maxBytes int64, loadTimeout time.Duration) *materialCache {
	return &materialCache{lru: newLRU[store.Hash, material](maxBytes), loading: map[store.Hash]*loadCall{},
		slots: make(chan struct{}, loadSlots), loadTimeout: loadTimeout}
}

// materialize returns v as Go values, from the cache when it can; hit reports a cache hit. A nil cache
// materialises afresh.
func (m *materialCache) materialize(ctx context.Context, f *revision.Forest, v revision.Value) (x material, hit bool, err error) {
	if v.Size() < inlineSize {
		// Small values are cheaper to decode than to hash, and cannot hold a long number.
		y, err := f.Materialize(ctx, v)
		return material{v: y}, false, err
	}
	if m == nil || m.lru.max <= 0 {
		y, err := f.Materialize(ctx, v)
		if err != nil {
			return material{}, false, err
		}
		return materialOf(y), false, nil
	}
	h := v.Hash()
	if x, ok := m.lru.get(h); ok {
		m.count(true)
		return x, true, nil
	}
	m.mu.Lock()
	if c, ok := m.loading[h]; ok {
		m.mu.Unlock()
		m.count(true)
		select {
		case <-c.done:
			return c.v, true, c.err
		case <-ctx.Done():
			return material{}, false, ctx.Err()
		}
	}
	c := &loadCall{done: make(chan struct{})}
	m.loading[h] = c
	m.mu.Unlock()
	m.count(false)

	// Materialise in a goroutine of its own, under a context of its own: a caller whose deadline passes returns at
	// once, and the value still reaches the cache for the next query. At most loadSlots loads run at a time, and
	// each gives up after loadTimeout, so abandoned loads cannot pile up.
	go func() {
		defer func() {
			m.mu.Lock()
			delete(m.loading, h)
			m.mu.Unlock()
			close(c.done)
		}()
		m.slots <- struct{}{}
		defer func() { <-m.slots }()
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.loadTimeout)
		defer cancel()
		var y any
		if y, c.err = f.Materialize(lctx, v); c.err == nil {
			c.v = materialOf(y)
			m.lru.put(h, c.v, int64(v.Size())*materialFactor+256)
		}
	}()
	select {
	case <-c.done:
		return c.v, false, c.err
	case <-ctx.Done():
		return material{}, false, ctx.Err()
	}
}

func (m *materialCache) count(hit bool) {
	switch {
	case m.stats == nil:
	case hit:
		m.stats.matHits.Add(1)
	default:
		m.stats.matMisses.Add(1)
	}
}

package query

import "sync/atomic"

// Stats are what an engine did since it was made, for an operator's metrics (the package keeps no metrics of its
// own; the binary reads these when scraped).
type Stats struct {
	// Programs run, by route (Plan.Route): path reads without jq, bounded programs in-process, the rest in worker
	// processes. A query, a transform and each step of a bisect count once each.
	Read, InProcess, Worker uint64
	// ValueCacheHits and ValueCacheMisses count lookups of the cache of materialised values (inputs of
	// in-process programs, over 1 KiB); ValueCacheEntries and ValueCacheBytes are what it holds now.
	ValueCacheHits, ValueCacheMisses uint64
	ValueCacheEntries                int
	ValueCacheBytes                  int64
	// WorkersStarted counts worker processes started: the first ones, and every one after a worker ended.
	WorkersStarted uint64
	// Workers ended by the engine, by why: killed at the query's deadline, killed because its caller went away,
	// dead without an answer (over its memory limit, a crash), or retired after a query that let it grow.
	WorkersTimedOut, WorkersCanceled, WorkersCrashed, WorkersRetired uint64
}

// engineStats are the counters behind Stats.
type engineStats struct {
	read, inProcess, worker     atomic.Uint64
	matHits, matMisses          atomic.Uint64
	started                     atomic.Uint64
	timedOut, canceled, crashed atomic.Uint64
	retired                     atomic.Uint64
}

// Stats returns the engine's counts so far.
func (e *Engine) Stats() Stats {
	s := &e.stats
	st := Stats{Read: s.read.Load(), InProcess: s.inProcess.Load(), Worker: s.worker.Load(),
		ValueCacheHits: s.matHits.Load(), ValueCacheMisses: s.matMisses.Load(), WorkersStarted: s.started.Load(),
		WorkersTimedOut: s.timedOut.Load(), WorkersCanceled: s.canceled.Load(), WorkersCrashed: s.crashed.Load(),
		WorkersRetired: s.retired.Load()}
	if e.mat != nil {
		st.ValueCacheEntries, st.ValueCacheBytes = e.mat.lru.stats()
	}
	return st
}

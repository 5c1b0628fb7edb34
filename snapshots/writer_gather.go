package snapshots

import "time"

// gatherer decides whether the writer, holding the first requests of a group, waits a moment for more.
//
// With several callers committing in a loop, a group's callers are all answered at once, when its transaction is
// durable, and come back a few tens of microseconds later, while the writer has already started the next group
// with whichever request was queued: the groups alternate small and large (7, 1, 7, 1 with eight writers), and the
// small ones cost a whole fsync each. So, when the last round showed more than one caller, the writer waits for the
// callers it has just answered to queue again, until as many requests as it expects are queued, no new one has
// arrived for a while, or a fraction of the last transaction's time has passed, whichever comes first. The writer
// plans each request as it arrives (planner), so that the wait is not spent idle. A lone caller (serial commits)
// never waits: the writer expects no one else.
//
// Waiting changes only which requests share a transaction, never what a request's answer is or when it may be given:
// every answer still follows the durable commit of its own group.
//
// Measured (BenchmarkCommitConcurrent8, 2 CPUs, a transaction ≈ 0.7 ms): without the wait the writer is idle only
// ~5 µs per transaction but its groups run 7, 1, 7, 1 (3.9 commits per transaction); with it 8, 8, 8 (7.7), the wait
// costing ~0.2 ms of a ~0.9 ms round. Pipelining instead (planning the next group while one commits) keeps two
// groups of about four alternating on the disk. Built and measured on 2026-12-02 with eight writers on a
// 1,000,000-element document, where planning eight (~0.8 ms) takes as long as their transaction: a group of four
// committed no faster than one of eight (fsync-bound) and its planning competed for the two CPUs, so throughput
// stayed at ~3.5k commits/s either way, and it was not kept (docs/benchmarks.md).
type gatherer struct {
	expect int           // requests expected in the next group: the callers just answered and those already queued
	txTime time.Duration // smoothed duration of a group's transaction (mostly its two fsyncs)
}

const (
	// gatherFraction bounds a wait to txTime/gatherFraction: a wait that gathers nobody costs at most that much
	// latency, and one that gathers a single request already saves a whole transaction.
	gatherFraction = 2
	// gatherQuiet ends a wait when no request has arrived for txTime/gatherQuiet: the callers that were coming are in.
	gatherQuiet = 8
	gatherMax   = 5 * time.Millisecond // whatever the disk's speed
	gatherMin   = 20 * time.Microsecond
)

// wait reports whether the writer should wait for more requests, having n, and how long at most in all and
// between two arrivals.
func (g *gatherer) wait(n int) (total, quiet time.Duration, ok bool) {
	if g.expect <= n || g.txTime <= 0 {
		return 0, 0, false
	}
	total = min(g.txTime/gatherFraction, gatherMax)
	quiet = max(g.txTime/gatherQuiet, gatherMin)
	return total, quiet, true
}

// done records a round: n requests answered, queued more waiting, and the transactions took tx (0: none, as for a
// group answered without committing).
func (g *gatherer) done(n, queued int, tx time.Duration) {
	g.expect = n + queued
	if tx > 0 {
		if g.txTime == 0 {
			g.txTime = tx
		} else {
			g.txTime = (3*g.txTime + tx) / 4
		}
	}
}

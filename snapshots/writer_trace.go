package snapshots

import (
	"sync/atomic"
	"time"
)

// writerTrace, when set (by benchmarks), is told about every transaction the writer commits for a group: how many
// requests it carried, how long planning took, how long the transaction (with its fsync) took, and how long the
// writer had been idle (waiting for a request) before the group began.
type writerTrace struct {
	DB      *DB
	Commits int
	Plan    time.Duration
	Commit  time.Duration
	Idle    time.Duration
	Gather  time.Duration
	Arrived time.Duration // from the group's first request to its last, while gathering
}

var writerTraceHook atomic.Pointer[func(writerTrace)]

func traceWriter(t writerTrace) {
	if f := writerTraceHook.Load(); f != nil {
		(*f)(t)
	}
}

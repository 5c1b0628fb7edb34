// Package heapwatch samples the Go heap while a test runs something, for tests that bound memory (memory bounds
// may be asserted; times may not).
package heapwatch

import (
	"runtime"
	"sync"
	"time"
)

// Start collects garbage, notes the heap, and samples it every 5 ms until the returned stop is called, which
// answers how far the heap's peak rose above where it started, and the peak.
func Start() (stop func() (grew int64, peak uint64)) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, ms.HeapAlloc
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
		}
	}()
	return func() (int64, uint64) {
		close(done)
		wg.Wait()
		return int64(peak) - int64(base), peak
	}
}

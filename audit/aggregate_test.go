//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package audit

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func refusal(addr, decision string) Record {
	outcome := "UNAUTHENTICATED"
	if decision == DecisionRateLimited {
		outcome = "RATE_LIMITED"
	}
	return Record{Client: addr, Transport: TransportHTTP, Tool: "http", ArgsDigest: Digest(nil), Decision: decision, Outcome: outcome}
}

// TestAuditAggregator holds docs/security.md T21 at the library level: refused requests become one record per address
// and reason per interval, written when the interval closes and at Close; addresses past the bound share one
// record; the counts add up exactly, and the chain verifies.
func TestAuditAggregator(t *testing.T) {
	l, path := openTemp(t)
	a := NewAggregator(l, AggregateOptions{Interval: 100 * time.Millisecond, MaxAddrs: 3,
		Warn: func(err error) { t.Errorf("warning: %v", err) }})
	addrs := []string{"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.5"}
	sent := map[string]uint64{}
	var mu sync.Mutex
	burst := func(n int) {
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range n {
					d := DecisionUnauthenticated
					if i%3 == 0 {
						d = DecisionRateLimited
					}
					a.Add(refusal(addrs[(g+i)%len(addrs)], d))
					mu.Lock()
					sent[d]++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	burst(500)
	// The interval closes without another request, and without Close: the records are written.
	deadline := time.Now().Add(5 * time.Second)
	for len(readAll(t, path)) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	first := readAll(t, path)
	if len(first) == 0 {
		t.Fatal("no record written when the interval closed")
	}
	burst(250)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// After Close a refused request is appended at once.
	a.Add(refusal("192.0.2.9", DecisionUnauthenticated))
	sent[DecisionUnauthenticated]++

	recs := readAll(t, path)
	got := map[string]uint64{}
	others := 0
	for _, r := range recs {
		if r.Count == 0 {
			t.Fatalf("a record without a count: %+v", r)
		}
		got[r.Decision] += r.Count
		if r.Client == OtherAddresses {
			others++
		}
		if r.DurationMS < 0 || r.Principal != "" {
			t.Errorf("record %+v", r)
		}
	}
	if got[DecisionUnauthenticated] != sent[DecisionUnauthenticated] || got[DecisionRateLimited] != sent[DecisionRateLimited] {
		t.Fatalf("counts %v, want %v", got, sent)
	}
	// 3000 requests in at most a few intervals: 3 tracked addresses × 2 reasons + 2 "other" records each.
	if len(recs) > 3*8+1 || others == 0 {
		t.Fatalf("%d records (%d for other addresses) for %d requests", len(recs), others, sent[DecisionUnauthenticated]+sent[DecisionRateLimited])
	}
	if sum, err := VerifyLog(path, nil); err != nil || sum.Records != len(recs) {
		t.Fatalf("VerifyLog = %+v, %v", sum, err)
	}
	t.Logf("%d refused requests: %d records", sent[DecisionUnauthenticated]+sent[DecisionRateLimited], len(recs))
}

// failingLog fails its first fails appends.
type failingLog struct {
	mu    sync.Mutex
	fails int
	recs  []Record
}

func (f *failingLog) Append(r Record) (Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fails > 0 {
		f.fails--
		return r, errors.New("disk full")
	}
	f.recs = append(f.recs, r)
	return r, nil
}

func (f *failingLog) total() (n uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.recs {
		n += r.Count
	}
	return n
}

// TestAuditAggregatorKeepsFailedRecords: a record that cannot be written is kept, with its count, and written at the
// next interval; at Close, what still cannot be written is reported with the number of requests lost.
func TestAuditAggregatorKeepsFailedRecords(t *testing.T) {
	fl := &failingLog{fails: 1}
	var warnings []string
	var wmu sync.Mutex
	a := NewAggregator(fl, AggregateOptions{Interval: 30 * time.Millisecond, Warn: func(err error) {
		wmu.Lock()
		warnings = append(warnings, err.Error())
		wmu.Unlock()
	}})
	for range 10 {
		a.Add(refusal("192.0.2.1", DecisionUnauthenticated))
	}
	deadline := time.Now().Add(5 * time.Second)
	for fl.total() < 10 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := fl.total(); n != 10 {
		t.Fatalf("%d requests recorded after a failed append, want 10", n)
	}
	wmu.Lock()
	if len(warnings) != 1 || !strings.Contains(warnings[0], "kept for the next try") {
		t.Errorf("warnings %q", warnings)
	}
	wmu.Unlock()
	fl.mu.Lock()
	fl.fails = 1 << 30
	fl.mu.Unlock()
	for range 7 {
		a.Add(refusal("192.0.2.2", DecisionUnauthenticated))
	}
	if err := a.Close(); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("the records of %d refused request(s) are not in the log", 7)) {
		t.Fatalf("Close = %v", err)
	}
}

package audit

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Requests refused before authentication (docs/security.md T21). Anyone who can reach a server can send them, as
// fast as the network carries them: a record and an fsync for each would let an anonymous client fill the disk and
// saturate it. An Aggregator folds them into at most one record per address and reason per interval, whose Count
// says how many requests it stands for, written when the interval closes. It tracks a bounded number of
// addresses per interval; the requests of further addresses are counted in one record per reason whose client is
// OtherAddresses. Nothing is dropped: the counts add up to the requests refused, including those still pending
// when the Aggregator is closed. Only records of requests that no principal made belong here: an authenticated
// call's record is appended on its own, always.

// Defaults of an Aggregator.
const (
	// DefaultAggregateInterval is how long an Aggregator collects refused requests before writing their records.
	DefaultAggregateInterval = 10 * time.Second
	// DefaultAggregateAddrs is how many addresses an Aggregator tracks per interval.
	DefaultAggregateAddrs = 64
)

// OtherAddresses is the client of a record that counts the refused requests of the addresses past the
// Aggregator's bound.
const OtherAddresses = "(other addresses)"

// Appender is what an Aggregator writes its records to: a *Log.
type Appender interface {
	Append(Record) (Record, error)
}

// AggregateOptions configures an Aggregator.
type AggregateOptions struct {
	// Interval is how long requests are collected before their records are written (0: DefaultAggregateInterval).
	Interval time.Duration
	// MaxAddrs bounds the addresses tracked per interval (0: DefaultAggregateAddrs).
	MaxAddrs int
	// Warn hears of records that could not be written (they are kept, and tried again at the next interval).
	Warn func(error)
}

// Aggregator folds records of refused requests into one per address (the record's Client) and reason per
// interval. It is safe for concurrent use.
type Aggregator struct {
	log      Appender
	interval time.Duration
	maxAddrs int
	warn     func(error)
	now      func() time.Time

	mu      sync.Mutex
	pending map[aggKey]*aggEntry
	addrs   map[string]struct{} // addresses with an entry in pending
	timer   *time.Timer
	closed  bool

	flushMu sync.Mutex // one flush at a time
}

// aggKey is what makes two refused requests one record: everything but their times.
type aggKey struct {
	principal, client, transport, tool, database, argsDigest, decision, outcome string
}

type aggEntry struct {
	rec         Record // the first request's record
	first, last time.Time
	count       uint64
}

// NewAggregator returns an Aggregator writing to log.
func NewAggregator(log Appender, o AggregateOptions) *Aggregator {
	a := &Aggregator{log: log, interval: o.Interval, maxAddrs: o.MaxAddrs, warn: o.Warn, now: time.Now,
		pending: map[aggKey]*aggEntry{}, addrs: map[string]struct{}{}}
	if a.interval <= 0 {
		a.interval = DefaultAggregateInterval
	}
	if a.maxAddrs <= 0 {
		a.maxAddrs = DefaultAggregateAddrs
	}
	return a
}

// Add counts one refused request. Its record is written, with those of the same address and reason, when the
// interval closes. Add never blocks on the disk. After Close, the record is appended at once.
func (a *Aggregator) Add(rec Record) {
	now := a.now()
	if rec.Time.IsZero() {
		rec.Time = now
	}
	rec.Count, rec.DurationMS = 0, 0
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		rec.Count = 1
		if _, err := a.log.Append(rec); err != nil && a.warn != nil {
			a.warn(fmt.Errorf("audit: a refused request's record could not be appended: %w", err))
		}
		return
	}
	a.add(rec, rec.Time, rec.Time, 1)
	if a.timer == nil {
		a.timer = time.AfterFunc(a.interval, a.tick)
	}
	a.mu.Unlock()
}

// add counts n requests of rec's kind, from first to last; a.mu is held.
func (a *Aggregator) add(rec Record, first, last time.Time, n uint64) {
	if _, tracked := a.addrs[rec.Client]; !tracked && rec.Client != OtherAddresses {
		if len(a.addrs) >= a.maxAddrs {
			rec.Client = OtherAddresses
		} else {
			a.addrs[rec.Client] = struct{}{}
		}
	}
	k := aggKey{rec.Principal, rec.Client, rec.Transport, rec.Tool, rec.Database, rec.ArgsDigest, rec.Decision, rec.Outcome}
	e := a.pending[k]
	if e == nil {
		a.pending[k] = &aggEntry{rec: rec, first: first, last: last, count: n}
		return
	}
	e.count += n
	if first.Before(e.first) {
		e.first, e.rec.Time = first, first
	}
	if last.After(e.last) {
		e.last = last
	}
}

// tick closes an interval.
func (a *Aggregator) tick() {
	if err := a.flush(); err != nil && a.warn != nil {
		a.warn(err)
	}
}

// flush writes the records of the interval. A record that cannot be written goes back into the next interval.
func (a *Aggregator) flush() error {
	a.flushMu.Lock()
	defer a.flushMu.Unlock()
	a.mu.Lock()
	entries := make([]*aggEntry, 0, len(a.pending))
	for _, e := range a.pending {
		entries = append(entries, e)
	}
	clear(a.pending)
	clear(a.addrs)
	a.timer = nil
	a.mu.Unlock()
	sort.Slice(entries, func(i, j int) bool {
		if !entries[i].first.Equal(entries[j].first) {
			return entries[i].first.Before(entries[j].first)
		}
		return entries[i].rec.Client < entries[j].rec.Client
	})
	var errs []error
	for _, e := range entries {
		rec := e.rec
		rec.Time, rec.Count = e.first, e.count
		rec.DurationMS = float64(e.last.Sub(e.first).Microseconds()) / 1000
		if _, err := a.log.Append(rec); err != nil {
			errs = append(errs, err)
			a.mu.Lock()
			a.add(e.rec, e.first, e.last, e.count)
			if a.timer == nil && !a.closed {
				a.timer = time.AfterFunc(a.interval, a.tick)
			}
			a.mu.Unlock()
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("audit: %d record(s) of refused requests could not be appended (kept for the next try): %w", len(errs), errors.Join(errs...))
	}
	return nil
}

// Close writes the records still pending and makes later Adds append at once. It returns an error when some
// could not be written: their counts are then lost, and the error says how many requests they stood for.
func (a *Aggregator) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	if a.timer != nil {
		a.timer.Stop()
	}
	a.mu.Unlock()
	err := a.flush()
	if err == nil {
		return nil
	}
	a.mu.Lock()
	var lost uint64
	for _, e := range a.pending {
		lost += e.count
	}
	clear(a.pending)
	a.mu.Unlock()
	return fmt.Errorf("%w; at shutdown: the records of %d refused request(s) are not in the log", err, lost)
}

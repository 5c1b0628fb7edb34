package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/strata-db/strata/internal/filelock"
	"github.com/strata-db/strata/internal/nofollow"
)

// Shared is a Backend over a bbolt file that several processes use in turn: two MCP servers and a CLI command on
// one data directory must all work at once (docs/design.md §5).
//
// bbolt locks its file for one writing process at a time (flock), for as long as it is open. Shared therefore opens
// the file only while calls are in flight, keeps it a moment (Linger) in case more follow, and closes it. A process
// that finds the file held announces itself by holding a shared lock on a side file (PATH-wait) while it waits; the
// holder checks for such waiters whenever its calls drain, and after holding the file for MaxHold it stops taking
// new calls until the ones in flight finish, so that a busy process cannot starve the others. Writes serialise across
// processes through the file lock; each commit re-checks heads inside its transaction (package snapshots), so a
// commit from another process in between is never lost.
//
// A reopen reads only the meta pages: the full page-tree check runs on the first open in the process. The freelist
// is written at every commit (BoltOptions.SyncFreelist), so that a reopen does not scan the whole file to rebuild it.
type Shared struct {
	path string
	opts SharedOptions

	mu       sync.Mutex
	cond     *sync.Cond
	b        *Bolt
	users    int
	draining bool
	openedAt time.Time
	lastUse  time.Time
	walked   bool
	index    *nodeIndex // the node index, kept across reopens: a reopen loads only the chunks added since
	codec    Codec      // the file's NodeCodec as of its last open
	closed   bool
	wait     *os.File
	opens    int
	// checked is when othersWaiting last ran; lingering says a linger timer is pending.
	checked   time.Time
	lingering bool
	// dropped is set once a reopen found the file gone: another process dropped the database.
	dropped bool
}

// Dropped reports whether the file was found deleted (the database dropped, by this process or another) when it
// was to be opened again: a directory then opens the name anew.
func (s *Shared) Dropped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// waitCheckEvery bounds how often the holder asks whether other processes wait (two flock calls): a point read
// costs tens of microseconds, and asking on every one was a sixth of it. A waiter is noticed within this much of
// the holder's calls, or when they stop (Linger).
const waitCheckEvery = time.Millisecond

// othersWaitingNow is othersWaiting at most once per waitCheckEvery; in between it answers no.
func (s *Shared) othersWaitingNow() bool {
	now := time.Now()
	if now.Sub(s.checked) < waitCheckEvery {
		return false
	}
	s.checked = now
	return s.othersWaiting()
}

// SharedOptions tunes Shared. The zero value gives the defaults.
type SharedOptions struct {
	Bolt BoltOptions
	// Linger is how long the file stays open after the last call (default 20 ms).
	Linger time.Duration
	// MaxHold is how long the file is kept while other processes wait for it (default 100 ms).
	MaxHold time.Duration
	// MustExist opens only a file that exists: it is not created (a reopen never creates one either).
	MustExist bool
}

// OpenShared opens (creating if needed) and checks the database at path, then releases it until the first call.
func OpenShared(path string, opts *SharedOptions) (*Shared, error) {
	var o SharedOptions
	if opts != nil {
		o = *opts
	}
	if o.Linger <= 0 {
		o.Linger = 20 * time.Millisecond
	}
	if o.MaxHold <= 0 {
		o.MaxHold = 100 * time.Millisecond
	}
	w, err := nofollow.OpenFile(path+"-wait", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path+"-wait", err)
	}
	s := &Shared{path: path, opts: o, wait: w}
	s.cond = sync.NewCond(&s.mu)
	b, err := s.acquire()
	if err != nil {
		w.Close()
		return nil, err
	}
	s.release(nil)
	_ = b
	return s, nil
}

// Opens reports how many times the file was opened, for tests and diagnostics.
func (s *Shared) Opens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opens
}

func (s *Shared) acquire() (*Bolt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		switch {
		case s.closed:
			return nil, fmt.Errorf("%w: %s", ErrClosed, s.path)
		case s.b != nil && !s.draining:
			if time.Since(s.openedAt) > s.opts.MaxHold && s.othersWaitingNow() {
				s.draining = true
				continue
			}
			s.users++
			return s.b, nil
		case s.b != nil:
			s.cond.Wait() // draining: wait until it is closed, then reopen
		default:
			if err := s.open(); err != nil {
				return nil, err
			}
		}
	}
}

func (s *Shared) open() error {
	// Say that we wait, so that a process holding the file hands it over when its calls drain.
	_ = filelock.Lock(s.wait, false)
	o := s.opts.Bolt
	o.SyncFreelist = true
	o.skipTreeWalk = s.walked
	o.index = s.index
	if s.walked || s.opts.MustExist {
		// The file was there: if it is gone, the database was dropped, and bbolt must not make a new, empty one
		// under its name (found in review: the next call after a drop elsewhere brought the name back, empty).
		if _, err := os.Lstat(s.path); errors.Is(err, os.ErrNotExist) {
			_ = filelock.Unlock(s.wait)
			return s.droppedLocked()
		}
		open := o.openFile
		if open == nil {
			open = nofollow.OpenFile
		}
		o.openFile = func(name string, flag int, mode os.FileMode) (*os.File, error) {
			return open(name, flag&^os.O_CREATE, mode)
		}
	}
	b, err := OpenBolt(s.path, &o)
	if err != nil && (s.walked || s.opts.MustExist) && errors.Is(err, os.ErrNotExist) {
		_ = filelock.Unlock(s.wait)
		return s.droppedLocked()
	}
	_ = filelock.Unlock(s.wait)
	if err != nil {
		return err
	}
	s.b, s.walked, s.openedAt, s.index, s.codec = b, true, time.Now(), b.index, b.codec
	s.opens++
	return nil
}

// droppedLocked marks the file dropped and says so; s.mu is held.
func (s *Shared) droppedLocked() error {
	if s.walked {
		s.dropped = true
		return fmt.Errorf("%w: its file was deleted (here or by another process); open it again if it was made again", ErrDropped)
	}
	return fmt.Errorf("opening %s: %w", s.path, os.ErrNotExist)
}

// othersWaiting reports whether another process holds the wait lock.
func (s *Shared) othersWaiting() bool {
	free, err := filelock.TryLock(s.wait, true)
	switch {
	case err != nil:
		return false
	case !free:
		return true
	}
	_ = filelock.Unlock(s.wait)
	return false
}

func (s *Shared) release(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users--
	s.lastUse = time.Now()
	if errors.Is(err, ErrFailStop) {
		s.draining = true // reopen from what is durably on disk once the calls in flight end
	}
	if s.users > 0 || s.b == nil {
		return
	}
	if s.draining || s.closed || s.othersWaitingNow() {
		s.closeLocked()
		return
	}
	if !s.lingering {
		s.lingering = true
		time.AfterFunc(s.opts.Linger, s.lingerEnd)
	}
}

// lingerEnd closes the file once it has been unused for Linger, or waits the rest of that time. One timer at a
// time: a call's release does not start one of its own.
func (s *Shared) lingerEnd() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lingering = false
	if s.users > 0 || s.b == nil {
		return
	}
	if idle := time.Since(s.lastUse); idle < s.opts.Linger && !s.othersWaiting() {
		s.lingering = true
		time.AfterFunc(s.opts.Linger-idle, s.lingerEnd)
		return
	}
	s.closeLocked()
}

func (s *Shared) closeLocked() {
	_ = s.b.Close()
	s.b, s.draining = nil, false
	s.cond.Broadcast()
}

// Close waits for calls in flight and releases the file.
func (s *Shared) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for s.users > 0 {
		s.cond.Wait()
	}
	if s.b != nil {
		s.closeLocked()
	}
	return s.wait.Close()
}

// GetNodes implements NodeReader.
func (s *Shared) GetNodes(ctx context.Context, hs []Hash) ([][]byte, error) {
	b, err := s.acquire()
	if err != nil {
		return nil, err
	}
	out, err := b.GetNodes(ctx, hs)
	s.release(err)
	return out, err
}

// PutNodes implements NodeWriter.
func (s *Shared) PutNodes(ctx context.Context, ns []Node) (PutStats, error) {
	b, err := s.acquire()
	if err != nil {
		return PutStats{}, err
	}
	st, err := b.PutNodes(ctx, ns)
	s.release(err)
	return st, err
}

// View implements Backend.
func (s *Shared) View(ctx context.Context, fn func(CatalogReader) error) error {
	b, err := s.acquire()
	if err != nil {
		return err
	}
	err = b.View(ctx, fn)
	s.release(err)
	return err
}

// NodeCodec implements Backend: the file's, as of its last open (a file replaced since by one of another format
// re-encodes at PutNodes what it does not write).
func (s *Shared) NodeCodec() Codec {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.codec
}

// Update implements Backend.
func (s *Shared) Update(ctx context.Context, fn func(CatalogTx) error) error {
	b, err := s.acquire()
	if err != nil {
		return err
	}
	err = b.Update(ctx, fn)
	s.release(err)
	return err
}

var _ Backend = (*Shared)(nil)

// NodeHashes implements NodeLister.
func (s *Shared) NodeHashes(ctx context.Context, after *Hash, limit int) ([]Hash, error) {
	b, err := s.acquire()
	if err != nil {
		return nil, err
	}
	out, err := b.NodeHashes(ctx, after, limit)
	s.release(err)
	return out, err
}

var _ NodeLister = (*Shared)(nil)

// ReleaseMemory implements MemoryReleaser while the file is open; a closed file holds no map.
func (s *Shared) ReleaseMemory() error {
	s.mu.Lock()
	b := s.b
	if b == nil || s.draining || s.closed {
		s.mu.Unlock()
		return nil
	}
	s.users++
	s.mu.Unlock()
	err := b.ReleaseMemory()
	s.release(err)
	return err
}

var _ MemoryReleaser = (*Shared)(nil)

package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
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
	// dropped is set once a reopen found the file gone, or holding another database (born): the database was
	// dropped.
	dropped bool
	// born is the time of revision 1 of the database the file holds (zero until there is one): which database it is.
	// Revision 1 is never collected (every branch descends from it), and strata db copy keeps it.
	born time.Time
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

// handOverWait is how long, beyond MaxHold, a process about to open the file lets processes already waiting for it
// go first (open).
const handOverWait = 100 * time.Millisecond

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
	// A process that was waiting already goes first: it is polling for the file, and this one, reopening at once
	// after handing it over, would take it back before that process looked again (found in review: a process
	// writing without pause kept the file for seconds, and a CLI command's call failed with ErrLocked after 5 s).
	// Bounded, for a waiter that is itself waiting on a third process.
	for deadline := time.Now().Add(s.opts.MaxHold + handOverWait); s.othersWaiting() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
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
	if !sameFile(b.file, s.path) {
		// The file was deleted (the database dropped, RemoveShared) while this process waited for its lock: what it
		// holds is no longer the database's file.
		_ = b.Close()
		return s.droppedLocked()
	}
	born := firstRevisionTime(b)
	if s.walked && !s.born.IsZero() && !born.Equal(s.born) {
		// Another database under the name: this one was dropped and the name made again (by another process,
		// between this one's calls). The caller's state (heads it planned on, schemas, nodes it took as stored) is
		// the dropped database's: it must open the name anew, as PostgreSQL's backend says (found in review: a
		// write applied the dropped database's document to the new one, on nodes the new file does not hold).
		// A backup restored, or a copy (strata db copy) moved in, keeps revision 1, and goes on.
		_ = b.Close()
		return s.droppedLocked()
	}
	if s.born.IsZero() {
		s.born = born
	}
	s.b, s.walked, s.openedAt, s.index, s.codec = b, true, time.Now(), b.index, b.codec
	s.opens++
	return nil
}

// sameFile reports whether path still names f's file.
func sameFile(f *os.File, path string) bool {
	if f == nil {
		return true
	}
	a, err1 := f.Stat()
	b, err2 := os.Lstat(path)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// firstRevisionTime is the time of revision 1 in b, zero when there is none yet (or its record cannot be read:
// the damage is for the calls that read it to report).
func firstRevisionTime(b *Bolt) time.Time {
	var t time.Time
	_ = b.View(context.Background(), func(c CatalogReader) error {
		rec, err := c.Revision(1)
		if err == nil {
			t = rec.Time
		}
		return nil
	})
	return t
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
	if s.born.IsZero() && s.b.usable() == nil && !s.b.wedged.Load() {
		// Revision 1 was made while the file was open (a database being created): note it before letting go.
		s.born = firstRevisionTime(s.b)
	}
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

// RemoveShared deletes the database file at path (and its PATH-wait file) once no process holds it: it waits for
// the file as Shared does, announcing itself on PATH-wait so that a process using the file hands it over, and
// deletes it while it holds bbolt's lock, so that no process goes on committing to a file already deleted (found in
// review: a busy server kept acknowledging writes into the file of a database another process had dropped). A
// process that opens it next finds it gone (ErrDropped); one that opened it meanwhile notices that the path no
// longer names its file (Shared.open). The error matches os.ErrNotExist when there is no file, ErrLocked when it
// was not released within timeout (default 5 s).
func RemoveShared(path string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = defaultOpenTimeout
	}
	f, err := nofollow.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		// Not a file Shared would open (missing, a symbolic link, …): no process uses it; remove the name.
		_ = os.Remove(path + "-wait")
		return os.Remove(path)
	}
	defer f.Close()
	if w, err := nofollow.OpenFile(path+"-wait", os.O_RDWR|os.O_CREATE, 0o600); err == nil {
		_ = filelock.Lock(w, false)
		defer w.Close()
	}
	for deadline := time.Now().Add(timeout); ; time.Sleep(lockPoll) {
		ok, err := filelock.TryLock(f, true)
		if err != nil {
			return fmt.Errorf("locking %s: %w", path, err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			return lockedError(path, timeout)
		}
	}
	defer filelock.Unlock(f)
	if runtime.GOOS == "windows" {
		// An open file cannot be deleted there: let go of it first (a process may take it in between).
		_ = filelock.Unlock(f)
		_ = f.Close()
	}
	_ = os.Remove(path + "-wait")
	return os.Remove(path)
}

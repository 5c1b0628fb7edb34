package store

import (
	"os"
	"time"

	"github.com/strata-db/strata/internal/filelock"
)

// lockShared takes a shared lock on f, the lock bbolt's readers take, waiting up to timeout while a writer holds an
// exclusive one. OpenBolt holds it while it checks the file, so that it never reads meta pages that another process
// is in the middle of writing. Closing f releases it. internal/filelock takes the lock bbolt takes: flock(2) on
// Unix, and on Windows LockFileEx on the same byte range bbolt locks. Where there is neither, it does nothing, and
// bbolt's own lock (taken right after) is what reports the file as in use.
func lockShared(f *os.File, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := filelock.TryLock(f, false)
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return errLockTimeout
		}
		time.Sleep(lockPoll)
	}
}

// unlockFile drops any lock on f's open file. Closing f is not enough when bbolt failed half-way and left its memory
// map behind: the map holds a reference to the open file, and the lock lasts until the last one goes.
func unlockFile(f *os.File) {
	_ = filelock.Unlock(f)
}

// lockPoll is how often lockShared tries the lock. A process hands the file over by closing it and letting those
// already waiting open it first (Shared.open): the file is idle until the waiter looks again.
const lockPoll = 2 * time.Millisecond

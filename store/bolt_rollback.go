package store

import (
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// RollBackMeta mends a file whose newest bbolt meta page is damaged while the one before it is intact, which is what
// a crash in the middle of writing a meta page leaves (that commit was never acknowledged; damage to the file can
// leave the same): it opens the file as of the intact page's transaction and commits once, empty, which writes a
// fresh meta page over the damaged one, so that the file opens normally again. Whatever the damaged page recorded is
// dropped. It answers the transaction the file now starts from, and rolled false, having written nothing, when
// neither meta page was damaged. Any other damage is refused as OpenBolt refuses it.
func RollBackMeta(path string, timeout time.Duration) (txid uint64, rolled bool, err error) {
	if timeout <= 0 {
		timeout = defaultOpenTimeout
	}
	if _, err := os.Stat(path); err != nil {
		return 0, false, err
	}
	if err := checkBoltFile(path, timeout, false, true); err == nil {
		return 0, false, nil
	}
	b, err := OpenBolt(path, &BoltOptions{Timeout: timeout, AllowMetaRollback: true})
	if err != nil {
		return 0, false, err
	}
	err = b.db.Update(func(tx *bolt.Tx) error {
		txid = uint64(tx.ID())
		return nil
	})
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, false, fmt.Errorf("rolling %s back: %w", path, err)
	}
	return txid - 1, true, nil
}

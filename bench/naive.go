package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/itchyny/gojq"
	bolt "go.etcd.io/bbolt"
)

// naiveSystem is the in-repo baseline: a full copy of the JSON per revision in a bbolt bucket (fsync on). The
// application holds the document's elements in memory, changes one and writes the whole array again.
type naiveSystem struct {
	path  string
	db    *bolt.DB
	mu    sync.Mutex // the application's copy of the document
	elems [][]byte
	next  uint64 // the next revision key
	last  int64
}

var (
	naiveRevs     = []byte("revs")
	naiveLabels   = []byte("labels")
	naiveBranches = []byte("branches")
)

func (s *naiveSystem) open(_ context.Context, dir string) error {
	s.path = filepath.Join(dir, "baseline.db")
	db, err := bolt.Open(s.path, 0o600, nil)
	if err != nil {
		return err
	}
	s.db = db
	return db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{naiveRevs, naiveLabels, naiveBranches} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
}

func revKey(k uint64) []byte { return binary.BigEndian.AppendUint64(nil, k) }

func (s *naiveSystem) put(data []byte) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(naiveRevs)
		b.FillPercent = 1
		err := b.Put(revKey(s.next), data)
		s.next++
		return err
	})
}

func (s *naiveSystem) load(_ context.Context, d *doc) error {
	s.elems = make([][]byte, len(d.elems))
	copy(s.elems, d.elems)
	return s.put(d.json)
}

func (s *naiveSystem) commit(_ context.Context, _, i, score int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.elems[i] = element(i, score)
	data := joinElems(s.elems, false)
	s.last = int64(len(data))
	return s.put(data)
}

func (s *naiveSystem) lastNewBytes() int64 { return s.last }

func (s *naiveSystem) concurrentCommit(ctx context.Context, i, score int) error {
	return s.commit(ctx, 0, i, score)
}

func (s *naiveSystem) diskBytes(context.Context) (int64, error) {
	fi, err := os.Stat(s.path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (s *naiveSystem) usedBytes() (int64, error) { return boltUsedBytes(s.path) }

func (s *naiveSystem) label(bucket []byte, name string, k int) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(naiveRevs).Get(revKey(uint64(k))) == nil {
			return fmt.Errorf("revision %d: %w", k, errNotFound)
		}
		return tx.Bucket(bucket).Put([]byte(name), revKey(uint64(k)))
	})
}

func (s *naiveSystem) snapshot(_ context.Context, name string, k int) error {
	return s.label(naiveLabels, name, k)
}

func (s *naiveSystem) branch(_ context.Context, name string, k int) error {
	return s.label(naiveBranches, name, k)
}

// get returns revision k's JSON: a copy (raw bytes, unparsed).
func (s *naiveSystem) get(k int) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(naiveRevs).Get(revKey(uint64(k)))
		if v == nil {
			return fmt.Errorf("revision %d: %w", k, errNotFound)
		}
		out = bytes.Clone(v)
		return nil
	})
	return out, err
}

func (s *naiveSystem) readElement(_ context.Context, k, i int) ([]byte, error) {
	data, err := s.get(k)
	if err != nil {
		return nil, err
	}
	return elementOf(data, i)
}

func (s *naiveSystem) diff(_ context.Context, a, b int) (int, error) {
	x, err := s.get(a)
	if err != nil {
		return 0, err
	}
	y, err := s.get(b)
	if err != nil {
		return 0, err
	}
	return diffElems(x, y)
}

func (s *naiveSystem) export(_ context.Context, k int, w io.Writer) error {
	data, err := s.get(k)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// materialise is encoding/json.Unmarshal of the stored copy: docs/benchmarks.md's reference for Go values.
func (s *naiveSystem) materialise(_ context.Context, k int) (any, error) {
	data, err := s.get(k)
	if err != nil {
		return nil, err
	}
	var v any
	err = json.Unmarshal(data, &v)
	return v, err
}

func (s *naiveSystem) jq(ctx context.Context, k int) (int, error) {
	data, err := s.get(k)
	if err != nil {
		return 0, err
	}
	return gojqCount(ctx, data)
}

func (s *naiveSystem) close() error {
	if s.db != nil {
		return s.db.Close()
	}
	return nil
}

var jqCode = sync.OnceValues(func() (*gojq.Code, error) {
	q, err := gojq.Parse(jqProgram)
	if err != nil {
		return nil, err
	}
	return gojq.Compile(q)
})

// gojqCount runs the jq program with gojq on a JSON text, as the gojq command does: decode, then run.
func gojqCount(ctx context.Context, data []byte) (int, error) {
	code, err := jqCode()
	if err != nil {
		return 0, err
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return 0, err
	}
	it := code.RunWithContext(ctx, v)
	out, ok := it.Next()
	if !ok {
		return 0, fmt.Errorf("jq gave no result")
	}
	if err, ok := out.(error); ok {
		return 0, err
	}
	switch n := out.(type) {
	case int:
		return n, nil
	case float64:
		return int(n), nil
	}
	return strconv.Atoi(fmt.Sprint(out))
}

package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/strata-db/strata/internal/nofollow"
)

// ErrStop, returned by the fn of ReadNewest, stops it without an error.
var ErrStop = errors.New("stop")

// ReadNewest calls fn with each record of the log in r (size bytes long) that matches f, newest first, until fn
// returns an error (ErrStop ends it quietly) or maxScan records were read; it returns the seq of the last record
// it read (0 once it reached the beginning), so that a caller can continue below it. Only records whose seq is
// below before are read (0: from the newest). The file is read backwards, so the newest pages of a long log cost
// what they show, not the log's length. An incomplete last line is skipped, as Read skips it.
func ReadNewest(r io.ReaderAt, size int64, f Filter, before uint64, maxScan int, fn func(Record) error) (last uint64, err error) {
	const block = 64 << 10
	end := size
	var carry []byte // the start of a line whose beginning lies in an earlier block
	first := true
	scanned := 0
	for end > 0 || len(carry) > 0 {
		start := max(end-block, 0)
		buf := make([]byte, end-start, end-start+int64(len(carry)))
		if _, err := r.ReadAt(buf, start); err != nil && err != io.EOF {
			return last, err
		}
		buf = append(buf, carry...)
		end = start
		for {
			i := bytes.LastIndexByte(buf[:max(len(buf)-1, 0)], '\n')
			if i < 0 && start > 0 {
				if len(buf) > maxLine {
					return last, fmt.Errorf("audit log: a line longer than %d bytes: not a record", maxLine)
				}
				carry = buf
				break
			}
			line := buf[i+1:]
			buf = buf[:i+1]
			whole := len(line) > 0 && line[len(line)-1] == '\n'
			if first {
				first = false
				if !whole {
					if i < 0 {
						return 0, nil
					}
					continue // a torn append, never acknowledged
				}
			}
			line = bytes.TrimSuffix(line, []byte{'\n'})
			if len(line) > 0 {
				var rec Record
				if err := json.Unmarshal(line, &rec); err != nil {
					return last, fmt.Errorf("audit log: not a valid audit record: %v", err)
				}
				if before == 0 || rec.Seq < before {
					last = rec.Seq
					scanned++
					if f.Match(rec) {
						if err := fn(rec); err != nil {
							if errors.Is(err, ErrStop) {
								return last, nil
							}
							return last, err
						}
					}
					if maxScan > 0 && scanned >= maxScan {
						return last, nil
					}
				}
			}
			if i < 0 {
				return 0, nil
			}
		}
	}
	return 0, nil
}

// ReadNewest is the package's ReadNewest on the whole log l: its current file and then its rotated files, newest
// first, or its PostgreSQL table. maxScan bounds the records read in each file (in all, for the table).
func (l *Log) ReadNewest(ctx context.Context, f Filter, before uint64, maxScan int, fn func(Record) error) (last uint64, err error) {
	if l.table != nil {
		return l.table.readNewest(ctx, f, before, maxScan, fn)
	}
	// The current file is opened before the rotated ones are listed, as openLog does: a rotation in between then
	// shows as the current file under a rotated name (skipped), not as records of neither.
	var seen []os.FileInfo // the files already taken, newest first
	cur, err := nofollow.Open(l.path)
	switch {
	case err == nil:
		defer cur.Close()
		fi, err := cur.Stat()
		if err != nil {
			return 0, err
		}
		seen = append(seen, fi)
	case !errors.Is(err, os.ErrNotExist):
		return 0, err
	}
	rotated, err := rotatedFiles(l.path)
	if err != nil {
		return 0, err
	}
	var paths []string
	for i := len(rotated) - 1; i >= 0; i-- {
		fi, err := os.Stat(rotated[i].path)
		if err == nil && slices.ContainsFunc(seen, func(s os.FileInfo) bool { return os.SameFile(fi, s) }) {
			// A newer name of the same file (the current file, or a later rotated name: a rotation cut short left
			// this one behind): read it once.
			continue
		}
		if err == nil {
			seen = append(seen, fi)
		}
		if before == 0 || rotated[i].first < before { // a file whose records are all at or past before is skipped
			paths = append(paths, rotated[i].path)
		}
	}
	if cur != nil {
		fi := seen[0]
		last, err := ReadNewest(cur, fi.Size(), f, before, maxScan, fn)
		if err != nil || last != 0 {
			return last, err
		}
	}
	for _, path := range paths {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		last, err := readNewestFile(path, f, before, maxScan, fn)
		if err != nil || last != 0 {
			return last, err // stopped, or an error
		}
		// 0: this file's beginning was reached; the older file goes on below it.
	}
	return 0, nil
}

// readNewestFile is ReadNewest on the file at path; a file that does not exist (the current file just rotated, or
// no record yet) holds no records.
func readNewestFile(path string, f Filter, before uint64, maxScan int, fn func(Record) error) (uint64, error) {
	file, err := nofollow.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return 0, err
	}
	return ReadNewest(file, fi.Size(), f, before, maxScan, fn)
}

// readNewest reads the table newest first, a page at a time (each page read before fn sees its records, so that fn
// may use the pool too).
func (t *pgTable) readNewest(ctx context.Context, f Filter, before uint64, maxScan int, fn func(Record) error) (uint64, error) {
	below := int64(1<<63 - 1)
	if before != 0 {
		below = int64(min(before, 1<<63-1))
	}
	scanned := 0
	for {
		rows, err := t.pool.Query(ctx, `SELECT line FROM strata_audit WHERE seq < $1 ORDER BY seq DESC LIMIT $2`, below, pgPage)
		if err != nil {
			return 0, fmt.Errorf("reading the audit log: %w", err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return 0, fmt.Errorf("reading the audit log: %w", err)
		}
		for _, line := range lines {
			var rec Record
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				return 0, fmt.Errorf("audit log: not a valid audit record: %v", err)
			}
			scanned++
			if f.Match(rec) {
				if err := fn(rec); err != nil {
					if errors.Is(err, ErrStop) {
						return rec.Seq, nil
					}
					return rec.Seq, err
				}
			}
			if maxScan > 0 && scanned >= maxScan {
				return rec.Seq, nil
			}
			below = int64(rec.Seq)
		}
		if len(lines) < pgPage {
			return 0, nil
		}
	}
}

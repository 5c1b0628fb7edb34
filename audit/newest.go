package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/strata-db/strata/internal/nofollow"
)

// chain checks records in order, across the files of a log.
type chain struct {
	key   *Key
	seq   uint64 // the seq of the last record checked (0 before the first)
	prev  string // its hash
	keyID string // the chain's key id, from its first keyed record on
	n     int    // records checked
	// where the last record was, for errors about links between files
	lastFile string
	lastLine int
}

// file checks the records of one file of the log; name is the file's name in errors ("" for a single stream).
// first and last are the seq range of the file, as well as known: the first record's seq and the last one's.
func (c *chain) file(r io.Reader, name string) (first, last uint64, err error) {
	prevFile := c.lastFile
	err = lines(r, func(i int, line []byte, whole bool) error {
		bad := func(format string, args ...any) error {
			return &VerifyError{File: name, Line: i, Problem: fmt.Sprintf(format, args...)}
		}
		if !whole {
			return bad("incomplete last line (no newline at the end): an append was cut short, or the file was cut; the %d records before it are intact, and the next append removes it", i-1)
		}
		if len(line) == 0 {
			return bad("empty line: a line was inserted, or a record was blanked")
		}
		var rec Record
		if err := json.Unmarshal(line, &rec); err != nil {
			return bad("not a valid audit record (%v): the line was edited or inserted", err)
		}
		canon, err := rec.MarshalJSON()
		if err != nil {
			return bad("not a valid audit record (%v)", err)
		}
		if !bytes.Equal(canon, line) {
			return bad("not in canonical form: the line was edited")
		}
		var key *Key
		switch {
		case rec.KeyID == "" && c.keyID != "":
			return bad("not keyed, but the records before it are (key id %s): the chain was rewritten without its key", c.keyID)
		case rec.KeyID != "" && c.key == nil:
			return &KeyError{File: name, Line: i, KeyID: rec.KeyID}
		case rec.KeyID != "" && rec.KeyID != c.key.ID():
			return &KeyError{File: name, Line: i, KeyID: rec.KeyID, Given: c.key.ID()}
		case rec.KeyID != "":
			key = c.key
		}
		want, err := hashWith(rec, key)
		if err != nil {
			return bad("%v", err)
		}
		if rec.Hash != want {
			if key != nil {
				return bad("hash does not match the record (HMAC with the key): the line was edited, or forged without the key")
			}
			return bad("hash does not match the record: the line was edited")
		}
		next := c.seq + 1
		after := ""
		if i == 1 && c.seq > 0 {
			after = fmt.Sprintf(" (it follows the last record of %s)", prevFile)
		}
		switch {
		case rec.Seq > next && i == 1 && c.seq == 0:
			return bad("seq is %d, want 1: the log begins at record %d, and records 1–%d are missing: older files were removed, or the beginning was cut off", rec.Seq, rec.Seq, rec.Seq-1)
		case rec.Seq > next && i == 1:
			return bad("seq is %d, want %d%s: %d record(s) are missing: a rotated file was removed, or records were deleted", rec.Seq, next, after, rec.Seq-next)
		case rec.Seq > next:
			return bad("seq is %d, want %d: %d record(s) before it were deleted, or lines were reordered", rec.Seq, next, rec.Seq-next)
		case rec.Seq < next:
			return bad("seq is %d, want %d%s: a line was inserted before it, or lines were reordered", rec.Seq, next, after)
		}
		if rec.Prev != c.prev {
			switch {
			case c.seq == 0:
				return bad("the first record links to a previous one: the beginning of the log was cut off")
			case i == 1:
				return bad("prev does not match the hash of the last record of %s: that record, or this file, was replaced", prevFile)
			}
			return bad("prev does not match the hash of line %d: the line before it was replaced", i-1)
		}
		if i == 1 {
			first = rec.Seq
		}
		last = rec.Seq
		c.seq, c.prev, c.n, c.lastFile, c.lastLine = rec.Seq, rec.Hash, c.n+1, name, i
		if rec.KeyID != "" {
			c.keyID = rec.KeyID
		}
		return nil
	})
	return first, last, err
}

// end checks what only the whole log shows: given a key, the log must be keyed (its last record), else it was
// never keyed or was rewritten without the key.
func (c *chain) end() error {
	if c.key != nil && c.keyID == "" && c.n > 0 {
		return &VerifyError{File: c.lastFile, Line: c.lastLine, Problem: fmt.Sprintf(
			"no record is keyed, but a key was given (key id %s): the log was never keyed, or it was rewritten without its key (to check it as an unkeyed log, verify it without the key)", c.key.ID())}
	}
	return nil
}

// Verify reads a whole audit log from one stream (a log that was never rotated, or its current file when it was
// not) and checks its chain: every line is a record in canonical form, seq counts the records from 1, prev is the
// previous record's hash and hash matches the record. It returns the number of records that check out; the error,
// a *VerifyError, names the first bad line and what is wrong with it, and a *KeyError says that the chain is keyed
// from that line on (VerifyWith checks it); an I/O error is returned as it is.
func Verify(r io.Reader) (n int, err error) { return VerifyWith(r, nil) }

// VerifyWith is Verify of a chain that may be keyed with key (nil: unkeyed). Unkeyed records may come before the
// first keyed one (a log that was keyed from some point on), never after it; given a key, the log's last record
// must be keyed.
func VerifyWith(r io.Reader, key *Key) (n int, err error) {
	c := &chain{key: key}
	if _, _, err := c.file(r, ""); err != nil {
		return c.n, err
	}
	return c.n, c.end()
}

// Summary is what VerifyLog checked.
type Summary struct {
	Records int      // records whose chain checks out
	Files   []string // the files read, oldest first
	First   uint64   // seq of the first record (1 unless older files were removed: VerifyLog then fails)
	Last    uint64   // seq of the last record
	KeyID   string   // the key id of the chain, "" when it is not keyed
}

// logFile is one file of a log, open for reading.
type logFile struct {
	f           *os.File
	path        string
	rotated     bool
	first, last uint64 // the seq range its name says (rotated files)
}

// openLog opens the files of the log at path, oldest first. The current file is opened first, so that a rotation
// while the files are listed cannot hide records: a rotated file that is the same file as the current one (it
// was rotated meanwhile, or a rotation was cut short) is left out. No files means no log. The caller closes them.
func openLog(path string) ([]logFile, error) {
	var cur *os.File
	var curInfo os.FileInfo
	if f, err := nofollow.Open(path); err == nil {
		if curInfo, err = f.Stat(); err != nil {
			f.Close()
			return nil, err
		}
		cur = f
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var out []logFile
	closeAll := func() {
		for _, lf := range out {
			lf.f.Close()
		}
		if cur != nil {
			cur.Close()
		}
	}
	rs, err := rotatedFiles(path)
	if err != nil {
		closeAll()
		return nil, err
	}
	var prevInfo os.FileInfo
	for _, r := range rs {
		f, err := nofollow.Open(r.path)
		if errors.Is(err, os.ErrNotExist) {
			continue // removed since it was listed
		}
		if err != nil {
			closeAll()
			return nil, err
		}
		fi, err := f.Stat()
		if err == nil && curInfo != nil && os.SameFile(fi, curInfo) {
			f.Close()
			continue
		}
		if n := len(out); err == nil && n > 0 && prevInfo != nil && os.SameFile(fi, prevInfo) {
			// One file under two rotated names: a rotation cut short left the shorter one, and a later rotation
			// gave it the longer (its records went on meanwhile). Read it once, under the later name.
			out[n-1].f.Close()
			out = out[:n-1]
		}
		prevInfo = fi
		out = append(out, logFile{f: f, path: r.path, rotated: true, first: r.first, last: r.last})
	}
	if cur != nil {
		out = append(out, logFile{f: cur, path: path})
	}
	return out, nil
}

// VerifyLog checks the chain of the whole log at path: its rotated files, oldest first, then the current file, as
// one chain (each file's first record follows the last record of the file before it), and that each rotated file
// holds the records its name says. key is the key of a keyed chain (nil: unkeyed; a keyed record then stops the
// check with a *KeyError). Errors are as VerifyWith's, naming the file. A missing log verifies, with no records.
func VerifyLog(path string, key *Key) (Summary, error) {
	files, err := openLog(path)
	if err != nil {
		return Summary{}, err
	}
	defer func() {
		for _, lf := range files {
			lf.f.Close()
		}
	}()
	c := &chain{key: key}
	var sum Summary
	for _, lf := range files {
		sum.Files = append(sum.Files, lf.path)
		first, last, err := c.file(lf.f, lf.path)
		sum.Records, sum.Last = c.n, c.seq
		if sum.First == 0 {
			sum.First = first
		}
		if err != nil {
			return sum, err
		}
		if lf.rotated && (first != lf.first || last != lf.last) {
			held := "no records"
			if first > 0 {
				held = fmt.Sprintf("records %d–%d", first, last)
			}
			return sum, &VerifyError{File: lf.path, Line: 1, Problem: fmt.Sprintf(
				"holds %s, but its name says %d–%d: the file was renamed, cut or edited", held, lf.first, lf.last)}
		}
	}
	sum.KeyID = c.keyID
	return sum, c.end()
}

// ReadLog is Read over the whole log at path: its rotated files, oldest first, then the current file. A missing
// log has no records. A line that is not a record stops it with a *VerifyError naming the file.
func ReadLog(path string, f Filter, fn func(Record) error) error {
	files, err := openLog(path)
	if err != nil {
		return err
	}
	defer func() {
		for _, lf := range files {
			lf.f.Close()
		}
	}()
	for _, lf := range files {
		err := Read(lf.f, f, fn)
		var ve *VerifyError
		if errors.As(err, &ve) && ve.File == "" {
			ve.File = lf.path
		}
		if err != nil {
			return err
		}
	}
	return nil
}

package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/strata-db/strata/internal/nofollow"
)

// Rotation (see the package documentation). The current file is always at the log's path. Rotating it, an appender
// holding its lock writes the record that does not fit into a new file (path + ".rotating", which only the holder
// of the current file's lock touches), fsyncs it, gives the current file its rotated name as a second link, and
// renames the new file over the path: the path names the old file or the new one at every instant, never nothing,
// and the new file holds its first record, chained to the old file's last, before anyone can see it. Appenders
// waiting for the old file's lock then find that the path names another file, and reopen it (Log.lock).
//
// A crash in between leaves either nothing done (the temporary file is overwritten by the next rotation), or the
// old file under both names (the next rotation finds its link already made; readers skip the duplicate).

// rotatingSuffix names the file a rotation prepares.
const rotatingSuffix = ".rotating"

// RotatedName is the name the current file at path gets when it is rotated, holding records first to last:
// audit.log becomes audit-<first>-<last>.log, in the same directory.
func RotatedName(path string, first, last uint64) string {
	dir, base := filepath.Split(path)
	ext := filepath.Ext(base)
	return filepath.Join(dir, fmt.Sprintf("%s-%d-%d%s", strings.TrimSuffix(base, ext), first, last, ext))
}

// parseRotated reads the seq range out of a rotated file's name (base: audit-<first>-<last>.log).
func parseRotated(path, name string) (first, last uint64, ok bool) {
	base := filepath.Base(path)
	ext := filepath.Ext(base)
	rest, ok := strings.CutPrefix(name, strings.TrimSuffix(base, ext)+"-")
	if !ok {
		return 0, 0, false
	}
	if rest, ok = strings.CutSuffix(rest, ext); !ok {
		return 0, 0, false
	}
	a, b, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, 0, false
	}
	first, err1 := strconv.ParseUint(a, 10, 64)
	last, err2 := strconv.ParseUint(b, 10, 64)
	// The canonical spelling only: no sign, no leading zeros.
	if err1 != nil || err2 != nil || a != strconv.FormatUint(first, 10) || b != strconv.FormatUint(last, 10) || first == 0 || last < first {
		return 0, 0, false
	}
	return first, last, true
}

// rotatedFile is a rotated file of a log.
type rotatedFile struct {
	path        string
	first, last uint64
}

// rotatedFiles lists the rotated files of the log at path, oldest first.
func rotatedFiles(path string) ([]rotatedFile, error) {
	dir := filepath.Dir(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []rotatedFile
	for _, e := range entries {
		if first, last, ok := parseRotated(path, e.Name()); ok && e.Type().IsRegular() {
			out = append(out, rotatedFile{path: filepath.Join(dir, e.Name()), first: first, last: last})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].first != out[j].first {
			return out[i].first < out[j].first
		}
		return out[i].last < out[j].last
	})
	return out, nil
}

// Files lists the files of the log at path, oldest first: its rotated files, then the current file (when it
// exists). An empty list means there is no log.
func Files(path string) ([]string, error) {
	rs, err := rotatedFiles(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range rs {
		out = append(out, r.path)
	}
	if _, err := os.Stat(path); err == nil {
		out = append(out, path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return out, nil
}

// rotate moves the current file (l.f, locked, last record lastSeq) to its rotated name and makes line the first
// record of a new current file. written says whether line is in the log (in the new file): when it is not, err
// says why and nothing changed, and the caller appends line to the current file instead.
func (l *Log) rotate(line []byte, lastSeq uint64) (written bool, err error) {
	first, err := firstSeq(l.f)
	if err != nil {
		return false, fmt.Errorf("audit: not rotating %s (reading its first record: %v); it grows past its size limit", l.path, err)
	}
	dst := RotatedName(l.path, first, lastSeq)
	tmp := l.path + rotatingSuffix
	nf, err := nofollow.OpenFile(tmp, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return false, fmt.Errorf("audit: not rotating %s: %w; it grows past its size limit", l.path, err)
	}
	fail := func(err error) (bool, error) {
		nf.Close()
		os.Remove(tmp)
		return false, fmt.Errorf("audit: not rotating %s: %w; it grows past its size limit", l.path, err)
	}
	if err := nf.Chmod(0o600); err != nil {
		return fail(err)
	}
	if _, err := nf.Write(line); err != nil {
		return fail(err)
	}
	if err := nf.Sync(); err != nil {
		return fail(err)
	}
	if err := os.Link(l.path, dst); err != nil {
		// A rotation cut short by a crash may have made this very link already.
		held, herr := l.f.Stat()
		fi, serr := os.Lstat(dst)
		if !errors.Is(err, os.ErrExist) || herr != nil || serr != nil || !os.SameFile(held, fi) {
			return fail(err)
		}
	}
	if err := os.Rename(tmp, l.path); err != nil {
		os.Remove(dst) // the current file keeps its own name: nothing is lost
		return fail(err)
	}
	// A rotation cut short by a crash may have left this file under an older, shorter name too: only dst stays.
	if held, err := l.f.Stat(); err == nil {
		if rs, err := rotatedFiles(l.path); err == nil {
			for _, r := range rs {
				if fi, err := os.Lstat(r.path); err == nil && r.path != dst && os.SameFile(fi, held) {
					os.Remove(r.path)
				}
			}
		}
	}
	l.f = nf
	if err := syncDir(filepath.Dir(l.path)); err != nil {
		return true, fmt.Errorf("audit: rotating %s: syncing its directory: %w", l.path, err)
	}
	return true, nil
}

// firstSeq is the seq of the first record of f.
func firstSeq(f *os.File) (uint64, error) {
	var buf []byte
	chunk := make([]byte, 4096)
	for off := int64(0); len(buf) <= maxLine; {
		n, err := f.ReadAt(chunk, off)
		buf = append(buf, chunk[:n]...)
		off += int64(n)
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			var r Record
			if err := json.Unmarshal(buf[:i], &r); err != nil {
				return 0, err
			}
			return r.Seq, nil
		}
		if err == io.EOF {
			return 0, errors.New("no whole first line")
		}
		if err != nil {
			return 0, err
		}
	}
	return 0, errors.New("the first line is too long")
}

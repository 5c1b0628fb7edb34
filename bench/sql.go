package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// shell drives a SQL command-line client (sqlite3, psql) over pipes: one long-lived process, so that each
// statement costs a round trip, not a process start. Its stdout and stderr share one pipe; after each request the
// shell prints a sentinel line, and whatever came before it is the answer (or the error).
type shell struct {
	cmd      *exec.Cmd
	in       io.WriteCloser
	out      *bufio.Reader
	sentinel string // the statement that prints endMark
	isError  func(line string) bool
	mu       sync.Mutex
}

const endMark = "BENCH-END-7f3a"

func startShell(cmd *exec.Cmd, sentinel string, isError func(string) bool) (*shell, error) {
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, err
	}
	pw.Close()
	return &shell{cmd: cmd, in: in, out: bufio.NewReaderSize(pr, 1<<20), sentinel: sentinel, isError: isError}, nil
}

// exec sends SQL (one or more statements) and returns the lines printed, without their newlines. w, when set,
// receives the output instead (the lines are then not kept).
func (s *shell) exec(sql string, w io.Writer) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := io.WriteString(s.in, sql+"\n"+s.sentinel+"\n"); err != nil {
		return nil, err
	}
	var lines []string
	var errs []string
	for {
		line, err := s.out.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A long line (a whole document): pass it through in pieces.
			if w != nil {
				if _, err := w.Write(line); err != nil {
					return nil, err
				}
				continue
			}
			rest, err := s.out.ReadBytes('\n')
			if err != nil {
				return nil, err
			}
			line = append(bytes.Clone(line), rest...)
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(s.cmd.Path), err)
		}
		text := strings.TrimRight(string(line), "\n")
		if text == endMark {
			break
		}
		if s.isError(text) || len(errs) > 0 {
			errs = append(errs, text)
			continue
		}
		if w != nil {
			if _, err := w.Write(line); err != nil {
				return nil, err
			}
			continue
		}
		lines = append(lines, text)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %s", filepath.Base(s.cmd.Path), strings.Join(errs, " / "))
	}
	return lines, nil
}

// one runs a query whose answer is one line.
func (s *shell) one(sql string) (string, error) {
	lines, err := s.exec(sql, nil)
	if err != nil {
		return "", err
	}
	if len(lines) != 1 {
		return "", fmt.Errorf("%q: %d lines of output: %.200q", sql, len(lines), lines)
	}
	return lines[0], nil
}

func (s *shell) count(sql string) (int, error) {
	line, err := s.one(sql)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(line))
}

func (s *shell) close() error {
	s.in.Close()
	return s.cmd.Wait()
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// shellPool holds the client sessions of (j): one per concurrent writer, opened on first use, each used by one
// writer at a time.
type shellPool struct {
	open func() (*shell, error)
	mu   sync.Mutex
	idle []*shell
	all  []*shell
}

// exec runs sql on an idle session, opening one if none is idle.
func (p *shellPool) exec(sql string) error {
	p.mu.Lock()
	var sh *shell
	if n := len(p.idle); n > 0 {
		sh, p.idle = p.idle[n-1], p.idle[:n-1]
	}
	p.mu.Unlock()
	if sh == nil {
		var err error
		if sh, err = p.open(); err != nil {
			return err
		}
		p.mu.Lock()
		p.all = append(p.all, sh)
		p.mu.Unlock()
	}
	_, err := sh.exec(sql, nil)
	p.mu.Lock()
	p.idle = append(p.idle, sh)
	p.mu.Unlock()
	return err
}

// warm opens sessions until n are open (all idle): what the writers of (j) will use, opened before it is timed.
func (p *shellPool) warm(n int) error {
	for {
		p.mu.Lock()
		have := len(p.all)
		p.mu.Unlock()
		if have >= n {
			return nil
		}
		sh, err := p.open()
		if err != nil {
			return err
		}
		p.mu.Lock()
		p.all = append(p.all, sh)
		p.idle = append(p.idle, sh)
		p.mu.Unlock()
	}
}

func (p *shellPool) close() {
	for _, sh := range p.all {
		sh.close()
	}
	p.all, p.idle = nil, nil
}

// ---------------------------------------------------------------------------------------------------------------

// sqliteSystem is SQLite through the sqlite3 shell: a history table holding the whole document per revision, WAL,
// synchronous=FULL. A commit is one INSERT … SELECT json_set(…) of the newest row.
type sqliteSystem struct {
	bin     string
	path    string
	sh      *shell
	writers shellPool // (j): more sqlite3 processes on the same file
}

func (s *sqliteSystem) open(_ context.Context, dir string) error {
	s.path = filepath.Join(dir, "bench.sqlite")
	s.writers.open = s.writer
	sh, err := s.startShell()
	if err != nil {
		return err
	}
	s.sh = sh
	_, err = sh.exec(`PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;
CREATE TABLE history(rev INTEGER PRIMARY KEY, doc TEXT NOT NULL);
CREATE TABLE labels(name TEXT PRIMARY KEY, rev INTEGER NOT NULL);
CREATE TABLE branches(name TEXT PRIMARY KEY, rev INTEGER NOT NULL);`, nil)
	return err
}

func (s *sqliteSystem) startShell() (*shell, error) {
	return startShell(exec.Command(s.bin, "-batch", s.path), "SELECT '"+endMark+"';", func(l string) bool {
		return strings.HasPrefix(l, "Error") || strings.HasPrefix(l, "Parse error") || strings.HasPrefix(l, "Runtime error")
	})
}

func (s *sqliteSystem) load(_ context.Context, d *doc) error {
	_, err := s.sh.exec(fmt.Sprintf("INSERT INTO history VALUES(0, CAST(readfile(%s) AS TEXT));", sqlString(d.file)), nil)
	return err
}

func (s *sqliteSystem) commit(_ context.Context, k, i, score int) error {
	_, err := s.sh.exec(fmt.Sprintf("INSERT INTO history SELECT %d, json_set(doc, '$[%d].score', %d) FROM history WHERE rev = %d;", k, i, score, k-1), nil)
	return err
}

func (s *sqliteSystem) diskBytes(context.Context) (int64, error) {
	var n int64
	for _, p := range []string{s.path, s.path + "-wal", s.path + "-shm"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n, nil
}

func (s *sqliteSystem) snapshot(_ context.Context, name string, k int) error {
	_, err := s.sh.exec(fmt.Sprintf("INSERT INTO labels SELECT %s, rev FROM history WHERE rev = %d;", sqlString(name), k), nil)
	return err
}

func (s *sqliteSystem) branch(_ context.Context, name string, k int) error {
	_, err := s.sh.exec(fmt.Sprintf("INSERT INTO branches SELECT %s, rev FROM history WHERE rev = %d;", sqlString(name), k), nil)
	return err
}

func (s *sqliteSystem) readElement(_ context.Context, k, i int) ([]byte, error) {
	line, err := s.sh.one(fmt.Sprintf("SELECT json_extract(doc, '$[%d]') FROM history WHERE rev = %d;", i, k))
	return []byte(line), err
}

func (s *sqliteSystem) diff(_ context.Context, a, b int) (int, error) {
	return s.sh.count(fmt.Sprintf(`SELECT count(*) FROM (
SELECT key, value FROM json_each((SELECT doc FROM history WHERE rev = %d))
EXCEPT SELECT key, value FROM json_each((SELECT doc FROM history WHERE rev = %d)));`, b, a))
}

func (s *sqliteSystem) export(_ context.Context, k int, w io.Writer) error {
	_, err := s.sh.exec(fmt.Sprintf("SELECT doc FROM history WHERE rev = %d;", k), w)
	return err
}

func (s *sqliteSystem) jq(_ context.Context, k int) (int, error) {
	return s.sh.count(fmt.Sprintf("SELECT count(*) FROM history, json_each(history.doc) AS e WHERE history.rev = %d AND json_extract(e.value, '$.score') > 90;", k))
}

// concurrentCommit makes one more revision from its own sqlite3 process. SQLite lets one writer in at a time:
// the others wait on its lock (busy_timeout), and each commit is its own WAL fsync.
func (s *sqliteSystem) concurrentCommit(_ context.Context, i, score int) error {
	return s.writers.exec(fmt.Sprintf("BEGIN IMMEDIATE; INSERT INTO history SELECT rev+1, json_set(doc, '$[%d].score', %d) FROM history WHERE rev = (SELECT max(rev) FROM history); COMMIT;", i, score))
}

func (s *sqliteSystem) prepareConcurrent(_ context.Context, writers int) error {
	return s.writers.warm(writers)
}

// writer opens a sqlite3 process for (j): durable commits, and a wait for the write lock instead of an error.
func (s *sqliteSystem) writer() (*shell, error) {
	sh, err := s.startShell()
	if err != nil {
		return nil, err
	}
	if _, err := sh.exec("PRAGMA synchronous=FULL; PRAGMA busy_timeout=600000;", nil); err != nil {
		sh.close()
		return nil, err
	}
	return sh, nil
}

func (s *sqliteSystem) close() error {
	s.writers.close()
	if s.sh != nil {
		return s.sh.close()
	}
	return nil
}

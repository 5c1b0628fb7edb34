// Package audit is Strata's audit log (docs/design.md §4, docs/security.md T12): one JSON line per MCP or CLI call —
// allowed, asked, denied, failed — appended to <data dir>/audit.log and chained by hashes so that an edited,
// deleted, inserted or reordered line is found by Verify.
//
// # Records
//
// A Record says who called which tool, on which database, how it was decided and how it ended. It holds a digest
// of the arguments, never the arguments themselves: no document values, no tokens, no secrets. There is no field
// that could carry them.
//
// # Line format and hash chain
//
// Each record is one line: its canonical JSON followed by '\n'. The canonical JSON of a record is compact JSON
// (no spaces) with exactly these members in this order:
//
//	time, principal, client, transport, tool, database, args_digest, decision, outcome,
//	revision (left out when 0), plan_id (left out when ""), duration_ms, seq, prev, hash
//
// where time is UTC with nine fractional digits ("2026-03-14T09:00:00.123456789Z"), numbers are written as Go's
// strconv writes them (shortest form that reads back exactly), and strings are escaped as Go's encoding/json does
// with HTML escaping off (so '<', '>' and '&' are written as themselves).
//
//   - seq is the record's 1-based line number in the file;
//   - prev is the hash of the line before it ("" on line 1);
//   - hash is the lowercase hex SHA-256 of the record's canonical JSON with hash set to "" (and no newline).
//
// Since hash is the last member, an independent verifier can check a line without re-encoding it: replace the
// final `"hash":"<64 hex digits>"}` with `"hash":""}` and hash the bytes. Verify also insists that every line is
// in canonical form, so a line changed in any way — even whitespace — is found.
//
// The chain finds lines that were edited, deleted, inserted or reordered, and a log whose beginning was cut off.
// It cannot, by itself, tell a log whose last records were cut off at a line boundary from one that simply ended
// there, nor a log rewritten from some line on with every hash recomputed: the chain proves integrity relative to
// a head hash kept somewhere else (a copy of the last line, shipped off the machine, is enough).
//
// # Concurrency and crashes
//
// Several processes (strata mcp, strata serve, CLI commands) may append to one file at once. Append takes an
// exclusive lock on the file (flock(2); LockFileEx on Windows: internal/filelock) around reading the tail and
// writing the new line, and reads the previous record from the file itself, so the chain stays one chain whoever
// writes. An append is durable (fsynced) before Append returns; a caller whose record could not be written must not
// carry out the call (fail closed).
//
// A crash in the middle of an append can leave a last line without its '\n'. That record was never acknowledged
// (Append had not returned), so the next Append cuts it off before writing; until then Verify reports it as an
// incomplete last line, and Read skips it.
package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/strata-db/strata/internal/filelock"
)

// FileName is the audit log's name inside a data directory.
const FileName = "audit.log"

// PathIn is the audit log of a data directory.
func PathIn(dataDir string) string { return filepath.Join(dataDir, FileName) }

// Transports: how the call reached Strata.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
	TransportCLI   = "cli"
)

// Decisions: what the policy said about the call.
const (
	DecisionAllow           = "allow"
	DecisionAsk             = "ask" // the call made a plan that needs confirmation
	DecisionDeny            = "deny"
	DecisionRateLimited     = "rate_limited"
	DecisionUnauthenticated = "unauthenticated"
)

// OutcomeOK is the outcome of a call that succeeded; any other outcome is the error code the caller got
// (NOT_FOUND, DENIED, QUERY_TIMEOUT, INTERNAL, …).
const OutcomeOK = "ok"

// TimeFormat is how a record's time is written: RFC 3339, UTC, nanoseconds, fixed width.
const TimeFormat = "2006-01-02T15:04:05.000000000Z07:00"

// MaxField is the longest a string field may be, in bytes; Append cuts longer ones (at a character boundary,
// ending in "…"). Names from clients (the client name of the MCP handshake, an unknown tool's name) are not
// trusted to be short.
const MaxField = 512

// Record is one audited call.
type Record struct {
	Time       time.Time // when the call arrived; Append uses the current time when zero
	Principal  string    // who: the local user over stdio and on the command line, the token's principal over HTTP
	Client     string    // client name/version from the MCP handshake; may be empty
	Transport  string    // TransportStdio, TransportHTTP or TransportCLI
	Tool       string    // the tool (or CLI command) called
	Database   string    // the database named by the call; may be empty
	ArgsDigest string    // Digest of the raw argument bytes
	Decision   string    // DecisionAllow, DecisionAsk, DecisionDeny, DecisionRateLimited, DecisionUnauthenticated
	Outcome    string    // OutcomeOK or an error code
	Revision   uint64    // the revision the call created, if any
	PlanID     string    // the plan the call made or applied, if any
	DurationMS float64   // how long the call took, in milliseconds (kept to the microsecond)

	// The chain, filled in by Append.
	Seq  uint64 // 1-based line number
	Prev string // hash of the previous record; "" for the first
	Hash string // hex SHA-256 of this record's canonical JSON with Hash empty
}

// wire is a record as it is written: the member order here is the canonical order.
type wire struct {
	Time       string  `json:"time"`
	Principal  string  `json:"principal"`
	Client     string  `json:"client"`
	Transport  string  `json:"transport"`
	Tool       string  `json:"tool"`
	Database   string  `json:"database"`
	ArgsDigest string  `json:"args_digest"`
	Decision   string  `json:"decision"`
	Outcome    string  `json:"outcome"`
	Revision   uint64  `json:"revision,omitempty"`
	PlanID     string  `json:"plan_id,omitempty"`
	DurationMS float64 `json:"duration_ms"`
	Seq        uint64  `json:"seq"`
	Prev       string  `json:"prev"`
	Hash       string  `json:"hash"`
}

// MarshalJSON writes the record's canonical JSON.
func (r Record) MarshalJSON() ([]byte, error) {
	if math.IsNaN(r.DurationMS) || math.IsInf(r.DurationMS, 0) {
		return nil, fmt.Errorf("audit: duration_ms is %v", r.DurationMS)
	}
	w := wire{
		Time: r.Time.UTC().Format(TimeFormat), Principal: r.Principal, Client: r.Client, Transport: r.Transport,
		Tool: r.Tool, Database: r.Database, ArgsDigest: r.ArgsDigest, Decision: r.Decision, Outcome: r.Outcome,
		Revision: r.Revision, PlanID: r.PlanID, DurationMS: r.DurationMS, Seq: r.Seq, Prev: r.Prev, Hash: r.Hash,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// UnmarshalJSON reads a record, refusing unknown members.
func (r *Record) UnmarshalJSON(b []byte) error {
	var w wire
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("audit: more than one JSON value")
	}
	t, err := time.Parse(time.RFC3339Nano, w.Time)
	if err != nil {
		return fmt.Errorf("audit: time: %w", err)
	}
	*r = Record{
		Time: t.UTC(), Principal: w.Principal, Client: w.Client, Transport: w.Transport, Tool: w.Tool,
		Database: w.Database, ArgsDigest: w.ArgsDigest, Decision: w.Decision, Outcome: w.Outcome,
		Revision: w.Revision, PlanID: w.PlanID, DurationMS: w.DurationMS, Seq: w.Seq, Prev: w.Prev, Hash: w.Hash,
	}
	return nil
}

// ComputeHash is the hash a record should carry: hex SHA-256 of its canonical JSON with Hash set to "".
func ComputeHash(r Record) (string, error) {
	r.Hash = ""
	b, err := r.MarshalJSON()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Digest is the args_digest of a call's raw argument bytes: "sha256:" and the hex SHA-256.
func Digest(raw []byte) string {
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ErrInvalidRecord is returned by Append for a record it refuses to write (an unknown decision or transport, no
// outcome, a malformed digest). It is a bug in the caller; the call must not run.
var ErrInvalidRecord = errors.New("audit: invalid record")

var (
	transports = map[string]bool{TransportStdio: true, TransportHTTP: true, TransportCLI: true}
	decisions  = map[string]bool{DecisionAllow: true, DecisionAsk: true, DecisionDeny: true,
		DecisionRateLimited: true, DecisionUnauthenticated: true}
)

// Decisions lists the decisions a record may carry.
func Decisions() []string {
	return []string{DecisionAllow, DecisionAsk, DecisionDeny, DecisionRateLimited, DecisionUnauthenticated}
}

// prepare checks a record from a caller and puts it in the form it is written in (without the chain).
func prepare(r Record, now time.Time) (Record, error) {
	if !transports[r.Transport] {
		return r, fmt.Errorf("%w: transport %q (want stdio, http or cli)", ErrInvalidRecord, r.Transport)
	}
	if !decisions[r.Decision] {
		return r, fmt.Errorf("%w: decision %q (want one of %s)", ErrInvalidRecord, r.Decision, strings.Join(Decisions(), ", "))
	}
	if r.Outcome == "" {
		return r, fmt.Errorf("%w: no outcome (want %q or an error code)", ErrInvalidRecord, OutcomeOK)
	}
	if r.ArgsDigest != "" && !validDigest(r.ArgsDigest) {
		return r, fmt.Errorf("%w: args_digest %q is not sha256:<64 hex digits> (use audit.Digest)", ErrInvalidRecord, r.ArgsDigest)
	}
	if math.IsNaN(r.DurationMS) || math.IsInf(r.DurationMS, 0) {
		return r, fmt.Errorf("%w: duration_ms is %v", ErrInvalidRecord, r.DurationMS)
	}
	if r.Time.IsZero() {
		r.Time = now
	}
	r.Time = r.Time.UTC().Round(0) // drop the monotonic reading
	r.DurationMS = math.Round(r.DurationMS*1000) / 1000
	for _, s := range []*string{&r.Principal, &r.Client, &r.Tool, &r.Database, &r.Outcome, &r.PlanID} {
		*s = capField(*s)
	}
	return r, nil
}

func validDigest(s string) bool {
	h, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// capField cuts s to at most MaxField bytes, at a character boundary, marking the cut with "…".
func capField(s string) string {
	if len(s) <= MaxField {
		return s
	}
	const ell = "…"
	n := MaxField - len(ell)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + ell
}

// Log is an audit log file opened for appending. It is safe for concurrent use by goroutines, and other processes
// may append to the same file at the same time.
type Log struct {
	path  string
	now   func() time.Time
	table *pgTable // the log is a PostgreSQL table (postgres.go), not the file at path

	mu     sync.Mutex
	f      *os.File
	closed bool
	// The tail as this Log last saw it: trusted only while the file's size (and identity) is unchanged.
	cached   bool
	size     int64
	lastSeq  uint64
	lastHash string
}

// Open opens the audit log at path for appending, creating it with mode 0600 if it is missing. Its directory
// must exist. The permissions of an existing file are left as they are.
func Open(path string) (*Log, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	return &Log{path: path, f: f, now: time.Now}, nil
}

func openFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		// A new file: make its mode exactly 0600 whatever the umask, and its directory entry durable.
		if err = f.Chmod(0o600); err == nil {
			err = syncDir(filepath.Dir(path))
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("audit: creating %s: %w", path, err)
		}
		return f, nil
	}
	if !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("audit: %w", err)
	}
	f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", path)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("audit: %w", err)
	}
	return f, nil
}

// Path is the file the log appends to (for a table, where it is).
func (l *Log) Path() string { return l.path }

// Append completes rec's chain fields (Seq, Prev, Hash), fills in Time when it is zero, appends it as one line
// and fsyncs the file. It returns the record as written. When it returns an error the record may not be in the
// log, and the call it describes must not be carried out.
//
// String fields longer than MaxField bytes are cut. A last line left without its '\n' by a crashed append is cut
// off first (see the package documentation).
func (l *Log) Append(rec Record) (Record, error) {
	rec, err := prepare(rec, l.now())
	if err != nil {
		return rec, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return rec, errors.New("audit: log is closed")
	}
	if l.table != nil {
		return l.table.append(rec, l.seal)
	}
	if err := l.lock(); err != nil {
		return rec, err
	}
	defer filelock.Unlock(l.f)

	size, seq, prev, err := l.tail()
	if err != nil {
		l.cached = false
		return rec, err
	}
	rec, line, err := l.seal(rec, seq, prev)
	if err != nil {
		return rec, err
	}
	line = append(line, '\n')
	l.cached = false
	if _, err := l.f.Write(line); err != nil {
		// Take back what part of the line may have landed, so the file still ends in a whole line.
		_ = l.f.Truncate(size)
		return rec, fmt.Errorf("audit: writing %s: %w", l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		return rec, fmt.Errorf("audit: syncing %s: %w", l.path, err)
	}
	l.cached, l.size, l.lastSeq, l.lastHash = true, size+int64(len(line)), rec.Seq, rec.Hash
	return rec, nil
}

// seal completes the chain of a record that follows the record numbered seq with hash prev, and returns its line
// (without the '\n'). The file and the table (postgres.go) chain records the same way.
func (l *Log) seal(rec Record, seq uint64, prev string) (Record, []byte, error) {
	rec.Seq, rec.Prev = seq+1, prev
	var err error
	if rec.Hash, err = ComputeHash(rec); err != nil {
		return rec, nil, err
	}
	line, err := rec.MarshalJSON()
	return rec, line, err
}

// Check reports whether a record could be appended now: the file can be locked and its last line is a record
// (a torn last line is cut off, as Append would). A caller that writes its record only once the call's outcome
// is known can Check first, and refuse the call when the log is not usable (fail closed). It writes no record.
func (l *Log) Check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("audit: log is closed")
	}
	if l.table != nil {
		return l.table.check()
	}
	if err := l.lock(); err != nil {
		return err
	}
	defer filelock.Unlock(l.f)
	size, seq, hash, err := l.tail()
	if err != nil {
		l.cached = false
		return err
	}
	l.cached, l.size, l.lastSeq, l.lastHash = true, size, seq, hash
	return nil
}

// lock takes the exclusive lock on the file at l.path. If the file was renamed or removed since it was opened
// (rotated by an operator), it opens the file now at the path, so that records go where readers look.
func (l *Log) lock() error {
	for range 10 {
		if err := filelock.Lock(l.f, true); err != nil {
			return fmt.Errorf("audit: locking %s: %w", l.path, err)
		}
		held, err := l.f.Stat()
		if err != nil {
			filelock.Unlock(l.f)
			return fmt.Errorf("audit: %w", err)
		}
		now, err := os.Stat(l.path)
		if err == nil && os.SameFile(held, now) {
			return nil
		}
		filelock.Unlock(l.f)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("audit: %w", err)
		}
		f, err := openFile(l.path)
		if err != nil {
			return err
		}
		l.f.Close()
		l.f, l.cached = f, false
	}
	return fmt.Errorf("audit: %s keeps being replaced", l.path)
}

// tail returns the file's size and the last record's seq and hash, cutting off a torn last line. The lock is held.
func (l *Log) tail() (size int64, seq uint64, hash string, err error) {
	fi, err := l.f.Stat()
	if err != nil {
		return 0, 0, "", fmt.Errorf("audit: %w", err)
	}
	size = fi.Size()
	if l.cached && size == l.size {
		return size, l.lastSeq, l.lastHash, nil
	}
	if size == 0 {
		return 0, 0, "", nil
	}
	last, start, err := lastLine(l.f, size)
	if err != nil {
		return 0, 0, "", fmt.Errorf("audit: reading %s: %w", l.path, err)
	}
	if !bytes.HasSuffix(last, []byte{'\n'}) {
		// A torn append: never acknowledged. Cut it off, durably, and look at the line before it.
		if err := l.f.Truncate(start); err != nil {
			return 0, 0, "", fmt.Errorf("audit: cutting the incomplete last line of %s: %w", l.path, err)
		}
		if err := l.f.Sync(); err != nil {
			return 0, 0, "", fmt.Errorf("audit: syncing %s: %w", l.path, err)
		}
		if start == 0 {
			return 0, 0, "", nil
		}
		size = start
		if last, _, err = lastLine(l.f, size); err != nil {
			return 0, 0, "", fmt.Errorf("audit: reading %s: %w", l.path, err)
		}
	}
	var r Record
	if err := json.Unmarshal(bytes.TrimSuffix(last, []byte{'\n'}), &r); err != nil || r.Seq == 0 || len(r.Hash) != 64 {
		// Fail closed: a record chained to a line we cannot read would hide whatever happened to it.
		return 0, 0, "", fmt.Errorf("audit: the last line of %s is not a valid record (run strata audit --verify): %v", l.path, err)
	}
	return size, r.Seq, r.Hash, nil
}

// lastLine returns the last line of the first size bytes of f (with its '\n', if it has one) and its offset.
func lastLine(f *os.File, size int64) ([]byte, int64, error) {
	const chunk = 4096
	var buf []byte // the bytes from end to size
	for end := size; end > 0; {
		n := min(int64(chunk), end)
		b := make([]byte, n, n+int64(len(buf)))
		if _, err := f.ReadAt(b, end-n); err != nil {
			return nil, 0, err
		}
		buf = append(b, buf...)
		end -= n
		// The file's last byte is the line's own '\n' (or part of a torn line): look before it.
		if i := bytes.LastIndexByte(buf[:len(buf)-1], '\n'); i >= 0 {
			return buf[i+1:], end + int64(i) + 1, nil
		}
	}
	return buf, 0, nil
}

// Close closes the log.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.table != nil {
		return nil // the pool is its owner's
	}
	return l.f.Close()
}

// VerifyError is what Verify found wrong, and where.
type VerifyError struct {
	Line    int    // 1-based line number of the first bad line
	Problem string // what is wrong with it
}

func (e *VerifyError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Problem) }

// maxLine bounds a line Verify and Read will read; a record is far shorter (see MaxField).
const maxLine = 1 << 20

// lines calls fn with each line of r (without its '\n'), its number and whether it ended in '\n'.
func lines(r io.Reader, fn func(n int, line []byte, whole bool) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) && len(long) <= maxLine {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			if len(long) > maxLine {
				return &VerifyError{Line: n, Problem: fmt.Sprintf("longer than %d bytes: not a record", maxLine)}
			}
			line = long
		}
		if len(line) == 0 && err == io.EOF {
			return nil
		}
		if err != nil && err != io.EOF {
			return err
		}
		whole := err == nil
		if e := fn(n, bytes.TrimSuffix(line, []byte{'\n'}), whole); e != nil {
			return e
		}
		if !whole {
			return nil
		}
	}
}

// Verify reads a whole audit log and checks its chain: every line is a record in canonical form, seq counts the
// lines from 1, prev is the previous line's hash and hash matches the record. It returns the number of records
// that check out; the error, a *VerifyError, names the first bad line and what is wrong with it (an I/O error is
// returned as it is).
func Verify(r io.Reader) (n int, err error) {
	prev := ""
	err = lines(r, func(i int, line []byte, whole bool) error {
		bad := func(format string, args ...any) error {
			return &VerifyError{Line: i, Problem: fmt.Sprintf(format, args...)}
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
		want, err := ComputeHash(rec)
		if err != nil {
			return bad("%v", err)
		}
		if rec.Hash != want {
			return bad("hash does not match the record: the line was edited")
		}
		switch {
		case rec.Seq > uint64(i):
			return bad("seq is %d, want %d: %d record(s) before it were deleted, or lines were reordered", rec.Seq, i, rec.Seq-uint64(i))
		case rec.Seq < uint64(i):
			return bad("seq is %d, want %d: a line was inserted before it, or lines were reordered", rec.Seq, i)
		}
		if rec.Prev != prev {
			if i == 1 {
				return bad("the first record links to a previous one: the beginning of the log was cut off")
			}
			return bad("prev does not match the hash of line %d: the line before it was replaced", i-1)
		}
		prev = rec.Hash
		n = i
		return nil
	})
	return n, err
}

// Filter selects records for Read. A zero field selects everything; string fields must match exactly.
type Filter struct {
	Since, Until time.Time // inclusive bounds on Time
	Principal    string
	Tool         string
	Database     string
	Decision     string
	Outcome      string
}

// Match reports whether r passes the filter.
func (f Filter) Match(r Record) bool {
	switch {
	case !f.Since.IsZero() && r.Time.Before(f.Since),
		!f.Until.IsZero() && r.Time.After(f.Until),
		f.Principal != "" && r.Principal != f.Principal,
		f.Tool != "" && r.Tool != f.Tool,
		f.Database != "" && r.Database != f.Database,
		f.Decision != "" && r.Decision != f.Decision,
		f.Outcome != "" && r.Outcome != f.Outcome:
		return false
	}
	return true
}

// Read calls fn with each record of the log read from r that matches f, in file order, until fn returns an
// error, which Read returns. An incomplete last line (a torn append, never acknowledged) is skipped; any other
// line that is not a record stops Read with a *VerifyError. Read does not check the chain: Verify does.
func Read(r io.Reader, f Filter, fn func(Record) error) error {
	return lines(r, func(i int, line []byte, whole bool) error {
		if !whole {
			return nil
		}
		var rec Record
		if err := json.Unmarshal(line, &rec); err != nil {
			return &VerifyError{Line: i, Problem: fmt.Sprintf("not a valid audit record: %v", err)}
		}
		if !f.Match(rec) {
			return nil
		}
		return fn(rec)
	})
}

// Package audit is Strata's audit log (docs/design.md §4, docs/security.md T12, T21, T26): one JSON line per MCP or
// CLI call — allowed, asked, denied, failed — appended to <data dir>/audit.log and chained by hashes so that an
// edited, deleted, inserted or reordered line is found by Verify.
//
// # Records
//
// A Record says who called which tool, on which database, how it was decided and how it ended. It holds a digest
// of the arguments, never the arguments themselves: no document values, no tokens, no secrets. There is no field
// that could carry them. Requests refused before authentication are the exception to one record per call: an
// Aggregator folds them into one record per address and reason per interval, whose count says how many requests
// it stands for (see aggregate.go); an authenticated call always has a record of its own.
//
// # Line format and hash chain
//
// Each record is one line: its canonical JSON followed by '\n'. The canonical JSON of a record is compact JSON
// (no spaces) with exactly these members in this order:
//
//	time, principal, client, transport, tool, database, args_digest, decision, outcome,
//	revision (left out when 0), plan_id (left out when ""), duration_ms, count (left out when 0),
//	seq, prev, key_id (left out when ""), hash
//
// where time is UTC with nine fractional digits ("2026-03-14T09:00:00.123456789Z"), numbers are written as Go's
// strconv writes them (shortest form that reads back exactly), and strings are escaped as Go's encoding/json does
// with HTML escaping off (so '<', '>' and '&' are written as themselves). Logs written before count and key_id
// existed have neither, and read and verify as they always did.
//
//   - seq is the record's 1-based position in the whole log, across rotated files (in a log that was never
//     rotated, its line number);
//   - prev is the hash of the record before it ("" for the first record of the log);
//   - key_id is set on the records of a keyed chain: the id of the key (Key.ID), never the key;
//   - hash is the lowercase hex SHA-256 of the record's canonical JSON with hash set to "" (and no newline); in a
//     keyed record, the hex HMAC-SHA256 of the same bytes with the key.
//
// Since hash is the last member, an independent verifier can check a line without re-encoding it: replace the
// final `"hash":"<64 hex digits>"}` with `"hash":""}` and hash (or HMAC) the bytes. Verify also insists that every
// line is in canonical form, so a line changed in any way — even whitespace — is found.
//
// The chain finds lines that were edited, deleted, inserted or reordered, and a log whose beginning was cut off.
// It cannot, by itself, tell a log whose last records were cut off at a line boundary from one that simply ended
// there. Unkeyed, it cannot tell a log rewritten from some line on with every hash recomputed either: it then
// proves integrity only relative to a head hash kept somewhere else (a copy of the last line, shipped off the
// machine, is enough). A keyed chain closes that gap for whoever cannot read the key (key.go): records cannot be
// re-hashed without it. A log may start unkeyed and go on keyed (the keyed records pin the ones before them), never
// the other way round: an unkeyed record after a keyed one fails verification, and an appender without the key
// is refused once the last record is keyed.
//
// # Size and rotation
//
// With Options.MaxBytes set, a record that would take the current file past it is written instead as the first
// record of a new current file, chained to the last record of the old one, which is renamed
// audit-<first seq>-<last seq>.log (rotate.go says how this stays atomic for concurrent appenders). Files lists
// the files of a log; VerifyLog checks the chain across all of them, and that each holds the records its name
// says; ReadLog reads them in order. Nothing is ever deleted: a rotated file stays until the operator moves it
// away, and VerifyLog then reports the records it held as missing. A rotation that cannot be done (a name taken,
// an error; on Windows, where an open file cannot be replaced) leaves the record in the current file, which grows
// past the size, and is reported to Options.Warn; it is tried again a minute later.
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
	"github.com/strata-db/strata/internal/nofollow"
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
	// Count is how many requests the record stands for: set (1 or more) only on a record of an Aggregator, which
	// folds requests refused before authentication into one record per address and interval; 0 is one call.
	Count uint64

	// The chain, filled in by Append.
	Seq   uint64 // 1-based position in the whole log, across rotated files
	Prev  string // hash of the previous record; "" for the first
	KeyID string // the id of the key of a keyed chain (Key.ID, never the key); "" when the record is not keyed
	Hash  string // hex SHA-256 of this record's canonical JSON with Hash empty; HMAC-SHA256 with the key when keyed
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
	Count      uint64  `json:"count,omitempty"`
	Seq        uint64  `json:"seq"`
	Prev       string  `json:"prev"`
	KeyID      string  `json:"key_id,omitempty"`
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
		Revision: r.Revision, PlanID: r.PlanID, DurationMS: r.DurationMS, Count: r.Count, Seq: r.Seq, Prev: r.Prev,
		KeyID: r.KeyID, Hash: r.Hash,
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
		Revision: w.Revision, PlanID: w.PlanID, DurationMS: w.DurationMS, Count: w.Count, Seq: w.Seq, Prev: w.Prev,
		KeyID: w.KeyID, Hash: w.Hash,
	}
	return nil
}

// ComputeHash is the hash a record should carry: hex SHA-256 of its canonical JSON with Hash set to "".
func ComputeHash(r Record) (string, error) { return hashWith(r, nil) }

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
		*s = capField(strings.ToValidUTF8(*s, "\uFFFD")) // as the JSON encoder would write it: Verify reads it back the same
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
	path     string
	now      func() time.Time
	key      *Key
	maxBytes int64
	warn     func(error)
	table    *pgTable // the log is a PostgreSQL table (postgres.go), not the file at path

	mu     sync.Mutex
	f      *os.File
	closed bool
	// The tail as this Log last saw it: trusted only while the file's size (and identity) is unchanged.
	cached   bool
	size     int64
	lastSeq  uint64
	lastHash string
	lastKey  string
	// rotateFailed is when a rotation last failed: the next try waits a minute (see Append).
	rotateFailed time.Time
}

// DefaultMaxBytes is the size past which strata rotates its audit log unless told otherwise (--audit-max-mib).
const DefaultMaxBytes = 256 << 20

// Options configures a Log.
type Options struct {
	// Key, when set, makes the chain keyed: each record's hash is HMAC-SHA256 with the key, and carries the key's
	// id (see Key). A log whose last record is keyed is appended to only with the same key: Open, Append and
	// Check refuse it with a *KeyError otherwise.
	Key *Key
	// MaxBytes rotates the log (see the package documentation): when the next record would take the file past
	// MaxBytes, the file becomes audit-<first seq>-<last seq>.log and the record starts a new file, chained to
	// the last record of the old one. 0 never rotates.
	MaxBytes int64
	// Warn hears of a problem that lost nothing: a rotation that could not be done (the record then goes into the
	// current file, which grows past MaxBytes). nil ignores them.
	Warn func(error)
}

// Open opens the audit log at path for appending, creating it with mode 0600 if it is missing. Its directory
// must exist. The permissions of an existing file are left as they are. It is OpenWith without options: unkeyed,
// never rotated.
func Open(path string) (*Log, error) { return OpenWith(path, Options{}) }

// OpenWith is Open with options. A log whose last record is keyed with another key than o.Key (or keyed, while
// o.Key is nil) is refused with a *KeyError.
func OpenWith(path string, o Options) (*Log, error) {
	if o.MaxBytes < 0 {
		return nil, fmt.Errorf("audit: MaxBytes %d is negative (0 never rotates)", o.MaxBytes)
	}
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	l := &Log{path: path, f: f, now: time.Now, key: o.Key, maxBytes: o.MaxBytes, warn: o.Warn}
	// Refuse a key mismatch now, so that a server does not start on a log it cannot extend. Other problems of the
	// tail are Append's and Check's to report (writes then fail closed).
	var ke *KeyError
	if err := l.Check(); errors.As(err, &ke) {
		l.Close()
		return nil, err
	}
	return l, nil
}

func openFile(path string) (*os.File, error) {
	// nofollow: a symbolic link in place of the log is refused, dangling or not, and cannot be swapped in.
	f, err := nofollow.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
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
	f, err = nofollow.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
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

// KeyID is the id of the log's key, "" when it is not keyed.
func (l *Log) KeyID() string {
	if l.key == nil {
		return ""
	}
	return l.key.ID()
}

// Append completes rec's chain fields (Seq, Prev, KeyID, Hash), fills in Time when it is zero, appends it as one
// line and fsyncs the file. It returns the record as written. When it returns an error the record may not be in
// the log, and the call it describes must not be carried out.
//
// String fields longer than MaxField bytes are cut. A last line left without its '\n' by a crashed append is cut
// off first (see the package documentation). When the record would take the file past Options.MaxBytes, the file
// is rotated and the record starts the new one.
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
	held := l.f
	defer func() {
		filelock.Unlock(held)
		if held != l.f {
			held.Close() // rotated: the new file is l.f, and only now may others lock the old one
		}
	}()

	size, seq, prev, keyID, err := l.tail()
	if err != nil {
		l.cached = false
		return rec, err
	}
	rec, line, err := l.seal(rec, seq, prev, keyID)
	if err != nil {
		return rec, err
	}
	line = append(line, '\n')
	l.cached = false
	if l.maxBytes > 0 && size > 0 && size+int64(len(line)) > l.maxBytes && l.now().Sub(l.rotateFailed) >= time.Minute {
		written, err := l.rotate(line, seq)
		if written {
			if err != nil {
				return rec, err
			}
			l.cached, l.size, l.lastSeq, l.lastHash, l.lastKey = true, int64(len(line)), rec.Seq, rec.Hash, rec.KeyID
			return rec, nil
		}
		l.rotateFailed = l.now()
		if l.warn != nil {
			l.warn(err)
		}
	}
	if _, err := l.f.Write(line); err != nil {
		// Take back what part of the line may have landed, so the file still ends in a whole line.
		_ = l.f.Truncate(size)
		return rec, fmt.Errorf("audit: writing %s: %w", l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		return rec, fmt.Errorf("audit: syncing %s: %w", l.path, err)
	}
	l.cached, l.size, l.lastSeq, l.lastHash, l.lastKey = true, size+int64(len(line)), rec.Seq, rec.Hash, rec.KeyID
	return rec, nil
}

// keyCheck refuses to extend a keyed chain without its key. An unkeyed chain may go on keyed (from the first
// record written with a key), never the other way round.
func (l *Log) keyCheck(lastKeyID string) error {
	switch {
	case lastKeyID == "":
		return nil
	case l.key == nil:
		return &KeyError{File: l.path, KeyID: lastKeyID}
	case l.key.ID() != lastKeyID:
		return &KeyError{File: l.path, KeyID: lastKeyID, Given: l.key.ID()}
	}
	return nil
}

// seal completes the chain of a record that follows the record numbered seq with hash prev and key id lastKeyID,
// and returns its line (without the '\n'): it refuses to extend a keyed chain without its key, and keys the record
// when the log has one. The file and the table (postgres.go) chain records the same way.
func (l *Log) seal(rec Record, seq uint64, prev, lastKeyID string) (Record, []byte, error) {
	if err := l.keyCheck(lastKeyID); err != nil {
		return rec, nil, err
	}
	rec.Seq, rec.Prev, rec.KeyID = seq+1, prev, l.KeyID()
	var err error
	if rec.Hash, err = hashWith(rec, l.key); err != nil {
		return rec, nil, err
	}
	line, err := rec.MarshalJSON()
	return rec, line, err
}

// Check reports whether a record could be appended now: the file can be locked, its last line is a record (a
// torn last line is cut off, as Append would), and the log's key fits the chain. A caller that writes its record
// only once the call's outcome is known can Check first, and refuse the call when the log is not usable (fail
// closed). It writes no record.
func (l *Log) Check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("audit: log is closed")
	}
	if l.table != nil {
		keyID, err := l.table.check()
		if err != nil {
			return err
		}
		return l.keyCheck(keyID)
	}
	if err := l.lock(); err != nil {
		return err
	}
	defer filelock.Unlock(l.f)
	size, seq, hash, keyID, err := l.tail()
	if err != nil {
		l.cached = false
		return err
	}
	l.cached, l.size, l.lastSeq, l.lastHash, l.lastKey = true, size, seq, hash, keyID
	return l.keyCheck(keyID)
}

// replaceWait bounds how long lock keeps reopening a log that other appenders keep rotating.
const replaceWait = 30 * time.Second

// lock takes the exclusive lock on the file at l.path. If the file was renamed or removed since it was opened
// (rotated by another appender, or by an operator), it opens the file now at the path, so that records go where
// readers look.
//
// A rotation by another appender can replace the file again while this one waits for the new file's lock (flock
// is not fair, and a log rotating every few records, as the tests make it, is replaced many times a second), so it
// tries for as long as replaceWait rather than a number of times; at real rotation sizes it reopens at most once.
func (l *Log) lock() error {
	for deadline := time.Now().Add(replaceWait); time.Now().Before(deadline); {
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
	return fmt.Errorf("audit: %s kept being replaced for %s", l.path, replaceWait)
}

// tail returns the file's size and the last record's seq, hash and key id, cutting off a torn last line. The lock
// is held.
func (l *Log) tail() (size int64, seq uint64, hash, keyID string, err error) {
	fi, err := l.f.Stat()
	if err != nil {
		return 0, 0, "", "", fmt.Errorf("audit: %w", err)
	}
	size = fi.Size()
	if l.cached && size == l.size {
		return size, l.lastSeq, l.lastHash, l.lastKey, nil
	}
	if size == 0 {
		return 0, 0, "", "", nil
	}
	last, start, err := lastLine(l.f, size)
	if err != nil {
		return 0, 0, "", "", fmt.Errorf("audit: reading %s: %w", l.path, err)
	}
	if !bytes.HasSuffix(last, []byte{'\n'}) {
		// A torn append: never acknowledged. Cut it off, durably, and look at the line before it.
		if err := l.f.Truncate(start); err != nil {
			return 0, 0, "", "", fmt.Errorf("audit: cutting the incomplete last line of %s: %w", l.path, err)
		}
		if err := l.f.Sync(); err != nil {
			return 0, 0, "", "", fmt.Errorf("audit: syncing %s: %w", l.path, err)
		}
		if start == 0 {
			return 0, 0, "", "", nil
		}
		size = start
		if last, _, err = lastLine(l.f, size); err != nil {
			return 0, 0, "", "", fmt.Errorf("audit: reading %s: %w", l.path, err)
		}
	}
	var r Record
	if err := json.Unmarshal(bytes.TrimSuffix(last, []byte{'\n'}), &r); err != nil || r.Seq == 0 || len(r.Hash) != 64 {
		// Fail closed: a record chained to a line we cannot read would hide whatever happened to it.
		return 0, 0, "", "", fmt.Errorf("audit: the last line of %s is not a valid record (run strata audit --verify): %v", l.path, err)
	}
	return size, r.Seq, r.Hash, r.KeyID, nil
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
	File    string // the file (VerifyLog, ReadLog); "" for a single stream
	Line    int    // 1-based line number of the first bad line, in its file
	Problem string // what is wrong with it
}

func (e *VerifyError) Error() string {
	if e.File != "" {
		return fmt.Sprintf("%s line %d: %s", e.File, e.Line, e.Problem)
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Problem)
}

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

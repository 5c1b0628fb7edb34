//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

var t0 = time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)

// sample is the i-th record of a test log.
func sample(who string, i int) Record {
	return Record{
		Time:       t0.Add(time.Duration(i) * time.Second),
		Principal:  who,
		Client:     "claude-code/2.1.0",
		Transport:  TransportStdio,
		Tool:       "write",
		Database:   "shop",
		ArgsDigest: Digest([]byte(fmt.Sprintf(`{"i":%d}`, i))),
		Decision:   DecisionAllow,
		Outcome:    OutcomeOK,
		Revision:   uint64(i + 1),
		DurationMS: 1.5,
	}
}

func openTemp(t testing.TB) (*Log, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, path
}

func appendN(t testing.TB, l *Log, who string, n int) []Record {
	t.Helper()
	var out []Record
	for i := range n {
		r, err := l.Append(sample(who, i))
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		out = append(out, r)
	}
	return out
}

func verifyFile(t *testing.T, path string) (int, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return Verify(f)
}

func TestChainVerifiesAfterManyAppends(t *testing.T) {
	l, path := openTemp(t)
	recs := appendN(t, l, "ada", 500)
	for i, r := range recs {
		if r.Seq != uint64(i+1) {
			t.Fatalf("record %d: seq %d", i, r.Seq)
		}
		if i > 0 && r.Prev != recs[i-1].Hash {
			t.Fatalf("record %d: prev %q, want %q", i, r.Prev, recs[i-1].Hash)
		}
		if h, _ := ComputeHash(r); h != r.Hash || len(h) != 64 {
			t.Fatalf("record %d: hash %q, recomputed %q", i, r.Hash, h)
		}
	}
	if recs[0].Prev != "" {
		t.Errorf("first record's prev = %q, want empty", recs[0].Prev)
	}
	n, err := verifyFile(t, path)
	if err != nil || n != 500 {
		t.Fatalf("Verify = %d, %v; want 500, nil", n, err)
	}
	// A Log opened afresh (no cache) continues the same chain.
	l.Close()
	l2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	r, err := l2.Append(sample("bob", 0))
	if err != nil || r.Seq != 501 || r.Prev != recs[499].Hash {
		t.Fatalf("append after reopen: seq %d prev %q, %v", r.Seq, r.Prev, err)
	}
	if n, err := verifyFile(t, path); err != nil || n != 501 {
		t.Fatalf("Verify = %d, %v; want 501, nil", n, err)
	}
}

// TestLineFormat pins the canonical line and the documented shortcut for verifiers in other languages.
func TestLineFormat(t *testing.T) {
	l, path := openTemp(t)
	in := sample("ada", 0)
	in.Time = time.Date(2026, 3, 14, 10, 0, 0, 120000000, time.FixedZone("CET", 3600))
	in.Tool, in.Decision, in.Outcome, in.Revision, in.PlanID = "apply_plan", DecisionAsk, "CONFIRMATION_REQUIRED", 0, "p-1<&>"
	in.DurationMS = 2.00049
	r, err := l.Append(in)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	want := `{"time":"2026-03-14T09:00:00.120000000Z","principal":"ada","client":"claude-code/2.1.0","transport":"stdio",` +
		`"tool":"apply_plan","database":"shop","args_digest":"` + in.ArgsDigest + `","decision":"ask",` +
		`"outcome":"CONFIRMATION_REQUIRED","plan_id":"p-1<&>","duration_ms":2,"seq":1,"prev":"","hash":"` + r.Hash + `"}` + "\n"
	if string(data) != want {
		t.Fatalf("line\n%s\nwant\n%s", data, want)
	}
	// The hash is SHA-256 over the line with its hash emptied.
	blank := regexp.MustCompile(`"hash":"[0-9a-f]{64}"}\n$`).ReplaceAll(data, []byte(`"hash":""}`))
	sum := sha256.Sum256(blank)
	if hex.EncodeToString(sum[:]) != r.Hash {
		t.Errorf("hash %s is not sha256 of %s", r.Hash, blank)
	}
	var back Record
	if err := json.Unmarshal(bytes.TrimSpace(data), &back); err != nil || back != r {
		t.Errorf("read back %+v, %v; want %+v", back, err, r)
	}
	if got := Digest([]byte("{}")); got != "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a" {
		t.Errorf("Digest({}) = %s", got)
	}
}

func TestTamperingDetected(t *testing.T) {
	l, path := openTemp(t)
	appendN(t, l, "ada", 10)
	l.Close()
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(orig), "\n")
	lines = lines[:len(lines)-1] // after the last '\n'
	parse := func(s string) Record {
		var r Record
		if err := json.Unmarshal([]byte(strings.TrimSpace(s)), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	rehash := func(r Record) string {
		r.Hash, _ = ComputeHash(r)
		b, _ := r.MarshalJSON()
		return string(b) + "\n"
	}
	with := func(edit func(ls []string) []string) string {
		return strings.Join(edit(append([]string(nil), lines...)), "")
	}
	for _, tc := range []struct {
		name string
		data string
		line int
		want string
		n    int // records that check out
	}{
		{"value edited", with(func(ls []string) []string {
			ls[3] = strings.Replace(ls[3], `"principal":"ada"`, `"principal":"eve"`, 1)
			return ls
		}), 4, "hash does not match the record: the line was edited", 3},
		{"outcome edited", with(func(ls []string) []string {
			ls[6] = strings.Replace(ls[6], `"outcome":"ok"`, `"outcome":"NOT_FOUND"`, 1)
			return ls
		}), 7, "hash does not match", 6},
		{"whitespace added", with(func(ls []string) []string {
			ls[3] = strings.Replace(ls[3], `,"principal"`, `, "principal"`, 1)
			return ls
		}), 4, "not in canonical form", 3},
		{"duplicate member", with(func(ls []string) []string {
			ls[3] = strings.Replace(ls[3], `"principal":"ada"`, `"principal":"eve","principal":"ada"`, 1)
			return ls
		}), 4, "not in canonical form", 3},
		{"field added", with(func(ls []string) []string {
			ls[3] = strings.Replace(ls[3], `{"time"`, `{"token":"s3cret","time"`, 1)
			return ls
		}), 4, "not a valid audit record", 3},
		{"edited and rehashed", with(func(ls []string) []string {
			r := parse(ls[3])
			r.Decision = DecisionDeny
			ls[3] = rehash(r)
			return ls
		}), 5, "prev does not match the hash of line 4", 4},
		{"line deleted", with(func(ls []string) []string {
			return append(ls[:3], ls[4:]...)
		}), 4, "seq is 5, want 4: 1 record(s) before it were deleted", 3},
		{"two lines deleted", with(func(ls []string) []string {
			return append(ls[:3], ls[5:]...)
		}), 4, "seq is 6, want 4: 2 record(s) before it were deleted", 3},
		{"last line deleted, first line too", with(func(ls []string) []string {
			return ls[1:9]
		}), 1, "seq is 2, want 1", 0},
		{"lines swapped", with(func(ls []string) []string {
			ls[4], ls[5] = ls[5], ls[4]
			return ls
		}), 5, "seq is 6, want 5", 4},
		{"line copied in", with(func(ls []string) []string {
			return append(ls[:6], append([]string{ls[1]}, ls[6:]...)...)
		}), 7, "seq is 2, want 7: a line was inserted before it", 6},
		{"forged line inserted", with(func(ls []string) []string {
			prev := parse(ls[5])
			f := sample("mallory", 99)
			f.Seq, f.Prev = 7, prev.Hash
			return append(ls[:6], append([]string{rehash(f)}, ls[6:]...)...)
		}), 8, "seq is 7, want 8: a line was inserted before it", 7},
		{"beginning cut off and renumbered", with(func(ls []string) []string {
			var out []string
			for i, l := range ls[3:] {
				r := parse(l)
				r.Seq = uint64(i + 1)
				out = append(out, rehash(r))
			}
			return out
		}), 1, "the first record links to a previous one: the beginning of the log was cut off", 0},
		{"blank line inserted", with(func(ls []string) []string {
			return append(ls[:2], append([]string{"\n"}, ls[2:]...)...)
		}), 3, "empty line", 2},
		{"garbage line", with(func(ls []string) []string {
			ls[8] = "hello\n"
			return ls
		}), 9, "not a valid audit record", 8},
		{"cut mid-line", string(orig[:len(orig)-20]), 10, "incomplete last line", 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := Verify(strings.NewReader(tc.data))
			var ve *VerifyError
			if !errors.As(err, &ve) {
				t.Fatalf("Verify = %d, %v; want a VerifyError on line %d", n, err, tc.line)
			}
			if ve.Line != tc.line || !strings.Contains(ve.Error(), tc.want) || n != tc.n {
				t.Errorf("Verify = %d, %q; want %d, line %d: …%s…", n, err, tc.n, tc.line, tc.want)
			}
			if !strings.HasPrefix(err.Error(), fmt.Sprintf("line %d: ", tc.line)) {
				t.Errorf("error %q does not start with the line", err)
			}
		})
	}
	if n, err := Verify(strings.NewReader(string(orig))); err != nil || n != 10 {
		t.Fatalf("untouched log: Verify = %d, %v", n, err)
	}
	if n, err := Verify(strings.NewReader("")); err != nil || n != 0 {
		t.Fatalf("empty log: Verify = %d, %v", n, err)
	}
}

// checkAll verifies the log at path and that it holds exactly the records want[who] = count, each once.
func checkAll(t *testing.T, path string, want map[string]int) {
	t.Helper()
	total := 0
	for _, n := range want {
		total += n
	}
	n, err := verifyFile(t, path)
	if err != nil || n != total {
		t.Fatalf("Verify = %d, %v; want %d records, chain intact", n, err, total)
	}
	seen := map[string]bool{}
	f, _ := os.Open(path)
	defer f.Close()
	if err := Read(f, Filter{}, func(r Record) error {
		k := r.Principal + "/" + strconv.FormatUint(r.Revision, 10)
		if seen[k] {
			return fmt.Errorf("record %s twice", k)
		}
		seen[k] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for who, count := range want {
		for i := range count {
			if k := who + "/" + strconv.Itoa(i+1); !seen[k] {
				t.Errorf("record %s missing", k)
			}
		}
	}
}

// TestConcurrentAppends: 4 goroutines × 50 appends, two sharing one Log and two with a Log each (so both the
// mutex and the file lock are exercised), make one chain holding every record.
func TestConcurrentAppends(t *testing.T) {
	shared, path := openTemp(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		l := shared
		if g >= 2 {
			var err error
			if l, err = Open(path); err != nil {
				t.Fatal(err)
			}
			defer l.Close()
		}
		wg.Go(func() {
			for i := range 50 {
				if _, err := l.Append(sample(fmt.Sprintf("g%d", g), i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkAll(t, path, map[string]int{"g0": 50, "g1": 50, "g2": 50, "g3": 50})
}

// TestAppendChild is the child process of TestAppendAcrossProcesses; it does nothing in a normal run.
func TestAppendChild(t *testing.T) {
	path, who := os.Getenv("STRATA_AUDIT_PATH"), os.Getenv("STRATA_AUDIT_WHO")
	if path == "" {
		t.Skip("child process of TestAppendAcrossProcesses")
	}
	n, _ := strconv.Atoi(os.Getenv("STRATA_AUDIT_N"))
	// TestAuditRotationAcrossProcesses rotates and keys the log.
	max, _ := strconv.ParseInt(os.Getenv("STRATA_AUDIT_MAX"), 10, 64)
	var key *Key
	if k := os.Getenv("STRATA_AUDIT_KEY"); k != "" {
		var err error
		if key, err = NewKey([]byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	l, err := OpenWith(path, Options{MaxBytes: max, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendN(t, l, who, n)
}

// TestAppendAcrossProcesses: two child processes and this one append to one file at once; the result is one
// valid chain with every record.
func TestAppendAcrossProcesses(t *testing.T) {
	l, path := openTemp(t)
	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for _, who := range []string{"a", "b"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAppendChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "STRATA_AUDIT_PATH="+path, "STRATA_AUDIT_WHO="+who, "STRATA_AUDIT_N="+strconv.Itoa(n))
		wg.Go(func() {
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("child %s: %v\n%s", who, err, out)
			}
		})
	}
	wg.Go(func() {
		for i := range n {
			if _, err := l.Append(sample("parent", i)); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkAll(t, path, map[string]int{"a": n, "b": n, "parent": n})
	// The processes really interleaved (else the test proves little): count the changes of writer along the file.
	data, _ := os.ReadFile(path)
	switches, last := 0, ""
	for _, m := range regexp.MustCompile(`"principal":"(\w+)"`).FindAllStringSubmatch(string(data), -1) {
		if m[1] != last {
			switches, last = switches+1, m[1]
		}
	}
	t.Logf("3 processes × %d appends; the writer changed %d times along the file", n, switches)
}

func TestTornTailRepaired(t *testing.T) {
	for _, tc := range []struct {
		name  string
		whole int    // complete records before the torn line
		torn  string // what the crashed append left
	}{
		{"after records", 3, `{"time":"2026-03-14T09:00:03.000000000Z","principal":"ada","cli`},
		{"only line", 0, `{"time":"2026-03-1`},
		{"a whole record without its newline", 2, ""}, // filled below
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, path := openTemp(t)
			recs := appendN(t, l, "ada", tc.whole)
			torn := tc.torn
			if torn == "" {
				r := sample("ada", 99)
				r.Seq, r.Prev = uint64(tc.whole+1), recs[len(recs)-1].Hash
				r.Hash, _ = ComputeHash(r)
				b, _ := r.MarshalJSON()
				torn = string(b)
			}
			// The crashed writer is another process: write through another descriptor, behind the Log's cache.
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(torn)
			f.Close()

			n, err := verifyFile(t, path)
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.Line != tc.whole+1 || !strings.Contains(err.Error(), "incomplete last line") || n != tc.whole {
				t.Fatalf("Verify before repair = %d, %v", n, err)
			}
			rf, _ := os.Open(path)
			got := 0
			if err := Read(rf, Filter{}, func(Record) error { got++; return nil }); err != nil || got != tc.whole {
				t.Errorf("Read before repair: %d records, %v; want %d", got, err, tc.whole)
			}
			rf.Close()

			if err := l.Check(); err != nil {
				t.Fatalf("Check with a torn tail: %v", err)
			}
			r, err := l.Append(sample("bob", 0))
			if err != nil {
				t.Fatal(err)
			}
			if r.Seq != uint64(tc.whole+1) {
				t.Errorf("seq after repair %d, want %d", r.Seq, tc.whole+1)
			}
			if n, err := verifyFile(t, path); err != nil || n != tc.whole+1 {
				t.Fatalf("Verify after repair = %d, %v", n, err)
			}
			data, _ := os.ReadFile(path)
			if got := strings.Count(string(data), "\n"); got != tc.whole+1 || !strings.HasSuffix(string(data), "\n") {
				t.Errorf("%d lines after repair, want %d", got, tc.whole+1)
			}
		})
	}
}

// TestCorruptTailFailsClosed: a last line that is whole but not a record stops appends, with an error that says
// what to do, and the file is left as it was.
func TestCorruptTailFailsClosed(t *testing.T) {
	l, path := openTemp(t)
	appendN(t, l, "ada", 2)
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("not a record\n")
	f.Close()
	before, _ := os.ReadFile(path)
	if err := l.Check(); err == nil || !strings.Contains(err.Error(), "--verify") {
		t.Fatalf("Check on a corrupt tail: %v", err)
	}
	if _, err := l.Append(sample("bob", 0)); err == nil || !strings.Contains(err.Error(), "--verify") {
		t.Fatalf("Append on a corrupt tail: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("the file changed")
	}
}

func TestFileMode(t *testing.T) {
	old := syscall.Umask(0) // a careless umask must not make the log readable by others
	defer syscall.Umask(old)
	_, path := openTemp(t)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing", FileName)); err == nil {
		t.Error("Open in a missing directory succeeded")
	}
	if _, err := Open(t.TempDir()); err == nil {
		t.Error("Open on a directory succeeded")
	}
}

func TestAppendRefusesInvalidRecords(t *testing.T) {
	l, path := openTemp(t)
	for _, edit := range []func(*Record){
		func(r *Record) { r.Decision = "maybe" },
		func(r *Record) { r.Decision = "" },
		func(r *Record) { r.Transport = "carrier-pigeon" },
		func(r *Record) { r.Outcome = "" },
		func(r *Record) { r.ArgsDigest = `{"value":"secret"}` },
		func(r *Record) { r.ArgsDigest = "sha256:abc" },
	} {
		r := sample("ada", 0)
		edit(&r)
		if _, err := l.Append(r); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("Append(%+v) = %v, want ErrInvalidRecord", r, err)
		}
	}
	if fi, _ := os.Stat(path); fi.Size() != 0 {
		t.Errorf("refused records were written (%d bytes)", fi.Size())
	}
}

func TestAppendFillsAndCaps(t *testing.T) {
	l, path := openTemp(t)
	r := sample("ada", 0)
	r.Time = time.Time{}
	r.Client = strings.Repeat("é", 1000) + "\x1b[31m"
	before := time.Now()
	got, err := l.Append(r)
	if err != nil {
		t.Fatal(err)
	}
	if got.Time.Before(before.Add(-time.Second)) || got.Time.After(time.Now()) || got.Time.Location() != time.UTC {
		t.Errorf("time filled in as %v", got.Time)
	}
	if len(got.Client) > MaxField || !utf8.ValidString(got.Client) || !strings.HasSuffix(got.Client, "…") {
		t.Errorf("client not capped: %d bytes, valid %v", len(got.Client), utf8.ValidString(got.Client))
	}
	if n, err := verifyFile(t, path); err != nil || n != 1 {
		t.Fatalf("Verify = %d, %v", n, err)
	}
}

// TestAppendAfterRotation: when the operator moves the log away, the next record starts a new log at the path.
func TestAppendAfterRotation(t *testing.T) {
	l, path := openTemp(t)
	appendN(t, l, "ada", 3)
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	r, err := l.Append(sample("bob", 0))
	if err != nil || r.Seq != 1 || r.Prev != "" {
		t.Fatalf("append after rotation: seq %d prev %q, %v", r.Seq, r.Prev, err)
	}
	checkAll(t, path, map[string]int{"bob": 1})
	checkAll(t, path+".1", map[string]int{"ada": 3})
}

func TestAppendAfterClose(t *testing.T) {
	l, _ := openTemp(t)
	l.Close()
	if _, err := l.Append(sample("ada", 0)); err == nil {
		t.Error("Append after Close succeeded")
	}
}

func TestReadFilter(t *testing.T) {
	l, path := openTemp(t)
	for i, r := range []Record{
		{Principal: "ada", Tool: "read", Database: "shop", Decision: DecisionAllow, Outcome: OutcomeOK},
		{Principal: "ada", Tool: "write", Database: "shop", Decision: DecisionDeny, Outcome: "DENIED"},
		{Principal: "bob", Tool: "query", Database: "crm", Decision: DecisionAllow, Outcome: "QUERY_TIMEOUT"},
		{Principal: "bob", Tool: "list_databases", Decision: DecisionAllow, Outcome: OutcomeOK},
		{Principal: "", Tool: "", Transport: TransportHTTP, Decision: DecisionUnauthenticated, Outcome: "UNAUTHENTICATED"},
	} {
		r.Time = t0.Add(time.Duration(i) * time.Hour)
		if r.Transport == "" {
			r.Transport = TransportStdio
		}
		if _, err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		f    Filter
		want []uint64 // seqs
	}{
		{Filter{}, []uint64{1, 2, 3, 4, 5}},
		{Filter{Principal: "ada"}, []uint64{1, 2}},
		{Filter{Tool: "query"}, []uint64{3}},
		{Filter{Database: "shop"}, []uint64{1, 2}},
		{Filter{Decision: DecisionAllow}, []uint64{1, 3, 4}},
		{Filter{Outcome: OutcomeOK}, []uint64{1, 4}},
		{Filter{Since: t0.Add(time.Hour)}, []uint64{2, 3, 4, 5}},
		{Filter{Until: t0.Add(time.Hour)}, []uint64{1, 2}},
		{Filter{Since: t0.Add(time.Hour), Until: t0.Add(3 * time.Hour), Principal: "bob"}, []uint64{3, 4}},
		{Filter{Principal: "carol"}, nil},
	} {
		f, _ := os.Open(path)
		var got []uint64
		err := Read(f, tc.f, func(r Record) error { got = append(got, r.Seq); return nil })
		f.Close()
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("Read(%+v) = %v, %v; want %v", tc.f, got, err, tc.want)
		}
	}
	// fn's error stops Read and comes back.
	stop := errors.New("stop")
	f, _ := os.Open(path)
	defer f.Close()
	calls := 0
	if err := Read(f, Filter{}, func(Record) error { calls++; return stop }); err != stop || calls != 1 {
		t.Errorf("Read with a failing fn = %v after %d calls", err, calls)
	}
	// A line that is not a record is named.
	err := Read(strings.NewReader("{}\n"), Filter{}, func(Record) error { return nil })
	var ve *VerifyError
	if !errors.As(err, &ve) || ve.Line != 1 {
		t.Errorf("Read of a bad line = %v", err)
	}
}

// BenchmarkAppend measures one durable append (lock, tail check, write, fsync) to a file on the test's temp dir.
func BenchmarkAppend(b *testing.B) {
	l, _ := openTemp(b)
	r := sample("ada", 0)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := l.Append(r); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "median-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	}
}

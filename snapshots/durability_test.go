//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package snapshots

// Durability tests of docs/security.md §3: T1 (kill -9 loop), T4 (concurrent readers and writers) and T5 at the database
// level (damaged database files opened through a data directory).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/workload"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// ---------------------------------------------------------------------------------------------------------------
// T1: kill -9 loop
//
// The child (TestCrashChild, this test binary re-executed) opens one database file and runs crashWriters goroutines
// that commit as fast as they can. Every operation is announced before it is submitted and its outcome printed once
// it returns, one line each, in a single write(2) to a pipe (so a line is whole or absent):
//
//	start                                 the child is running (the parent starts its kill timer here)
//	ready                                 the database is open
//	send KEY KIND BRANCH A B EH           about to submit operation KEY (see crashOp)
//	ack KEY REV ROOTHASH [plan ID] [replay]
//	                                      KEY committed as revision REV; ROOTHASH = sha256 of the revision's root encoding
//	                                      (a plan operation names its plan, "p-KEY")
//	saved KEY ID BASE ROOTHASH            (plan) plan ID saved, pending, computed on head BASE, previewing root ROOTHASH
//	approved KEY                          (plan) plan p-KEY approved; the apply comes next
//	label KEY REV                         snapshot "s-KEY" created at REV
//	branch KEY REV                        branch "b-KEY" created at REV
//	same KEY REV ROOTHASH                 KEY changed nothing: no revision; REV is the head it found
//	early KEY REV                         KEY changed nothing, and the answer names a head REV that was not yet
//	                                      readable when it came back (a regression: TestAnsweredOnlyAfterCommit)
//	conflict KEY HEAD                     refused: expected_head was stale (HEAD) or the name is taken (HEAD 0)
//	fail KEY MESSAGE                      refused for another reason (for example a patch on a branch whose revert
//	                                      removed the resource)
//	fatal MESSAGE                         the child hit an unexpected error
//
// Each revision's message is its idempotency key, so the parent can tell which operation every revision in the file
// came from. The parent kills the child with SIGKILL 5-300 ms after "start", reopens the file with the default
// options and checks (crashCheck):
//
//   - the file opens with no manual step (store.OpenBolt with nil options, then Open);
//   - revision numbers run 1..last with no gap; times strictly increase with the number; every parent is an earlier
//     revision; every revision is on a branch that exists (no branch is ever deleted here);
//   - every acknowledged commit is there with the acknowledged number and root hash, its message is its key, and the
//     idempotency index maps the key to it; revisions seen at an earlier check are unchanged (same root);
//   - no key appears on two revisions (no duplicate), and no operation that was refused (conflict, fail) landed;
//   - a revision whose commit was not acknowledged is allowed only for an operation in flight at the kill (announced,
//     no outcome). Each writer goroutine has at most one operation in flight, so this is "at most one unacknowledged
//     extra revision per writer", and at most crashWriters in all: group commit may put several writers' requests
//     in the transaction that was committed when the kill came, and none of them was answered yet (§2.5);
//   - labels: every label points at an existing revision; every acknowledged snapshot exists at its revision; a label
//     nobody acknowledged belongs to a snapshot operation in flight. Same for branches created by the child;
//   - each branch head is the newest revision committed on that branch (or its base, if none was), and the branch's
//     head log agrees: HeadAt(branch, time of revision n) = n for every revision n on it, HeadAt(now) = head (§2.4);
//   - a write answered "unchanged" made no revision, and the head it named exists with the root it reported;
//   - every new revision's whole document, each head's and each label's, reads back (no missing node); at the last
//     iteration on each file, DB.Check (every revision and node) finds no problem;
//   - plans (apply_plan, §2.4 "every consumed plan has its revision and vice versa"): every plan in the catalog
//     belongs to a plan operation the child sent; a plan is applied if and only if a revision carries its key, and
//     then its Revision is that revision, whose root is the plan's Root, on its branch, with its Base as parent; a
//     plan not applied has no revision and no Revision. An in-flight apply may or may not have landed, but never
//     half. Every acknowledged apply is applied as the acknowledged revision; every acknowledged save is there with
//     its base and root; an acknowledged approval is not lost;
//   - re-sending every in-flight operation with its key: if it had landed (at n) the answer is a replay of n with
//     the same root; if not, a fresh commit (or the refusal the operation would get anyway); never a second revision
//     with that key. Re-sending the last acknowledged key replays it.
//
// The same file is used for crashEpoch iterations in a row (later children open files earlier children were killed
// on, and every check covers everything acknowledged on that file), then a new file starts, so that the very first
// steps (creating the file and revision 1) are killed too. Every third child opens the file through the data
// directory (store.Shared, which opens and closes the file between calls and syncs bbolt's freelist) instead of
// store.OpenBolt.
//
// TestKillNinePostgres (durability_postgres_test.go) runs the same loop on a database in PostgreSQL.
//
// 100 iterations by default; STRATA_LONG=1 runs 5,000 and STRATA_KILL_ITERATIONS=N runs N. STRATA_KILL_SEED repeats
// the kill times of an earlier run (the child's own choices are random each time).
//
// STRATA_CRASH_BREAK=noop (the apply does not consume its plan) or =after (the plan is marked applied in a separate
// transaction after the revision's) breaks plan applies on purpose, to see the checks catch it: the test must fail.

const (
	crashWriters = 4
	crashEpoch   = 25
	crashItems   = 200 // elements of the "items" resource (about 7 KiB, so it is stored as nodes)
)

// crashOp is one operation of the child: KIND is patch, put, revert, snap, branch or plan.
//
//	patch BRANCH I V EH   replace /items/I/v with V (EH: expected head, 0 for none)
//	put BRANCH SEED 0 0   replace the whole items resource (built from SEED)
//	revert BRANCH R 0 0   revert BRANCH to revision R
//	snap BRANCH 0 0 0     create snapshot "s-KEY" at the head of BRANCH
//	branch - R 0 0        create branch "b-KEY" at revision R
//	plan BRANCH I V 0     apply_plan of the patch of "patch BRANCH I V": a dry run, plan "p-KEY" saved (base = the
//	                      head the dry run saw, root = its preview) and approved, then the patch committed with
//	                      ExpectedHead = base and ConsumePlan in its transaction (see crashOp.applyPlan)
type crashOp struct {
	Key, Kind, Branch string
	A, B              int64
	EH                uint64
}

func (o crashOp) String() string {
	return fmt.Sprintf("send %s %s %s %d %d %d", o.Key, o.Kind, o.Branch, o.A, o.B, o.EH)
}

func parseCrashOp(f []string) (crashOp, error) {
	if len(f) != 7 || f[0] != "send" {
		return crashOp{}, fmt.Errorf("bad send line %q", strings.Join(f, " "))
	}
	a, err1 := strconv.ParseInt(f[4], 10, 64)
	b, err2 := strconv.ParseInt(f[5], 10, 64)
	eh, err3 := strconv.ParseUint(f[6], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return crashOp{}, err
	}
	return crashOp{Key: f[1], Kind: f[2], Branch: f[3], A: a, B: b, EH: eh}, nil
}

func (o crashOp) commits() bool {
	return o.Kind == "patch" || o.Kind == "put" || o.Kind == "revert" || o.Kind == "plan"
}

// crashBreak breaks plan applies on purpose (see STRATA_CRASH_BREAK above); empty in a normal run.
var crashBreak = os.Getenv("STRATA_CRASH_BREAK")

// applyPlan carries out a plan operation: it finds plan p-KEY, or makes it (dry run, save), approves it if it is
// pending, and applies it. Re-sent after a kill, it continues from the plan's state in the file: an applied plan's
// apply is replayed by its idempotency key; a plan whose base is no longer the head gets a conflict. note receives
// the "saved" and "approved" lines.
func (o crashOp) applyPlan(ctx context.Context, db *DB, p []revision.Operation, note func(string)) (*Result, error) {
	id := "p-" + o.Key
	pl, err := db.GetPlan(ctx, id)
	if errors.Is(err, ErrNotFound) {
		dry, err := db.Patch(ctx, "items", p, WriteOptions{Branch: o.Branch, IdempotencyKey: o.Key, DryRun: true})
		if err != nil || dry.Preview == nil {
			return dry, err // refused, replayed (a revision with this key and no plan: the checks report it) or no-op
		}
		now := db.Now()
		pl = Plan{ID: id, Principal: "crash", Op: "patch", Branch: o.Branch, Base: dry.Preview.Base.Rev.Number,
			Root: []byte(dry.Preview.RootEncoding()), Summary: o.String(), Created: now, Expires: now.Add(time.Hour),
			State: PlanPending}
		if err := db.SavePlan(ctx, pl); err != nil {
			return nil, err
		}
		note(fmt.Sprintf("saved %s %s %d %s", o.Key, id, pl.Base, rootHash(pl.Root)))
	} else if err != nil {
		return nil, err
	}
	if pl.State == PlanPending {
		if pl, err = db.DecidePlan(ctx, id, true, "operator", ""); err != nil {
			return nil, err
		}
		note("approved " + o.Key)
	}
	w := WriteOptions{Branch: pl.Branch, ExpectedHead: pl.Base, IdempotencyKey: o.Key, Message: o.Key, Author: "crash",
		Tool: "apply_plan", InTx: db.ConsumePlan(id, "crash", "")}
	if crashBreak != "" {
		w.InTx = nil
	}
	res, err := db.Patch(ctx, "items", p, w)
	if crashBreak == "after" && err == nil && !res.Replayed && !res.Unchanged {
		st, err := db.Resolve(ctx, Ref{Revision: res.Revision})
		if err != nil {
			return nil, err
		}
		if _, err := db.catalogOp(ctx, func(tx store.CatalogTx, _ time.Time) (any, error) {
			return nil, db.consume(tx, id, "crash", "", res.Revision, st.Rev.Root)
		}); err != nil {
			return nil, err
		}
	}
	return res, err
}

func crashItemsJSON(seed int64) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := 0; i < crashItems; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"i":%d,"v":%d,"pad":"item-%d"}`, i, seed*1000+int64(i), i)
	}
	b.WriteByte(']')
	return b.Bytes()
}

func rootHash(root []byte) string {
	h := sha256.Sum256(root)
	return hex.EncodeToString(h[:8])
}

// do carries out the operation and returns its outcome line (without the newline); note receives the lines a
// plan operation prints on its way.
func (o crashOp) do(ctx context.Context, db *DB, note func(string)) string {
	w := WriteOptions{Branch: o.Branch, ExpectedHead: o.EH, IdempotencyKey: o.Key, Message: o.Key, Author: "crash", Tool: o.Kind}
	var res *Result
	var err error
	switch o.Kind {
	case "patch":
		p, perr := revision.ParsePatch([]byte(fmt.Sprintf(`[{"op":"replace","path":"/%d/v","value":%d}]`, o.A, o.B)))
		if perr != nil {
			return "fatal " + perr.Error()
		}
		res, err = db.Patch(ctx, "items", p, w)
	case "plan":
		p, perr := revision.ParsePatch([]byte(fmt.Sprintf(`[{"op":"replace","path":"/%d/v","value":%d}]`, o.A, o.B)))
		if perr != nil {
			return "fatal " + perr.Error()
		}
		res, err = o.applyPlan(ctx, db, p, note)
	case "put":
		res, err = db.Put(ctx, "items", crashItemsJSON(o.A), w)
	case "revert":
		res, err = db.Revert(ctx, Ref{Revision: uint64(o.A)}, w)
	case "snap":
		var l store.LabelRecord
		l, err = db.CreateSnapshot(ctx, "s-"+o.Key, Ref{Branch: o.Branch}, "", "crash")
		if err == nil {
			return fmt.Sprintf("label %s %d", o.Key, l.Revision)
		}
	case "branch":
		var b store.BranchRecord
		b, err = db.CreateBranch(ctx, "b-"+o.Key, Ref{Revision: uint64(o.A)}, "crash")
		if err == nil {
			return fmt.Sprintf("branch %s %d", o.Key, b.Head)
		}
	default:
		return "fatal unknown operation " + o.Kind
	}
	var ce *ConflictError
	switch {
	case errors.As(err, &ce):
		return fmt.Sprintf("conflict %s %d", o.Key, ce.Head)
	case err != nil:
		return fmt.Sprintf("fail %s %s", o.Key, strings.Join(strings.Fields(err.Error()), " "))
	}
	st, err := db.Resolve(ctx, Ref{Revision: res.Revision})
	switch {
	case err != nil && res.Unchanged && errors.Is(err, ErrNotFound):
		// The answer names a head still being committed (TestAnsweredOnlyAfterCommit): the check below fails.
		return fmt.Sprintf("early %s %d", o.Key, res.Revision)
	case err != nil:
		return fmt.Sprintf("fatal %s: resolving acknowledged revision %d (%+v): %v", o.Key, res.Revision, *res, err)
	case res.Unchanged:
		return fmt.Sprintf("same %s %d %s", o.Key, res.Revision, rootHash(st.Rev.Root))
	}
	line := fmt.Sprintf("ack %s %d %s", o.Key, res.Revision, rootHash(st.Rev.Root))
	if o.Kind == "plan" {
		line += " plan p-" + o.Key
	}
	if res.Replayed {
		line += " replay"
	}
	return line
}

// TestCrashChild is the child process of TestKillNine; it does nothing in a normal run.
func TestCrashChild(t *testing.T) {
	path := os.Getenv("STRATA_CRASH_DB")
	if path == "" {
		t.Skip("child process of TestKillNine")
	}
	crashChild(path, os.Getenv("STRATA_CRASH_PREFIX"), os.Getenv("STRATA_CRASH_MODE"))
}

func crashChild(path, prefix, mode string) {
	var mu sync.Mutex
	emit := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		os.Stdout.Write([]byte(s + "\n")) // one write(2): the line reaches the pipe whole or not at all
	}
	fatal := func(format string, args ...any) {
		emit("fatal " + strings.Join(strings.Fields(fmt.Sprintf(format, args...)), " "))
		os.Exit(3)
	}
	// Never outlive a parent that died.
	time.AfterFunc(30*time.Second, func() { fatal("child still running after 30 s") })
	emit("start")
	ctx := context.Background()
	var db *DB
	if mode == "postgres" {
		url, name, _ := strings.Cut(path, "#")
		d, err := OpenDir(url, nil)
		if err != nil {
			fatal("OpenDir: %v", err)
		}
		if db, err = d.Open(ctx, name); errors.Is(err, ErrNotFound) {
			db, err = d.Create(ctx, name, "crash")
		}
		if err != nil {
			fatal("Open: %v", err)
		}
	} else if mode == "shared" {
		d, err := OpenDir(filepath.Dir(path), nil)
		if err != nil {
			fatal("OpenDir: %v", err)
		}
		name := strings.TrimSuffix(filepath.Base(path), Ext)
		if _, err := os.Stat(path); err != nil {
			db, err = d.Create(ctx, name, "crash")
			if err != nil {
				fatal("Create: %v", err)
			}
		} else if db, err = d.Open(ctx, name); err != nil {
			fatal("Open: %v", err)
		}
	} else {
		be, err := store.OpenBolt(path, nil)
		if err != nil {
			fatal("OpenBolt: %v", err)
		}
		if db, err = Open(ctx, be, &Options{Creator: "crash"}); err != nil {
			fatal("Open: %v", err)
		}
	}
	emit("ready")
	run := func(op crashOp) string {
		emit(op.String())
		out := op.do(ctx, db, emit)
		emit(out)
		if strings.HasPrefix(out, "fatal") {
			os.Exit(3)
		}
		return out
	}
	// Setup, with fixed keys and names: replays and conflicts after the first child.
	run(crashOp{Key: "setup-items", Kind: "put", Branch: Main, A: 0})
	if out := run(crashOp{Key: "setup-side", Kind: "branch", Branch: "-", A: 0}); strings.HasPrefix(out, "fail") {
		fatal("%s", out)
	}
	// A branch per writer where only its plans commit: on a shared branch most applies would find their base moved
	// by the other writers (they still go there a quarter of the time, for refused applies).
	for w := 0; w < crashWriters; w++ {
		if out := run(crashOp{Key: fmt.Sprintf("setup-plans-w%d", w), Kind: "branch", Branch: "-", A: 0}); strings.HasPrefix(out, "fail") {
			fatal("%s", out)
		}
	}
	var wg sync.WaitGroup
	for w := 0; w < crashWriters; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
			for seq := 0; ; seq++ {
				op := crashOp{Key: fmt.Sprintf("%s-w%d-%d", prefix, w, seq), Branch: Main}
				if r.IntN(10) < 3 {
					op.Branch = "b-setup-side"
				}
				head := func() uint64 {
					st, err := db.Resolve(ctx, Ref{Branch: op.Branch})
					if err != nil {
						fatal("resolve %s: %v", op.Branch, err)
					}
					return st.Rev.Number
				}
				switch k := r.IntN(100); {
				case k < 45:
					op.Kind, op.A, op.B = "patch", int64(r.IntN(crashItems)), r.Int64N(1e9)
					if k < 15 {
						op.EH = head()
					}
				case k < 50:
					op.Kind, op.A = "put", int64(seq+1)
				case k < 63:
					op.Kind, op.A = "revert", 1+r.Int64N(int64(head()))
				case k < 77:
					op.Kind = "snap"
				case k < 85:
					op.Kind, op.Branch, op.A = "branch", "-", 1+r.Int64N(int64(head()))
				default:
					op.Kind, op.A, op.B = "plan", int64(r.IntN(crashItems)), r.Int64N(1e9)
					if r.IntN(4) > 0 {
						op.Branch = fmt.Sprintf("b-setup-plans-w%d", w)
					}
				}
				run(op)
			}
		}(w)
	}
	wg.Wait()
}

// crashState is what the parent knows about one database file.
type crashState struct {
	path      string
	sent      map[string]crashOp
	acked     map[string]uint64      // commit key → revision
	ackRoot   map[string]string      // commit key → root hash
	labels    map[string]uint64      // snapshot name → revision
	branches  map[string]uint64      // branch name (created by the child) → base revision
	refused   map[string]bool        // keys whose operation was refused
	roots     map[uint64][]byte      // root of every revision seen at a check
	lastAck   string                 // the last acknowledged commit key
	checked   uint64                 // revisions up to this one were read back whole at an earlier check
	readBack  map[uint64]bool        // revisions read back whole
	revs      []store.RevisionRecord // every revision, as of the last check
	same      map[string]sameAnswer  // commit key → the head named by an "unchanged" answer
	earlyLost map[string]bool        // "unchanged" answers whose head never became durable (reported once)
	planSaved map[string]savedPlan   // plan operation key → its plan, as acknowledged saved
	approved  map[string]bool        // plan operation key → its plan's approval was acknowledged
}

// savedPlan is a plan as its save was acknowledged: its base and the hash of its root.
type savedPlan struct {
	base uint64
	root string
}

// sameAnswer is an answer saying that a write changed nothing: the head it named (hash "" if it was not readable).
type sameAnswer struct {
	rev  uint64
	hash string
}

type crashStats struct {
	iterations, acks, labels, branches, inFlight, landedUnacked, maxLandedUnacked, replays, killedBeforeReady int
	same, early, earlyLost                                                                                    int
	plansSaved, planAcks, planApplyKilled, planApplyLanded                                                    int
	revisions                                                                                                 uint64
	childTime, checkTime                                                                                      time.Duration
	modes                                                                                                     map[string]int
}

func TestKillNine(t *testing.T) {
	iterations := 100
	if os.Getenv("STRATA_LONG") == "1" {
		iterations = 5000
	}
	dir := t.TempDir()
	killNine(t, iterations, func(epoch int) string { return filepath.Join(dir, fmt.Sprintf("crash%d%s", epoch, Ext)) },
		func(it int) string {
			if it%3 == 2 {
				return "shared"
			}
			return "bolt"
		})
}

// killNine runs the kill -9 loop: each iteration starts a child on the database at location(epoch) (a file, or
// "URL#NAME" in PostgreSQL) that mode(it) names the backend of, kills it and checks the database.
func killNine(t *testing.T, iterations int, location func(epoch int) string, mode func(it int) string) {
	if n, err := strconv.Atoi(os.Getenv("STRATA_KILL_ITERATIONS")); err == nil && n > 0 {
		iterations = n
	}
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("STRATA_KILL_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("%d iterations, seed %d (set STRATA_KILL_SEED to repeat the kill times)", iterations, seed)
	r := rand.New(rand.NewPCG(seed, 1))
	stats := crashStats{modes: map[string]int{}}
	start := time.Now()
	var st *crashState
	for it := 0; it < iterations; it++ {
		if it%crashEpoch == 0 {
			st = &crashState{path: location(it / crashEpoch), sent: map[string]crashOp{},
				acked: map[string]uint64{}, ackRoot: map[string]string{}, labels: map[string]uint64{}, branches: map[string]uint64{},
				refused: map[string]bool{}, roots: map[uint64][]byte{}, readBack: map[uint64]bool{}, same: map[string]sameAnswer{}, earlyLost: map[string]bool{},
				planSaved: map[string]savedPlan{}, approved: map[string]bool{}}
		}
		mode := mode(it)
		stats.modes[mode]++
		killAfter := time.Duration(5+r.IntN(296)) * time.Millisecond
		t0 := time.Now()
		lines := runCrashChild(t, st.path, fmt.Sprintf("i%d", it), mode, killAfter)
		stats.childTime += time.Since(t0)
		t0 = time.Now()
		inFlight := st.absorb(t, it, lines, &stats)
		crashCheck(t, st, inFlight, &stats)
		if (it+1)%crashEpoch == 0 || it == iterations-1 {
			crashFullCheck(t, st.path) // the library's own check of §2.4, every node included, once per file
		}
		stats.checkTime += time.Since(t0)
		stats.iterations++
		if t.Failed() {
			if len(lines) > 400 {
				lines = append(lines[:200:200], append([]string{"…"}, lines[len(lines)-200:]...)...)
			}
			t.Fatalf("iteration %d (killed after %v, %s): see above; seed %d; the child printed:\n%s", it, killAfter, mode,
				seed, strings.Join(lines, "\n"))
		}
	}
	t.Logf("%d kills in %v (children %v, checks %v); modes %v", stats.iterations, time.Since(start).Round(time.Millisecond),
		stats.childTime.Round(time.Millisecond), stats.checkTime.Round(time.Millisecond), stats.modes)
	t.Logf("acknowledged: %d commits (%d of them replays), %d snapshots, %d branches; %d revisions in the last file",
		stats.acks, stats.replays, stats.labels, stats.branches, stats.revisions)
	t.Logf("answered unchanged (no revision): %d; of those, naming a head not yet readable: %d, and never durable: %d",
		stats.same+stats.early, stats.early, stats.earlyLost)
	t.Logf("plans: %d saved, %d applies acknowledged; killed during an approved plan's apply: %d, of which landed: %d",
		stats.plansSaved, stats.planAcks, stats.planApplyKilled, stats.planApplyLanded)
	t.Logf("killed before the database was open: %d; operations in flight at the kill: %d; of those, landed without an "+
		"acknowledgement: %d (at most %d at one kill)", stats.killedBeforeReady, stats.inFlight, stats.landedUnacked, stats.maxLandedUnacked)
}

// runCrashChild starts a child on path, kills it killAfter its "start" line, and returns every line it printed.
func runCrashChild(t *testing.T, path, prefix, mode string, killAfter time.Duration) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), "STRATA_CRASH_DB="+path, "STRATA_CRASH_PREFIX="+prefix, "STRATA_CRASH_MODE="+mode)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	var lines []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if sc.Text() == "start" {
				close(started)
			}
			lines = append(lines, sc.Text())
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case <-started:
		time.Sleep(killAfter)
	case <-done:
	case <-time.After(20 * time.Second):
		t.Error("the child did not start within 20 s")
	}
	exited := false
	select {
	case <-done:
		exited = true
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
	werr := cmd.Wait()
	if exited || strings.Contains(stderr.String(), "DATA RACE") || (len(lines) > 0 && strings.HasPrefix(lines[len(lines)-1], "fatal")) {
		t.Errorf("child ended by itself or reported an error (%v)\nstdout tail: %q\nstderr:\n%s", werr, tail(lines, 5), stderr.String())
	}
	return lines
}

func tail(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// absorb records what the child printed and returns the operations in flight at the kill.
func (st *crashState) absorb(t *testing.T, it int, lines []string, stats *crashStats) map[string]crashOp {
	t.Helper()
	pending := map[string]crashOp{}
	ready := false
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "start":
		case "ready":
			ready = true
		case "send":
			op, err := parseCrashOp(f)
			if err != nil {
				t.Fatal(err)
			}
			if prev, ok := st.sent[op.Key]; ok && prev != op {
				t.Fatalf("key %s reused for a different operation", op.Key)
			}
			st.sent[op.Key] = op
			pending[op.Key] = op
		case "saved", "approved":
			if len(f) < 2 || pending[f[1]].Kind != "plan" {
				t.Fatalf("%q for no plan operation in flight", line)
			}
			if f[0] == "saved" {
				stats.plansSaved++
			}
			st.progress(t, line)
		case "ack", "same", "early", "label", "branch", "conflict", "fail":
			if len(f) < 3 {
				t.Fatalf("bad line %q", line)
			}
			key := f[1]
			op, ok := pending[key]
			if !ok {
				t.Fatalf("outcome for %s, which was not sent: %q", key, line)
			}
			delete(pending, key)
			st.outcome(t, op, line)
			switch f[0] {
			case "ack":
				stats.acks++
				if op.Kind == "plan" {
					stats.planAcks++
				}
				if strings.HasSuffix(line, " replay") {
					stats.replays++
				}
			case "same":
				stats.same++
			case "early":
				stats.early++
			case "label":
				stats.labels++
			case "branch":
				stats.branches++
			}
		default:
			t.Errorf("iteration %d: unexpected child output %q", it, line)
		}
	}
	if !ready {
		stats.killedBeforeReady++
	}
	stats.inFlight += len(pending)
	return pending
}

// progress records a line a plan operation prints before its outcome ("saved", "approved").
func (st *crashState) progress(t *testing.T, line string) {
	t.Helper()
	f := strings.Fields(line)
	switch {
	case f[0] == "saved" && len(f) == 5 && f[2] == "p-"+f[1]:
		base, err := strconv.ParseUint(f[3], 10, 64)
		if err != nil {
			t.Fatalf("bad line %q", line)
		}
		st.planSaved[f[1]] = savedPlan{base, f[4]}
	case f[0] == "approved" && len(f) == 2:
		st.approved[f[1]] = true
	default:
		t.Fatalf("bad line %q", line)
	}
}

// outcome records the answer to op given by line (from the child or from a retry in the parent).
func (st *crashState) outcome(t *testing.T, op crashOp, line string) {
	t.Helper()
	f := strings.Fields(line)
	switch f[0] {
	case "ack":
		if !op.commits() || len(f) < 4 || (op.Kind == "plan") != (len(f) > 5 && f[4] == "plan" && f[5] == "p-"+op.Key) {
			t.Fatalf("bad acknowledgement %q for %v", line, op)
		}
		n, _ := strconv.ParseUint(f[2], 10, 64)
		if prev, ok := st.acked[op.Key]; ok && (prev != n || st.ackRoot[op.Key] != f[3]) {
			t.Errorf("key %s acknowledged as revision %d (%s), earlier as %d (%s)", op.Key, n, f[3], prev, st.ackRoot[op.Key])
		}
		st.acked[op.Key], st.ackRoot[op.Key], st.lastAck = n, f[3], op.Key
	case "same", "early":
		if !op.commits() {
			t.Fatalf("bad answer %q for %v", line, op)
		}
		n, _ := strconv.ParseUint(f[2], 10, 64)
		h := ""
		if f[0] == "same" && len(f) > 3 {
			h = f[3]
		}
		st.same[op.Key] = sameAnswer{n, h}
	case "label":
		n, _ := strconv.ParseUint(f[2], 10, 64)
		st.labels["s-"+op.Key] = n
	case "branch":
		n, _ := strconv.ParseUint(f[2], 10, 64)
		st.branches["b-"+op.Key] = n
	case "conflict", "fail":
		if _, ok := st.acked[op.Key]; !ok && st.labels["s-"+op.Key] == 0 && st.branches["b-"+op.Key] == 0 {
			st.refused[op.Key] = true
		}
	}
}

// crashCheck reopens the file after a kill and checks the promise (see the comment at the top).
func crashCheck(t *testing.T, st *crashState, inFlight map[string]crashOp, stats *crashStats) {
	t.Helper()
	ctx := context.Background()
	be, ok := openCrashed(t, st.path)
	if !ok {
		if len(st.acked) > 0 {
			t.Fatal("the database file is gone")
		}
		return // killed before the file was created
	}
	db, err := Open(ctx, be, nil)
	if err != nil {
		be.Close()
		t.Fatalf("Open after kill -9: %v", err)
	}
	defer func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()

	keyRev := crashInvariants(t, db, st, inFlight, stats, 0)
	if t.Failed() {
		return
	}

	// Re-send every operation in flight at the kill, with its key.
	keys := make([]string, 0, len(inFlight))
	for k := range inFlight {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		op := inFlight[k]
		if op.Kind == "plan" {
			// Killed during the apply of an approved plan (the apply landed or not, never half: crashInvariants).
			if _, ok := keyRev[k]; ok {
				stats.planApplyKilled++
				stats.planApplyLanded++
			} else if st.approved[k] {
				stats.planApplyKilled++
			}
		}
		out := op.do(ctx, db, func(line string) { st.progress(t, line) })
		f := strings.Fields(out)
		landed, hasLanded := keyRev[k]
		switch {
		case f[0] == "fatal":
			t.Errorf("retry of %v: %s", op, out)
		case op.commits() && hasLanded:
			if f[0] != "ack" || f[2] != strconv.FormatUint(landed, 10) || !strings.HasSuffix(out, " replay") ||
				f[3] != rootHash(st.roots[landed]) {
				t.Errorf("retry of %v, which landed unacknowledged as revision %d: got %q, want a replay of it", op, landed, out)
			}
		case op.commits():
			if f[0] == "ack" && strings.HasSuffix(out, " replay") || f[0] == "early" {
				t.Errorf("retry of %v, which had not landed: got %q", op, out)
			}
		case op.Kind == "snap" || op.Kind == "branch":
			// The label or branch either landed before the kill (the retry finds the name taken) or is created now.
			if f[0] != "conflict" && f[0] != "label" && f[0] != "branch" {
				t.Errorf("retry of %v: got %q", op, out)
			}
			if f[0] == "conflict" {
				if l, ok := labelExists(t, db, "s-"+k); ok && op.Kind == "snap" {
					out = fmt.Sprintf("label %s %d", k, l.Revision)
				} else if b, err := db.Branches(ctx); err == nil && op.Kind == "branch" {
					for _, b := range b {
						if b.Name == "b-"+k {
							out = fmt.Sprintf("branch %s %d", k, b.Base)
						}
					}
				}
				if strings.HasPrefix(out, "conflict") {
					t.Errorf("retry of %v: %q, but nothing has that name", op, out)
				}
			}
		}
		st.outcome(t, op, out)
	}
	// Re-sending the last acknowledged key replays it.
	if k := st.lastAck; k != "" {
		out := st.sent[k].do(ctx, db, func(line string) { t.Errorf("replaying %s: %q", k, line) })
		want := fmt.Sprintf("ack %s %d %s replay", k, st.acked[k], st.ackRoot[k])
		if st.sent[k].Kind == "plan" {
			want = fmt.Sprintf("ack %s %d %s plan p-%s replay", k, st.acked[k], st.ackRoot[k], k)
		}
		if out != want {
			t.Errorf("re-sent the last acknowledged key: got %q, want %q", out, want)
		}
	}
	// After the retries (reading only the revisions they added), still no key on two revisions.
	crashInvariants(t, db, st, nil, stats, uint64(len(st.revs)))
}

// crashFullCheck runs DB.Check (every revision, node, branch and snapshot) on the file.
func crashFullCheck(t *testing.T, path string) {
	t.Helper()
	be, ok := openCrashed(t, path)
	if !ok {
		return
	}
	db, err := Open(context.Background(), be, nil)
	if err != nil {
		be.Close()
		t.Fatal(err)
	}
	defer db.Close()
	rep, err := db.Check(context.Background(), nil)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if len(rep.Problems) > 0 {
		t.Errorf("Check found %d problems in %s: %v", len(rep.Problems), path, rep.Problems)
	}
}

// openCrashed opens the database a killed child wrote: a file with store.OpenBolt (default options), or "URL#NAME" in
// PostgreSQL. ok is false if there is none (the child was killed before it made it).
func openCrashed(t *testing.T, path string) (store.Backend, bool) {
	t.Helper()
	if url, name, isPG := strings.Cut(path, "#"); isPG {
		p, err := store.OpenPostgres(context.Background(), url, nil)
		if err != nil {
			t.Fatalf("reconnecting after kill -9: %v", err)
		}
		d, err := p.Open(context.Background(), name)
		if errors.Is(err, store.ErrNotFound) {
			p.Close()
			return nil, false
		}
		if err != nil {
			p.Close()
			t.Fatalf("reopening after kill -9: %v", err)
		}
		return pgCrashed{d, p}, true
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, false
	}
	be, err := store.OpenBolt(path, nil)
	if err != nil {
		t.Fatalf("reopening after kill -9: %v", err)
	}
	return be, true
}

// pgCrashed is a database in PostgreSQL with the pool it was opened from, closed with it.
type pgCrashed struct {
	*store.PostgresDB
	p *store.Postgres
}

func (b pgCrashed) Close() error {
	err := b.PostgresDB.Close()
	b.p.Close()
	return err
}

func labelExists(t *testing.T, db *DB, name string) (store.LabelRecord, bool) {
	var l store.LabelRecord
	err := db.be.View(context.Background(), func(c store.CatalogReader) error {
		var err error
		l, err = c.Label(name)
		return err
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	return l, err == nil
}

// crashInvariants checks the catalog against what the parent knows, and returns the revision of each key in the file.
// inFlight is nil once every operation has an outcome. With from > 0, revisions up to from are taken from the
// previous call (st.revs) instead of being read and checked again.
func crashInvariants(t *testing.T, db *DB, st *crashState, inFlight map[string]crashOp, stats *crashStats, from uint64) map[string]uint64 {
	t.Helper()
	ctx := context.Background()
	var revs []store.RevisionRecord // revs[n-1] is revision n
	var branches []store.BranchRecord
	var labels []store.LabelRecord
	idem := map[string]uint64{}
	headLog := map[uint64]uint64{} // revision → HeadAt(its branch, its time)
	headNow := map[string]uint64{} // branch → HeadAt(branch, far future)
	err := db.be.View(ctx, func(c store.CatalogReader) error {
		last, err := c.LastRevision()
		if err != nil {
			return err
		}
		if last < from {
			return fmt.Errorf("the file ends at revision %d, it had %d", last, from)
		}
		revs = make([]store.RevisionRecord, 0, last-from)
		if err := c.Revisions(last, func(r store.RevisionRecord) bool {
			if r.Number <= from {
				return false
			}
			revs = append(revs, r)
			return true
		}); err != nil {
			return err
		}
		slices.Reverse(revs)
		if branches, err = c.Branches(); err != nil {
			return err
		}
		if labels, err = c.Labels(); err != nil {
			return err
		}
		ids := map[string]uint64{}
		for _, b := range branches {
			ids[b.Name] = b.ID
			n, ok, err := c.HeadAt(b.ID, time.Now().Add(time.Hour))
			if err != nil {
				return err
			}
			if ok {
				headNow[b.Name] = n
			}
		}
		for _, r := range revs { // only the revisions after from
			if id, ok := ids[r.Branch]; ok {
				n, ok, err := c.HeadAt(id, r.Time)
				if err != nil {
					return err
				}
				if ok {
					headLog[r.Number] = n
				}
			}
			if r.Message != "" {
				if n, ok, err := c.Idempotent(r.Message); err != nil {
					return err
				} else if ok {
					idem[r.Message] = n
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading the catalog: %v", err)
	}
	revs = append(slices.Clone(st.revs[:from]), revs...)
	st.revs = revs
	stats.revisions = uint64(len(revs))

	// Numbers, times, parents, branches.
	byName := map[string]store.BranchRecord{}
	for _, b := range branches {
		byName[b.Name] = b
	}
	newest := map[string]uint64{}
	keyRev := map[string]uint64{}
	for i, r := range revs {
		n := uint64(i + 1)
		if n <= from {
			newest[r.Branch] = n
			if n > 1 {
				keyRev[r.Message] = n
			}
			continue
		}
		if r.Number != n {
			t.Fatalf("revision numbers are not consecutive: record %d is numbered %d", n, r.Number)
		}
		if i > 0 && !r.Time.After(revs[i-1].Time) {
			t.Errorf("revision %d at %v is not after revision %d at %v", n, r.Time, n-1, revs[i-1].Time)
		}
		for _, p := range r.Parents {
			if p == 0 || p >= n {
				t.Errorf("revision %d has parent %d", n, p)
			}
		}
		if n > 1 && len(r.Parents) == 0 {
			t.Errorf("revision %d has no parent", n)
		}
		if _, ok := byName[r.Branch]; !ok {
			t.Errorf("revision %d is on branch %q, which does not exist", n, r.Branch)
		}
		newest[r.Branch] = n
		if got, ok := headLog[n]; !ok || got != n {
			t.Errorf("head log of %s at the time of revision %d says %d (found %v)", r.Branch, n, got, ok)
		}
		if old, ok := st.roots[n]; ok && !bytes.Equal(old, r.Root) {
			t.Errorf("revision %d changed its root since the last check", n)
		}
		st.roots[n] = r.Root
		if n == 1 {
			continue
		}
		// Every revision after the first comes from one operation of the child, named by its message.
		k := r.Message
		op, ok := st.sent[k]
		switch {
		case !ok:
			t.Errorf("revision %d has message %q, which is no key the child sent", n, k)
		case !op.commits():
			t.Errorf("revision %d comes from %v, which does not commit", n, op)
		case st.refused[k]:
			t.Errorf("revision %d comes from %v, which was refused", n, op)
		}
		if prev, dup := keyRev[k]; dup {
			t.Errorf("key %s committed twice: revisions %d and %d", k, prev, n)
		}
		keyRev[k] = n
		if got := idem[k]; got != n {
			t.Errorf("idempotency key %s maps to %d, its revision is %d", k, got, n)
		}
	}
	// Acknowledged commits are there, unchanged.
	for k, n := range st.acked {
		switch {
		case n > uint64(len(revs)):
			t.Errorf("acknowledged revision %d (%s) is gone: the file ends at %d", n, k, len(revs))
		case keyRev[k] != n:
			t.Errorf("acknowledged key %s was revision %d, the file has it at %d", k, n, keyRev[k])
		case rootHash(revs[n-1].Root) != st.ackRoot[k]:
			t.Errorf("acknowledged revision %d (%s) has another root", n, k)
		}
	}
	// Plans (§2.4): every consumed plan has its revision and vice versa.
	crashPlans(t, db, st, revs, keyRev)
	// A write answered "unchanged" made no revision, and the head it named is there, unchanged.
	for k, a := range st.same {
		if n, ok := keyRev[k]; ok {
			t.Errorf("key %s was answered unchanged, yet revision %d carries it", k, n)
		}
		switch {
		case a.rev > uint64(len(revs)) && a.hash == "":
			if !st.earlyLost[k] {
				st.earlyLost[k] = true
				stats.earlyLost++
				t.Errorf("the answer to %s named revision %d, which never became durable (the file ends at %d)", k, a.rev, len(revs))
			}
		case a.rev > uint64(len(revs)) || a.rev == 0:
			t.Errorf("key %s was answered unchanged at revision %d, which is gone: the file ends at %d", k, a.rev, len(revs))
		case a.hash != "" && rootHash(revs[a.rev-1].Root) != a.hash:
			t.Errorf("key %s was answered unchanged at revision %d, which now has another root", k, a.rev)
		}
	}
	// Unacknowledged revisions belong to operations in flight; at most one per writer.
	landed := map[string]int{}
	nLanded := 0
	for k, n := range keyRev {
		if _, ok := st.acked[k]; ok {
			continue
		}
		if _, ok := inFlight[k]; !ok {
			t.Errorf("revision %d (%s) was never acknowledged and its operation was not in flight at the kill", n, k)
			continue
		}
		nLanded++
		w := k[:strings.LastIndexByte(k, '-')]
		if landed[w]++; landed[w] > 1 {
			t.Errorf("writer %s has %d unacknowledged revisions", w, landed[w])
		}
	}
	if inFlight != nil {
		stats.landedUnacked += nLanded
		stats.maxLandedUnacked = max(stats.maxLandedUnacked, nLanded)
		if nLanded > crashWriters {
			t.Errorf("%d unacknowledged revisions, more than the %d writers", nLanded, crashWriters)
		}
	}
	// Labels.
	haveLabel := map[string]uint64{}
	for _, l := range labels {
		haveLabel[l.Name] = l.Revision
		if l.Revision == 0 || l.Revision > uint64(len(revs)) {
			t.Errorf("snapshot %s points at revision %d, which does not exist", l.Name, l.Revision)
		}
		if _, ok := st.labels[l.Name]; !ok {
			if _, ok := inFlight[strings.TrimPrefix(l.Name, "s-")]; !ok {
				t.Errorf("snapshot %s was never acknowledged and was not in flight", l.Name)
			}
		}
	}
	for name, n := range st.labels {
		if got, ok := haveLabel[name]; !ok || got != n {
			t.Errorf("acknowledged snapshot %s at %d: the file has %d (exists %v)", name, n, got, ok)
		}
	}
	// Branches: heads.
	for _, b := range branches {
		want := b.Base
		if n, ok := newest[b.Name]; ok {
			want = n
		}
		if b.Head != want {
			t.Errorf("branch %s: head %d, but its newest revision is %d", b.Name, b.Head, want)
		}
		if headNow[b.Name] != b.Head {
			t.Errorf("branch %s: head %d, head log says %d", b.Name, b.Head, headNow[b.Name])
		}
		if b.Head == 0 || b.Head > uint64(len(revs)) || b.Base == 0 || b.Base > b.Head {
			t.Errorf("branch %s: head %d, base %d, %d revisions", b.Name, b.Head, b.Base, len(revs))
		}
		if b.Name == Main {
			continue
		}
		if _, ok := st.branches[b.Name]; !ok {
			if _, ok := inFlight[strings.TrimPrefix(b.Name, "b-")]; !ok {
				t.Errorf("branch %s was never acknowledged and was not in flight", b.Name)
			}
		}
	}
	for name, base := range st.branches {
		if b, ok := byName[name]; !ok || b.Base != base {
			t.Errorf("acknowledged branch %s at %d: the file has %+v", name, base, b)
		}
	}
	// The whole document of every new revision, of each head of main and the side branch, and of every revision a
	// label or branch points at, reads back. (Older revisions were read back at an earlier check, and their roots are
	// unchanged; nodes are immutable.)
	read := map[uint64]bool{byName[Main].Head: true, byName["b-setup-side"].Head: true}
	for n := st.checked + 1; n <= uint64(len(revs)); n++ {
		read[n] = true
	}
	for _, b := range branches {
		read[b.Head] = true
	}
	for _, l := range labels {
		read[l.Revision] = true
	}
	for n := range read {
		if n == 0 || n > uint64(len(revs)) || (n <= st.checked && st.readBack[n]) {
			continue
		}
		st.readBack[n] = true
		root, err := revision.ValueFromEncoding(string(revs[n-1].Root))
		if err == nil {
			_, err = db.Forest().JSON(ctx, root)
		}
		if err != nil {
			t.Errorf("revision %d does not read back: %v", n, err)
		}
	}
	st.checked = uint64(len(revs))
	return keyRev
}

// crashPlans checks the plans in the catalog against the revisions (revs[n-1] is revision n; keyRev maps each key to
// the revision carrying it) and against what the child acknowledged.
func crashPlans(t *testing.T, db *DB, st *crashState, revs []store.RevisionRecord, keyRev map[string]uint64) {
	t.Helper()
	plans, err := db.Plans(context.Background())
	if err != nil {
		t.Fatalf("reading the plans: %v", err)
	}
	have := map[string]Plan{} // plan operation key → its plan
	for _, p := range plans {
		k, _ := strings.CutPrefix(p.ID, "p-")
		if op, ok := st.sent[k]; !ok || op.Kind != "plan" || p.ID != "p-"+k {
			t.Errorf("plan %s belongs to no plan operation the child sent", p.ID)
			continue
		}
		have[k] = p
		n, landed := keyRev[k]
		switch p.State {
		case PlanApplied:
			switch {
			case !landed:
				t.Errorf("plan %s is applied as revision %d, but no revision carries its key (%d revisions)", p.ID, p.Revision, len(revs))
			case p.Revision != n:
				t.Errorf("plan %s is applied as revision %d, but its key is on revision %d", p.ID, p.Revision, n)
			case !bytes.Equal(revs[n-1].Root, p.Root):
				t.Errorf("plan %s: revision %d has another root than the plan previewed", p.ID, n)
			case revs[n-1].Branch != p.Branch || len(revs[n-1].Parents) == 0 || revs[n-1].Parents[0] != p.Base:
				t.Errorf("plan %s on %s at %d: revision %d is on %s with parents %v", p.ID, p.Branch, p.Base, n, revs[n-1].Branch, revs[n-1].Parents)
			}
		case PlanPending, PlanApproved:
			if landed {
				t.Errorf("plan %s is %s, yet revision %d carries its key: committed without consuming the plan", p.ID, p.State, n)
			}
			if p.Revision != 0 {
				t.Errorf("plan %s is %s with revision %d", p.ID, p.State, p.Revision)
			}
			if p.State == PlanPending && st.approved[k] {
				t.Errorf("plan %s: its approval was acknowledged, it is pending again", p.ID)
			}
		default:
			t.Errorf("plan %s is %s; nobody rejects plans here", p.ID, p.State)
		}
		if s, ok := st.planSaved[k]; ok && (s.base != p.Base || s.root != rootHash(p.Root)) {
			t.Errorf("plan %s was saved at base %d with root %s; the file has %d and %s", p.ID, s.base, s.root, p.Base, rootHash(p.Root))
		}
	}
	for k := range st.planSaved {
		if _, ok := have[k]; !ok {
			t.Errorf("plan p-%s was saved (acknowledged), the file has no such plan", k)
		}
	}
	for k, n := range keyRev {
		if st.sent[k].Kind != "plan" {
			continue
		}
		if p, ok := have[k]; !ok || p.State != PlanApplied || p.Revision != n {
			t.Errorf("revision %d applies plan p-%s, which is not applied as it (found %v: %s, revision %d)", n, k, ok, p.State, p.Revision)
		}
		if a, ok := st.acked[k]; ok && a != n {
			t.Errorf("apply of plan p-%s acknowledged as revision %d, its key is on %d", k, a, n)
		}
	}
	for k, n := range st.acked {
		if _, ok := keyRev[k]; !ok && st.sent[k].Kind == "plan" {
			t.Errorf("apply of plan p-%s acknowledged as revision %d: no revision carries its key", k, n)
		}
	}
}

// ---------------------------------------------------------------------------------------------------------------
// T4: concurrent readers and writers on a bbolt-backed database.

func TestConcurrentReadersAndWriters(t *testing.T) {
	dur := 5 * time.Second
	if d, err := time.ParseDuration(os.Getenv("STRATA_T4_DURATION")); err == nil {
		dur = d
	}
	goroutinesBefore := runtime.NumGoroutine()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t4.strata")
	// A first memory map of one page makes bbolt remap as the file grows, during the test: a remap waits for every
	// read transaction to end, which is what could stall readers.
	be, err := store.OpenBolt(path, &store.BoltOptions{InitialMmapSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, be, &Options{Creator: "t4"})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			db.Close()
		}
	}()
	must(db.Put(ctx, "counter", []byte(`{"n":0}`), WriteOptions{}))
	must(db.Put(ctx, "log", []byte(`[]`), WriteOptions{}))
	var big bytes.Buffer
	big.WriteByte('[')
	for i := 0; i < 20000; i++ {
		if i > 0 {
			big.WriteByte(',')
		}
		fmt.Fprintf(&big, `{"id":%d,"name":"user-%d","score":%d}`, i, i, i%100)
	}
	big.WriteByte(']')
	setup := must(db.Put(ctx, "big", big.Bytes(), WriteOptions{}))
	must(db.CreateSnapshot(ctx, "t4-start", Ref{}, "", ""))

	type rmw struct {
		rev   uint64
		value int
	}
	var (
		stop        atomic.Bool
		mu          sync.Mutex
		increments  []rmw    // successful read-modify-write commits
		appends     []string // successful blind appends
		conflicts   int
		conflictBad []string
		// conflicts naming a head that was not yet visible when the error came back, and every head named
		conflictAhead int
		conflictHeads []uint64
		errs          []error
		latencies     []time.Duration
		readChecks    []rmw // counter value read at a revision
		labels        = []string{"t4-start"}
		bigReads      int
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
		stop.Store(true)
	}
	counterAt := func(ref Ref) (int, State, error) {
		v, st, err := db.Get(ctx, ref, "counter", revision.MustPointer("/n"))
		if err != nil {
			return 0, st, err
		}
		text, err := db.Forest().JSON(ctx, v)
		if err != nil {
			return 0, st, err
		}
		n, err := strconv.Atoi(string(text))
		return n, st, err
	}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ { // read-modify-write with expected_head
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var last uint64
			for !stop.Load() {
				n, st, err := counterAt(Ref{})
				if err != nil {
					fail(err)
					return
				}
				p, _ := revision.ParsePatch([]byte(fmt.Sprintf(`[{"op":"replace","path":"/n","value":%d}]`, n+1)))
				res, err := db.Patch(ctx, "counter", p, WriteOptions{ExpectedHead: st.Rev.Number, Author: fmt.Sprintf("rmw-%d", w)})
				var ce *ConflictError
				if errors.As(err, &ce) {
					// The conflict names the branch's head at the time: a later revision than the stale one.
					var bad string
					ahead := false
					if ce.Branch != Main || ce.Expected != st.Rev.Number || ce.Head <= ce.Expected ||
						!strings.Contains(err.Error(), fmt.Sprintf("is at revision %d", ce.Head)) {
						bad = fmt.Sprintf("%v (%+v) for expected head %d", err, *ce, st.Rev.Number)
					} else if now, err := db.Resolve(ctx, Ref{}); err != nil {
						bad = err.Error()
					} else if now.Rev.Number < ce.Head {
						// The conflict was answered while the group naming that head was still being committed
						// (TestAnsweredOnlyAfterCommit): reported below.
						ahead = true
					}
					mu.Lock()
					conflicts++
					if bad != "" {
						conflictBad = append(conflictBad, bad)
					}
					if ahead {
						conflictAhead++
					}
					conflictHeads = append(conflictHeads, ce.Head)
					mu.Unlock()
					continue
				}
				if err != nil {
					fail(err)
					return
				}
				if res.Revision <= last || res.Parent != st.Rev.Number {
					fail(fmt.Errorf("rmw writer %d: revision %d (parent %d) after %d, read at %d", w, res.Revision, res.Parent, last, st.Rev.Number))
					return
				}
				last = res.Revision
				mu.Lock()
				increments = append(increments, rmw{res.Revision, n + 1})
				mu.Unlock()
			}
		}(w)
	}
	for w := 0; w < 4; w++ { // blind appends
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var last uint64
			for i := 0; !stop.Load(); i++ {
				val := fmt.Sprintf("w%d-%d", w, i)
				p, _ := revision.ParsePatch([]byte(fmt.Sprintf(`[{"op":"add","path":"/-","value":%q}]`, val)))
				res, err := db.Patch(ctx, "log", p, WriteOptions{Author: fmt.Sprintf("append-%d", w)})
				if err != nil {
					fail(err)
					return
				}
				if res.Revision <= last {
					fail(fmt.Errorf("append writer %d: revision %d after %d", w, res.Revision, last))
					return
				}
				last = res.Revision
				mu.Lock()
				appends = append(appends, val)
				mu.Unlock()
			}
		}(w)
	}
	for rd := 0; rd < 4; rd++ { // readers at random refs
		wg.Add(1)
		go func(rd int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(rd), 4))
			var lat []time.Duration
			var checks []rmw
			for !stop.Load() {
				head, err := db.Resolve(ctx, Ref{})
				if err != nil {
					fail(err)
					return
				}
				var ref Ref
				switch r.IntN(4) {
				case 0:
					ref = Ref{Revision: setup.Revision + r.Uint64N(head.Rev.Number-setup.Revision+1)}
				case 1:
					ref = Ref{}
				case 2:
					mu.Lock()
					ref = Ref{Snapshot: labels[r.IntN(len(labels))]}
					mu.Unlock()
				case 3:
					at := head.Rev.Time.Add(-time.Duration(r.Int64N(int64(2 * time.Second))))
					if at.Before(setup.Time) {
						at = setup.Time
					}
					ref = Ref{Branch: Main, At: &at}
				}
				t0 := time.Now()
				var n int
				var st State
				if r.IntN(2) == 0 {
					n, st, err = counterAt(ref)
				} else {
					_, st, err = db.Get(ctx, ref, "big", revision.Pointer{strconv.Itoa(r.IntN(20000)), "name"})
					n = -1
				}
				lat = append(lat, time.Since(t0))
				if err != nil {
					fail(fmt.Errorf("reader %d at %s: %v", rd, ref, err))
					return
				}
				if n >= 0 {
					checks = append(checks, rmw{st.Rev.Number, n})
				}
			}
			mu.Lock()
			latencies = append(latencies, lat...)
			readChecks = append(readChecks, checks...)
			mu.Unlock()
		}(rd)
	}
	wg.Add(1)
	go func() { // a long query: the whole big resource at the head, again and again, while commits grow the file
		defer wg.Done()
		for !stop.Load() {
			v, _, err := db.Get(ctx, Ref{}, "big", nil)
			if err == nil {
				var text []byte
				text, err = db.Forest().JSON(ctx, v)
				if err == nil && !bytes.Equal(text, big.Bytes()) {
					err = errors.New("the big resource read back different")
				}
			}
			if err != nil {
				fail(err)
				return
			}
			mu.Lock()
			bigReads++
			mu.Unlock()
		}
	}()
	start := time.Now()
	for i := 0; time.Since(start) < dur && !stop.Load(); i++ {
		time.Sleep(250 * time.Millisecond)
		name := fmt.Sprintf("t4-%d", i)
		if _, err := db.CreateSnapshot(ctx, name, Ref{}, "", ""); err != nil {
			fail(err)
			break
		}
		mu.Lock()
		labels = append(labels, name)
		mu.Unlock()
	}
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(start)
	for _, err := range errs {
		t.Error(err)
	}
	for _, s := range conflictBad {
		t.Errorf("conflict does not name the head: %s", s)
	}
	if conflictAhead > 0 {
		t.Errorf("%d of %d conflicts named a head revision that was not committed yet when the error was returned (see TestAnsweredOnlyAfterCommit)",
			conflictAhead, conflicts)
	}

	// No lost update.
	final, head, err := counterAt(Ref{})
	if err != nil {
		t.Fatal(err)
	}
	if final != len(increments) {
		t.Errorf("lost update: the counter is %d after %d successful increments", final, len(increments))
	}
	sort.Slice(increments, func(i, j int) bool { return increments[i].rev < increments[j].rev })
	for i, inc := range increments {
		if inc.value != i+1 {
			t.Errorf("increment committed as revision %d wrote %d, want %d", inc.rev, inc.value, i+1)
			break
		}
	}
	// Every append, once.
	logText := get(t, db, Ref{}, "log", "")
	var got []string
	if err := json.Unmarshal([]byte(logText), &got); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	slices.Sort(appends)
	if !slices.Equal(got, appends) {
		t.Errorf("log has %d entries, %d appends succeeded", len(got), len(appends))
	}
	// Revision numbers and times strictly increase; every revision came from one of the writers or the setup.
	var revs []store.RevisionRecord
	if err := db.be.View(ctx, func(c store.CatalogReader) error {
		return c.Revisions(head.Rev.Number, func(r store.RevisionRecord) bool { revs = append(revs, r); return true })
	}); err != nil {
		t.Fatal(err)
	}
	slices.Reverse(revs)
	if uint64(len(revs)) != head.Rev.Number || len(revs) != 4+len(increments)+len(appends) {
		t.Errorf("%d revisions, head %d; want %d (4 + %d increments + %d appends)", len(revs), head.Rev.Number,
			4+len(increments)+len(appends), len(increments), len(appends))
	}
	for _, h := range conflictHeads {
		if h > uint64(len(revs)) || revs[h-1].Branch != Main {
			t.Errorf("a conflict named head %d, which is not a revision of main", h)
			break
		}
	}
	for i, r := range revs {
		if r.Number != uint64(i+1) || (i > 0 && !r.Time.After(revs[i-1].Time)) {
			t.Errorf("revision %d at %v follows %d at %v", r.Number, r.Time, revs[max(i-1, 0)].Number, revs[max(i-1, 0)].Time)
			break
		}
	}
	// Every counter a reader saw is the one in that revision.
	valueAt := func(rev uint64) int {
		i := sort.Search(len(increments), func(i int) bool { return increments[i].rev > rev })
		if i == 0 {
			return 0
		}
		return increments[i-1].value
	}
	wrong := 0
	for _, c := range readChecks {
		if valueAt(c.rev) != c.value {
			wrong++
		}
	}
	if wrong > 0 {
		t.Errorf("%d of %d reads of the counter returned a value other than the one committed in their revision", wrong, len(readChecks))
	}

	slices.Sort(latencies)
	pct := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[min(len(latencies)-1, int(float64(len(latencies))*p))]
	}
	p99 := pct(0.99)
	t.Logf("%v: %d increments (%d conflicts retried), %d appends, %d revisions (%.0f commits/s); %d reads: p50 %v, p99 %v, "+
		"max %v; %d whole-resource reads of %d KiB; file %d KiB",
		elapsed.Round(time.Millisecond), len(increments), conflicts, len(appends), len(revs),
		float64(len(increments)+len(appends))/elapsed.Seconds(), len(latencies), pct(0.5), p99, pct(1), bigReads,
		big.Len()>>10, fileSize(path)>>10)
	// The target is 50 ms (docs/security.md T4). The machine is shared and -race slows everything several times, so the
	// assertion is looser; the figure is in the log.
	if p99 > 50*time.Millisecond {
		t.Logf("read p99 %v misses the 50 ms target (race detector: %v)", p99, raceEnabled)
	}
	if limit := 250 * time.Millisecond; p99 > limit {
		t.Errorf("read p99 %v exceeds %v", p99, limit)
	}
	if len(increments) == 0 || len(appends) == 0 || len(latencies) == 0 {
		t.Errorf("no progress: %d increments, %d appends, %d reads", len(increments), len(appends), len(latencies))
	}

	// No goroutine left behind once the database is closed.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > goroutinesBefore && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutinesBefore {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("goroutine leak: %d goroutines before the test, %d after Close\n%s", goroutinesBefore, n, buf)
	}
}

// raceEnabled reports whether the test binary was built with -race.
var raceEnabled = func() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return true
		}
	}
	return false
}()

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// gateBackend holds every Update until the test lets it through, so that a test can line requests up behind a
// commit in progress.
type gateBackend struct {
	store.Backend
	gated   atomic.Bool
	entered chan struct{} // receives when a gated Update starts
	release chan struct{} // a gated Update proceeds when it receives
}

func (g *gateBackend) Update(ctx context.Context, fn func(store.CatalogTx) error) error {
	if g.gated.Load() {
		g.entered <- struct{}{}
		<-g.release
	}
	return g.Backend.Update(ctx, fn)
}

// TestAnsweredOnlyAfterCommit is the regression test of a bug now fixed: requests that the writer answered while
// planning a group, before the group's transaction committed, could name a revision planned by an earlier request of
// the same group, which was not committed (not readable, not durable) yet, and never would be if the commit failed
// or the process died:
//
//   - a write whose expected_head is stale because of that earlier request gets a ConflictError naming the planned
//     head ("branch main is at revision N" while revision N does not exist);
//   - a write that changes nothing on top of that earlier request gets a successful Result{Unchanged: true} whose
//     Revision is the planned head: an acknowledgement naming a revision that is not durable (docs/security.md §2.1, §2.3).
//
// docs/storage.md §5 says each caller is answered only after Commit returns. A blocker commit holds the writer at a gate
// in Update while the next group (a blind write, then the victim) queues; when the blocker commits, the next group
// is planned and its Update waits at the gate: the victim must not be answered before it goes through.
func TestAnsweredOnlyAfterCommit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		victim func(ctx context.Context, db *DB) (*Result, error)
	}{
		{"conflict", func(ctx context.Context, db *DB) (*Result, error) {
			return db.Patch(ctx, "doc", ops(t, `[{"op":"replace","path":"/n","value":1}]`), WriteOptions{ExpectedHead: 3})
		}},
		{"unchanged", func(ctx context.Context, db *DB) (*Result, error) {
			return db.Put(ctx, "other", []byte(`2`), WriteOptions{}) // what the blind write writes
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			g := &gateBackend{Backend: store.NewMemBackend(), entered: make(chan struct{}, 16), release: make(chan struct{})}
			db, _ := openTest(t, g)
			must(db.Put(ctx, "doc", []byte(`{"n":0}`), WriteOptions{})) // revision 2
			g.gated.Store(true)
			go db.Put(ctx, "blocker", []byte(`1`), WriteOptions{}) // revision 3, once released
			<-g.entered
			blind := make(chan *Result, 1)
			go func() { blind <- must(db.Put(ctx, "other", []byte(`2`), WriteOptions{})) }() // revision 4, next group
			time.Sleep(50 * time.Millisecond)
			type answer struct {
				res *Result
				err error
			}
			victim := make(chan answer, 1)
			go func() {
				res, err := tc.victim(ctx, db)
				victim <- answer{res, err}
			}()
			time.Sleep(50 * time.Millisecond)
			g.release <- struct{}{} // revision 3 commits; the next group is planned...
			<-g.entered             // ...and its Update waits at the gate: revision 4 is not committed
			select {
			case a := <-victim:
				head := must(db.Resolve(ctx, Ref{})).Rev.Number
				res := "<nil>"
				if a.res != nil {
					res = fmt.Sprintf("%+v", *a.res)
				}
				t.Errorf("answered before its group committed: result %s, error %v; the committed head is %d", res, a.err, head)
			case <-time.After(200 * time.Millisecond):
			}
			g.gated.Store(false)
			g.release <- struct{}{}
			<-blind
		})
	}
}

// TestUnchangedWriteKeepsKey is the regression test of a bug now fixed: a write that changed nothing was answered
// Unchanged but its idempotency key was not recorded, so a retry of it (the client lost the answer) after another
// writer moved the branch committed: the request took effect a second time, overwriting the other writer's change,
// instead of returning the original result (the idempotency promise).
func TestUnchangedWriteKeepsKey(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t, store.NewMemBackend())
	must(db.Put(ctx, "doc", []byte(`{"v":5}`), WriteOptions{}))
	first := must(db.Patch(ctx, "doc", ops(t, `[{"op":"replace","path":"/v","value":5}]`), WriteOptions{IdempotencyKey: "k"}))
	other := must(db.Patch(ctx, "doc", ops(t, `[{"op":"replace","path":"/v","value":6}]`), WriteOptions{}))
	retry := must(db.Patch(ctx, "doc", ops(t, `[{"op":"replace","path":"/v","value":5}]`), WriteOptions{IdempotencyKey: "k"}))
	if retry.Revision != first.Revision || get(t, db, Ref{}, "doc", "/v") != "6" {
		t.Errorf("first answer %+v; another writer made revision %d; the retry with the same key answered %+v and /v is now %s",
			*first, other.Revision, *retry, get(t, db, Ref{}, "doc", "/v"))
	}
}

// A key whose first write changed nothing, and whose revision garbage collection then removed, is recorded anew by
// the next write that uses it; if that one changes something, a retry of it must say so, not "unchanged" (found in
// review: the first write's no-op marker outlived it). Both ways a Put is built.
func TestReusedKeyAfterCollectionIsNotUnchanged(t *testing.T) {
	forPutPaths(t, func(t *testing.T, be store.Backend) {
		ctx := context.Background()
		db, clk := openTest(t, be)
		must(db.CreateBranch(ctx, "b", Ref{}, ""))
		must(db.Put(ctx, "doc", []byte(`[1]`), WriteOptions{Branch: "b"}))
		if r := must(db.Put(ctx, "doc", []byte(`[1]`), WriteOptions{Branch: "b", IdempotencyKey: "k"})); !r.Unchanged {
			t.Fatalf("the same document again: %+v", r)
		}
		must(db.DeleteBranch(ctx, "b"))
		must(db.Put(ctx, "other", []byte(`{}`), WriteOptions{})) // the last revision is always kept
		clk.mu.Lock()
		clk.t = clk.t.Add(3 * time.Hour)
		clk.mu.Unlock()
		if rep := must(db.GC(ctx, &GCOptions{Grace: time.Nanosecond})); rep.RemovedRevisions == 0 {
			t.Fatalf("the deleted branch was not collected: %+v", rep)
		}
		first := must(db.Put(ctx, "doc", []byte(`[2]`), WriteOptions{IdempotencyKey: "k"}))
		retry := must(db.Put(ctx, "doc", []byte(`[2]`), WriteOptions{IdempotencyKey: "k"}))
		if first.Unchanged || !retry.Replayed || retry.Unchanged || retry.Revision != first.Revision || len(retry.Resources) != 1 {
			t.Fatalf("a write with the key recorded anew: %+v; its retry: %+v", first, retry)
		}
	})
}

// ---------------------------------------------------------------------------------------------------------------
// T5 at the database level: copies of a real database file, truncated, bit-flipped, zeroed or overwritten, opened
// through a data directory (the path every caller takes). Each must be refused at open with an error, or open and
// then answer every read either exactly as the intact file does or with an error; never crash, never hang, never
// return other bytes. Page-level damage to bare bbolt files is covered by package store (TestBoltRefusesTruncated,
// TestBoltRefusesDamagedMeta, TestBoltDamagedPages); this test checks what reaches a database's user.

// t5Expect is what the intact database answers.
type t5Expect struct {
	revs     []store.RevisionRecord // revs[n-1] is revision n
	docs     [][]byte               // whole document of each revision
	labels   []store.LabelRecord
	branches []store.BranchRecord
	keyRev   uint64 // the revision committed under idempotency key "t5-key"
	pageSize int
	hwm      int64 // bytes below bbolt's high-water mark
}

func t5Build(t *testing.T) (orig []byte, want *t5Expect) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	// A small first map keeps the file near its high-water mark (bbolt grows the file to the map size).
	d := must(OpenDir(dir, &DirOptions{Shared: store.SharedOptions{Bolt: store.BoltOptions{InitialMmapSize: 1}}}))
	db := must(d.Create(ctx, "t5", "tester"))
	must(db.Put(ctx, "config", []byte(`{"flags":{"beta":true},"limit":10}`), WriteOptions{Author: "op"}))
	must(db.Put(ctx, "users", workload.JSON(400), WriteOptions{Author: "op"}))
	must(db.CreateSnapshot(ctx, "v1", Ref{}, "first", "op"))
	r := rand.New(rand.NewPCG(5, 5))
	for i := 0; i < 20; i++ {
		p := fmt.Sprintf(`[{"op":"replace","path":"/%d/score","value":%d}]`, r.IntN(400), 100+i)
		must(db.Patch(ctx, "users", ops(t, p), WriteOptions{Message: fmt.Sprintf("edit %d", i)}))
		if i%5 == 4 {
			must(db.CreateSnapshot(ctx, fmt.Sprintf("s%d", i), Ref{}, "", "op"))
		}
	}
	must(db.Patch(ctx, "config", ops(t, `[{"op":"replace","path":"/limit","value":99}]`), WriteOptions{IdempotencyKey: "t5-key"}))
	must(db.CreateBranch(ctx, "feature", Ref{Snapshot: "v1"}, "op"))
	for i := 0; i < 5; i++ {
		must(db.Patch(ctx, "config", ops(t, fmt.Sprintf(`[{"op":"add","path":"/f%d","value":%d}]`, i, i)), WriteOptions{Branch: "feature"}))
	}
	must(db.Revert(ctx, Ref{Snapshot: "s9"}, WriteOptions{}))
	must(db.Patch(ctx, "users", ops(t, `[{"op":"remove","path":"/7"}]`), WriteOptions{}))

	want = &t5Expect{}
	head := must(db.Resolve(ctx, Ref{}))
	for n := uint64(1); n <= head.Rev.Number; n++ {
		st := must(db.Resolve(ctx, Ref{Revision: n}))
		want.revs = append(want.revs, st.Rev)
		want.docs = append(want.docs, must(db.Forest().JSON(ctx, st.Root)))
	}
	want.labels = must(db.Snapshots(ctx))
	want.branches = must(db.Branches(ctx))
	want.keyRev = must(db.Patch(ctx, "config", ops(t, `[{"op":"replace","path":"/limit","value":99}]`), WriteOptions{IdempotencyKey: "t5-key"})).Revision
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "t5"+Ext)
	b, err := store.OpenBolt(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := b.Stats()
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
	want.hwm = bs.UsedBytes
	orig, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want.pageSize = int(binary.NativeEndian.Uint32(orig[16+8:])) // bbolt meta page 0: page size at offset 24
	return orig, want
}

// t5Outcome is how one damaged copy fared.
type t5Outcome struct {
	refused   error    // the open failed
	readErrs  int      // reads answered with an error
	readsOK   int      // reads answered exactly as the intact file
	wrongDocs []string // a document read back different while its revision record was intact: must never happen
	wrongCat  []string // a catalog record (revision, label, branch, idempotency key) read back different
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "!" + err.Error()
	}
	return string(b)
}

// t5Open opens a damaged copy through a data directory and compares everything it answers with want.
func t5Open(t *testing.T, data []byte, want *t5Expect) (out t5Outcome) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t5"+Ext), data, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(dir, &DirOptions{Shared: store.SharedOptions{Bolt: store.BoltOptions{Timeout: 2 * time.Second}}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			buf := make([]byte, 1<<20)
			panic(fmt.Sprintf("a damaged database hangs\n%s", buf[:runtime.Stack(buf, true)]))
		}
	}()
	defer func() {
		if err := d.Close(); err != nil && out.refused == nil {
			out.readErrs++ // closing a store that stopped reports why; that is an error answer, not a crash
		}
	}()
	db, err := d.Open(ctx, "t5")
	if err != nil {
		out.refused = err
		return out
	}
	check := func(what string, err error, got, exp string, catalog bool) {
		switch {
		case err != nil:
			out.readErrs++
		case got == exp:
			out.readsOK++
		case catalog:
			out.wrongCat = append(out.wrongCat, fmt.Sprintf("%s: got %.200s, want %.200s", what, got, exp))
		default:
			out.wrongDocs = append(out.wrongDocs, fmt.Sprintf("%s: %d bytes differ from the intact %d bytes", what, len(got), len(exp)))
		}
	}
	for i, rec := range want.revs {
		n := uint64(i + 1)
		st, err := db.Resolve(ctx, Ref{Revision: n})
		check(fmt.Sprintf("revision %d record", n), err, jsonText(st.Rev), jsonText(rec), true)
		if err != nil {
			continue
		}
		doc, err := db.Forest().JSON(ctx, st.Root)
		check(fmt.Sprintf("revision %d document", n), err, string(doc), string(want.docs[i]), !bytes.Equal(st.Rev.Root, rec.Root))
	}
	labels, err := db.Snapshots(ctx)
	check("snapshots", err, jsonText(labels), jsonText(want.labels), true)
	for _, l := range want.labels {
		st, err := db.Resolve(ctx, Ref{Snapshot: l.Name})
		check("snapshot "+l.Name, err, strconv.FormatUint(st.Rev.Number, 10), strconv.FormatUint(l.Revision, 10), true)
	}
	branches, err := db.Branches(ctx)
	check("branches", err, jsonText(branches), jsonText(want.branches), true)
	for _, b := range want.branches {
		v, st, err := db.Get(ctx, Ref{Branch: b.Name}, "config", nil)
		var doc []byte
		if err == nil {
			doc, err = db.Forest().JSON(ctx, v)
		}
		var exp []byte
		if int(b.Head) <= len(want.docs) {
			var whole map[string]json.RawMessage
			_ = json.Unmarshal(want.docs[b.Head-1], &whole)
			exp = whole["config"]
		}
		check("config at the head of "+b.Name, err, string(doc), string(exp), err == nil && st.Rev.Number != b.Head)
	}
	// A retried write replays its revision (a write with a damaged idempotency index would commit again).
	res, err := db.Patch(ctx, "config", ops(t, `[{"op":"replace","path":"/limit","value":99}]`), WriteOptions{IdempotencyKey: "t5-key"})
	if err == nil && !res.Replayed {
		out.wrongCat = append(out.wrongCat, fmt.Sprintf("idempotency key t5-key: not replayed (%+v), want a replay of %d", *res, want.keyRev))
	} else {
		var got uint64
		if res != nil {
			got = res.Revision
		}
		check("idempotency key t5-key", err, strconv.FormatUint(got, 10), strconv.FormatUint(want.keyRev, 10), true)
	}
	// A new write either works or is refused.
	if _, err := db.Put(ctx, "after", []byte(`{"ok":true}`), WriteOptions{}); err != nil {
		out.readErrs++
	}
	return out
}

func TestCorruptDatabaseFiles(t *testing.T) {
	orig, want := t5Build(t)
	ps := want.pageSize
	hwmPages := int(want.hwm) / ps
	t.Logf("database: %d revisions, %d snapshots, %d branches; file %d KiB, %d pages of %d bytes in use",
		len(want.revs), len(want.labels), len(want.branches), len(orig)>>10, hwmPages, ps)
	if intact := t5Open(t, orig, want); intact.refused != nil || intact.readErrs > 0 || len(intact.wrongCat)+len(intact.wrongDocs) > 0 {
		t.Fatalf("the intact copy: %+v", intact)
	}
	// refusedClearly: refused with an error that says the file is damaged and names it.
	refusedClearly := func(t *testing.T, o t5Outcome) {
		t.Helper()
		if o.refused == nil {
			t.Errorf("opened: %d reads right, %d refused, wrong %v %v", o.readsOK, o.readErrs, o.wrongCat, o.wrongDocs)
			return
		}
		if !errors.Is(o.refused, store.ErrBadFile) || !strings.Contains(o.refused.Error(), "t5"+Ext) {
			t.Errorf("refused with an unclear error: %v", o.refused)
		}
	}

	t.Run("truncated", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			size int64
		}{
			{"100 bytes", 100}, {"one page", int64(ps)}, {"two pages", 2 * int64(ps)}, {"half the pages in use", want.hwm / 2},
			{"high-water mark less one page", want.hwm - int64(ps)}, {"high-water mark less one byte", want.hwm - 1},
		} {
			t.Run(tc.name, func(t *testing.T) { refusedClearly(t, t5Open(t, orig[:tc.size], want)) })
		}
		t.Run("exactly the high-water mark", func(t *testing.T) {
			o := t5Open(t, orig[:want.hwm], want)
			if o.refused != nil || o.readErrs > 0 || len(o.wrongCat)+len(o.wrongDocs) > 0 {
				t.Errorf("a file cut at its high-water mark is whole: %+v", o)
			}
		})
		t.Run("empty", func(t *testing.T) {
			// An empty file is what a crash during Create leaves, so the store treats it as a new database; but
			// Dir.Open is for an existing database, and this one had a history.
			o := t5Open(t, nil, want)
			if o.refused == nil {
				t.Errorf("Dir.Open of a database whose file was truncated to 0 bytes succeeds and serves a new, empty "+
					"database (%d reads right, %d refused, %d wrong answers)", o.readsOK, o.readErrs, len(o.wrongCat)+len(o.wrongDocs))
			}
		})
	})

	t.Run("meta pages", func(t *testing.T) {
		for page := 0; page < 2; page++ {
			t.Run(fmt.Sprintf("zeroed page %d", page), func(t *testing.T) {
				data := bytes.Clone(orig)
				clear(data[page*ps : (page+1)*ps])
				refusedClearly(t, t5Open(t, data, want))
			})
			t.Run(fmt.Sprintf("bit flip in page %d", page), func(t *testing.T) {
				data := bytes.Clone(orig)
				data[page*ps+16+40] ^= 0x04 // the high-water mark
				refusedClearly(t, t5Open(t, data, want))
			})
		}
	})

	t.Run("foreign", func(t *testing.T) {
		refusedClearly(t, t5Open(t, bytes.Repeat([]byte(`{"not":"a database"}`+"\n"), 500), want))
	})

	// Damage to one catalog record (bbolt pages carry no checksum, and catalog records no hash): one bit of a digit,
	// in place, so that the file stays well-formed. bbolt copies pages on write, so earlier versions of a record
	// linger in free pages: every occurrence is damaged in turn, and the live one shows.
	t.Run("catalog record", func(t *testing.T) {
		for _, tc := range []struct{ name, find string }{
			{"snapshot label's revision", `{"name":"s9","revision":`},
			{"branch head", `"name":"feature","id":2,"head":`},
			{"revision record's number", `{"n":`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				found := 0
				for i := bytes.Index(orig, []byte(tc.find)); i >= 0; {
					j := i + len(tc.find)
					for j+1 < len(orig) && orig[j+1] >= '0' && orig[j+1] <= '9' {
						j++ // the last digit of the number
					}
					if tc.find == `{"n":` && string(orig[i+len(tc.find):j+1]) != "25" {
						k := bytes.Index(orig[j:], []byte(tc.find))
						if k < 0 {
							break
						}
						i = j + k
						continue
					}
					found++
					data := bytes.Clone(orig)
					data[j] ^= 0x01 // '2' ↔ '3', '4' ↔ '5', …
					o := t5Open(t, data, want)
					switch {
					case len(o.wrongDocs) > 0:
						t.Errorf("wrong document bytes: %v", o.wrongDocs)
					case len(o.wrongCat) > 0:
						t.Errorf("%s damaged at offset %d (%q → %q): served without an error: %v", tc.name, j, orig[j], data[j], o.wrongCat)
					default:
						t.Logf("damage at offset %d (%q → %q): refused=%v, %d reads right, %d refused", j, orig[j], data[j], o.refused, o.readsOK, o.readErrs)
					}
					k := bytes.Index(orig[j:], []byte(tc.find))
					if k < 0 {
						break
					}
					i = j + k
				}
				if found == 0 {
					t.Errorf("%q not found in the file", tc.find)
				}
			})
		}
	})

	// Random damage to pages in use (not the meta pages, done above).
	t.Run("random pages", func(t *testing.T) {
		rounds := 100
		if os.Getenv("STRATA_LONG") == "1" {
			rounds = 2000
		}
		seed := uint64(time.Now().UnixNano())
		if s, err := strconv.ParseUint(os.Getenv("STRATA_T5_SEED"), 10, 64); err == nil {
			seed = s
		}
		r := rand.New(rand.NewPCG(seed, 5))
		outcomes := map[string]int{}
		var wrongCat []string
		for round := 0; round < rounds; round++ {
			data := bytes.Clone(orig)
			pick := func() int { return 2 + r.IntN(hwmPages-2) }
			page := func(p int) []byte { return data[p*ps : (p+1)*ps] }
			var what string
			switch round % 5 {
			case 0, 1:
				for k := 0; k < 1+round%3; k++ {
					p := pick()
					i := r.IntN(ps)
					if round%5 == 1 {
						i = r.IntN(64) // page header and first elements
					}
					page(p)[i] ^= byte(1 + r.IntN(255))
					what += fmt.Sprintf("flip page %d byte %d; ", p, i)
				}
			case 2:
				p := pick()
				clear(page(p))
				what = fmt.Sprintf("zero page %d", p)
			case 3:
				p := pick()
				for i := 16; i < ps; i++ {
					page(p)[i] = byte(r.Uint32())
				}
				what = fmt.Sprintf("garbage in page %d", p)
			case 4:
				p, q := pick(), pick()
				copy(page(p), orig[q*ps:(q+1)*ps])
				what = fmt.Sprintf("page %d copied over page %d", q, p)
			}
			o := t5Open(t, data, want)
			switch {
			case len(o.wrongDocs) > 0:
				t.Errorf("round %d (%s, seed %d): wrong document bytes: %v", round, what, seed, o.wrongDocs)
			case len(o.wrongCat) > 0:
				outcomes["wrong catalog answers"]++
				wrongCat = append(wrongCat, fmt.Sprintf("round %d (%s): %s", round, what, o.wrongCat[0]))
			case o.refused != nil:
				outcomes["refused at open"]++
				if !errors.Is(o.refused, store.ErrBadFile) {
					t.Errorf("round %d (%s): refused with an unclear error: %v", round, what, o.refused)
				}
			case o.readErrs > 0:
				outcomes["opened, some reads refused"]++
			default:
				outcomes["opened, every read right"]++
			}
		}
		t.Logf("%d rounds (seed %d, STRATA_T5_SEED to repeat): %v", rounds, seed, outcomes)
		if len(wrongCat) > 0 {
			t.Errorf("%d rounds served a damaged catalog record without an error, e.g. %s", len(wrongCat), wrongCat[0])
		}
	})
}

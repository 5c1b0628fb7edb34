package snapshots

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/pgtest"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// postgresBackend is a new, empty database in a PostgreSQL schema of the test's own.
func postgresBackend(t *testing.T) store.Backend {
	t.Helper()
	p, err := store.OpenPostgres(context.Background(), pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	d, err := p.Create(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// pgDir opens a Dir on a PostgreSQL URL, closed at the end of the test.
func pgDir(t *testing.T, url string) *Dir {
	t.Helper()
	d, err := OpenDir(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestPostgresDirStory: a data location that is a PostgreSQL URL works as a directory does: create, write, branch,
// snapshot, diff, time travel, list, info, drop, with the same errors.
func TestPostgresDirStory(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	d := pgDir(t, url)
	if strings.Contains(d.Path(), "search_path") || !strings.HasPrefix(d.Path(), "postgres://") {
		t.Errorf("Path() = %q, want the URL without its parameters", d.Path())
	}
	db := must(d.Create(ctx, "catalog", "op"))
	r2 := must(db.Put(ctx, "items", []byte(`{"a":{"price":1},"b":{"price":2}}`), WriteOptions{Author: "agent"}))
	must(db.CreateSnapshot(ctx, "v1", Ref{}, "first prices", "op"))
	must(db.CreateBranch(ctx, "try", Ref{}, "agent"))
	r3 := must(db.Patch(ctx, "items", ops(t, `[{"op":"replace","path":"/a/price","value":10},{"op":"add","path":"/c","value":{"price":3}}]`), WriteOptions{Branch: "try"}))
	time.Sleep(2 * time.Millisecond)
	r4 := must(db.Patch(ctx, "items", ops(t, `[{"op":"remove","path":"/b"}]`), WriteOptions{IdempotencyKey: "drop-b"}))
	if again := must(db.Patch(ctx, "items", ops(t, `[{"op":"remove","path":"/b"}]`), WriteOptions{IdempotencyKey: "drop-b"})); !again.Replayed || again.Revision != r4.Revision {
		t.Fatalf("a retry with the same key: %+v", again)
	}

	if get(t, db, Ref{Branch: "try"}, "items", "/a/price") != "10" || get(t, db, Ref{}, "items", "/a/price") != "1" {
		t.Fatal("the branch's write leaked into main")
	}
	if get(t, db, Ref{Snapshot: "v1"}, "items", "/b/price") != "2" {
		t.Fatal("the snapshot does not read its revision")
	}
	// Time travel on main: just after revision 2, b was there; now it is gone.
	if get(t, db, Ref{Branch: "main", At: &r2.Time}, "items", "/b/price") != "2" {
		t.Fatal("main as of revision 2's time")
	}
	if _, _, err := db.Get(ctx, Ref{}, "items", revision.MustPointer("/b")); !errors.Is(err, revision.ErrNotFound) {
		t.Fatalf("b at the head: %v", err)
	}
	diff, _, _, err := db.Diff(ctx, Ref{Snapshot: "v1"}, Ref{Branch: "try"}, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, op := range diff.Operations {
		paths = append(paths, op.Op+" "+op.Path)
	}
	if fmt.Sprint(paths) != "[replace /items/a/price add /items/c]" {
		t.Fatalf("diff v1..try: %v", paths)
	}
	page := must(db.History(ctx, HistoryQuery{}))
	if nums(page.Revisions) != fmt.Sprintf("[%d %d 1]", r4.Revision, r2.Revision) || r3.Revision != 3 {
		t.Fatalf("history of main %s (try's commit %d)", nums(page.Revisions), r3.Revision)
	}

	// The whole-database check finds it sound: every record, node and head.
	if rep := must(db.Check(ctx, nil)); len(rep.Problems) != 0 || rep.Revisions != r4.Revision || rep.Branches != 2 || rep.Snapshots != 1 {
		t.Fatalf("check %+v", rep)
	}

	// The directory operations, with a directory's errors.
	if _, err := d.Create(ctx, "catalog", "op"); !errors.Is(err, ErrConflict) {
		t.Fatalf("creating a taken name: %v", err)
	}
	if _, err := d.Create(ctx, "Bad Name", "op"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a bad name: %v", err)
	}
	var nf *NotFoundError
	if _, err := d.Open(ctx, "catalogue"); !errors.As(err, &nf) || fmt.Sprint(nf.DidYouMean) != "[catalog]" {
		t.Fatalf("opening a missing database: %v", err)
	}
	must(d.Create(ctx, "audit", "op"))
	if names := must(d.Names()); fmt.Sprint(names) != "[audit catalog]" {
		t.Fatalf("names %v", names)
	}
	info := must(d.Info(ctx, "catalog"))
	if info.Revisions != r4.Revision || info.Heads["main"] != r4.Revision || info.Heads["try"] != r3.Revision || info.FileBytes <= 0 {
		t.Fatalf("info %+v", info)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	// Another Dir on the URL (a restart) finds everything, and drops it.
	d2 := pgDir(t, url)
	db2 := must(d2.Open(ctx, "catalog"))
	if get(t, db2, Ref{Snapshot: "v1"}, "items", "/a/price") != "1" || get(t, db2, Ref{Branch: "try"}, "items", "/c/price") != "3" {
		t.Fatal("history lost across a reopen")
	}
	if err := d2.Drop(ctx, "catalog"); err != nil {
		t.Fatal(err)
	}
	if _, err := d2.Open(ctx, "catalog"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after drop: %v", err)
	}
	if err := d2.Drop(ctx, "catalog"); !errors.As(err, &nf) {
		t.Fatalf("dropping twice: %v", err)
	}
}

// TestPostgresTwoDirs: two Dirs on one URL, as two server processes: a commit through one is read and heard through
// the other, and writers on both with expected_head lose no update and leave revisions consecutive.
func TestPostgresTwoDirs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url := pgtest.URL(t)
	a, b := pgDir(t, url), pgDir(t, url)
	dbA := must(a.Create(ctx, "shared", "op"))
	dbB := must(b.Open(ctx, "shared"))

	changes, ok, err := dbB.Watch(ctx)
	if err != nil || !ok {
		t.Fatalf("watching a PostgreSQL database: %v %v", ok, err)
	}
	r := must(dbA.Put(ctx, "counter", []byte(`{"n":0}`), WriteOptions{}))
	if get(t, dbB, Ref{}, "counter", "/n") != "0" {
		t.Fatal("a commit through one Dir is not read through the other")
	}
	select {
	case rev := <-changes:
		if rev != r.Revision {
			t.Fatalf("heard revision %d, want %d", rev, r.Revision)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the other Dir did not hear the commit")
	}

	const n = 10
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for _, db := range []*DB{dbA, dbB, dbA, dbB} {
		wg.Go(func() {
			if err := increments(ctx, db, n); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := get(t, dbA, Ref{}, "counter", "/n"); got != strconv.Itoa(4*n) {
		t.Fatalf("counter %s, want %d: an update was lost", got, 4*n)
	}
	page := must(dbB.History(ctx, HistoryQuery{Limit: 1000}))
	if len(page.Revisions) != 4*n+2 {
		t.Fatalf("%d revisions, want %d", len(page.Revisions), 4*n+2)
	}
	for i, rec := range page.Revisions {
		if want := uint64(4*n + 2 - i); rec.Number != want {
			t.Fatalf("revision %d where %d belongs: numbers are not consecutive", rec.Number, want)
		}
	}
}

// TestPostgresReopenAfterDropElsewhere: a database another server dropped and created again is the new one once
// this server, told that its copy was dropped, opens it again (found in review: the cache kept the dropped one).
func TestPostgresReopenAfterDropElsewhere(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	a, b := pgDir(t, url), pgDir(t, url)
	dbA := must(a.Create(ctx, "shop", "op"))
	must(dbA.Put(ctx, "doc", []byte(`{"v":1}`), WriteOptions{}))
	if err := b.Drop(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	dbB := must(b.Create(ctx, "shop", "op"))
	must(dbB.Put(ctx, "doc", []byte(`{"v":2}`), WriteOptions{}))
	if _, err := dbA.Put(ctx, "doc", []byte(`{"v":3}`), WriteOptions{}); !errors.Is(err, store.ErrDropped) {
		t.Fatalf("a put on the dropped copy: %v, want ErrDropped", err)
	}
	again := must(a.Open(ctx, "shop"))
	if again == dbA || get(t, again, Ref{}, "doc", "/v") != "2" {
		t.Fatalf("opened again after the drop: the same copy %v, /v %s", again == dbA, get(t, again, Ref{}, "doc", "/v"))
	}
	must(again.Put(ctx, "doc", []byte(`{"v":4}`), WriteOptions{}))
	if get(t, dbB, Ref{}, "doc", "/v") != "4" {
		t.Fatal("a write through the reopened copy is not read by the server that created it")
	}
}

// TestPostgresDirLocation: a URL is never a directory; a wrong one is a clear error naming host and database, not
// the password.
func TestPostgresDirLocation(t *testing.T) {
	if _, err := OpenDir("s3://bucket/strata", nil); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "s3://") {
		t.Fatalf("an s3:// location: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = OpenDir("postgresql://strata:hunter22@"+addr+"/inventory?connect_timeout=3", nil)
	if err == nil || !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "inventory") ||
		strings.Contains(err.Error(), "hunter22") {
		t.Fatalf("an unreachable server: %v", err)
	}
}

// TestPostgresRestartMidRun restarts PostgreSQL under a database that agents keep writing to with idempotency keys:
// writes in flight fail with an error wrapping store.ErrUnavailable, the same DB (not reopened) writes again once the
// server is back, a retried key never commits twice, and every acknowledged write is there.
func TestPostgresRestartMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a PostgreSQL server")
	}
	ctx := context.Background()
	srv := pgtest.Server(t)
	d := pgDir(t, srv.URL("postgres"))
	db := must(d.Create(ctx, "busy", "op"))
	must(db.Put(ctx, "log", []byte(`[]`), WriteOptions{}))

	var mu sync.Mutex
	acked := map[string]uint64{}
	var failures []error
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			key := fmt.Sprint("append-", i)
			patch := ops(t, fmt.Sprintf(`[{"op":"add","path":"/-","value":%d}]`, i))
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, err := db.Patch(ctx, "log", patch, WriteOptions{IdempotencyKey: key})
				mu.Lock()
				if err == nil {
					acked[key] = r.Revision
				} else {
					failures = append(failures, err)
				}
				mu.Unlock()
				if err == nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	waitUntil(t, 30*time.Second, func() bool { return count() >= 10 })
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	n := count()
	waitUntil(t, 30*time.Second, func() bool { return count() >= n+10 })
	close(stop)
	<-done

	if len(failures) == 0 {
		t.Fatal("no write failed while PostgreSQL restarted: nothing was tested")
	}
	for _, err := range failures {
		if !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("a write during the restart failed with %v, which does not wrap store.ErrUnavailable", err)
		}
	}
	// Each acknowledged append is in the log once, in order, and its revision holds it.
	v, _, err := db.Get(ctx, Ref{}, "log", nil)
	if err != nil {
		t.Fatal(err)
	}
	text := string(must(db.Forest().JSON(ctx, v)))
	var want []string
	for i := range len(acked) {
		want = append(want, strconv.Itoa(i))
	}
	if text != "["+strings.Join(want, ",")+"]" {
		t.Fatalf("log %s after %d acknowledged appends: an append was lost or applied twice", text, len(acked))
	}
	page := must(db.History(ctx, HistoryQuery{Limit: 1000}))
	if len(page.Revisions) != len(acked)+2 || page.Revisions[0].Number != uint64(len(acked)+2) {
		t.Fatalf("%d revisions, newest %d, for %d appends", len(page.Revisions), page.Revisions[0].Number, len(acked))
	}
	t.Logf("%d appends acknowledged; %d writes failed during the restart, e.g. %v", len(acked), len(failures), failures[0])
}

func waitUntil(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

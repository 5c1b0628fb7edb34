package store_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/strata-db/strata/internal/pgtest"
	"github.com/strata-db/strata/store"
	"github.com/strata-db/strata/store/storetest"
)

// openPG opens a Postgres at url, closed at the end of the test.
func openPG(t *testing.T, url string, opts *store.PostgresOptions) *store.Postgres {
	t.Helper()
	p, err := store.OpenPostgres(context.Background(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func createPG(t *testing.T, p *store.Postgres, name string) *store.PostgresDB {
	t.Helper()
	d, err := p.Create(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func openPGDB(t *testing.T, p *store.Postgres, name string) *store.PostgresDB {
	t.Helper()
	d, err := p.Open(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// sqlExec runs statements on their own connection.
func sqlExec(t *testing.T, url string, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestPostgresBackend runs the conformance suites that bbolt passes.
func TestPostgresBackend(t *testing.T) {
	p := openPG(t, pgtest.URL(t), nil)
	var n atomic.Int64
	storetest.TestBackend(t, func(t *testing.T) store.Backend {
		return createPG(t, p, fmt.Sprintf("db%d", n.Add(1)))
	})
}

// commitNext appends revision last+1 on branch main, moving its head, if the head is still expect (0: whatever it
// is), and records key. It reports the new revision, or a conflict error naming the head.
func commitNext(ctx context.Context, be store.Backend, expect uint64, key string) (uint64, error) {
	var rev uint64
	err := be.Update(ctx, func(tx store.CatalogTx) error {
		last, err := tx.LastRevision()
		if err != nil {
			return err
		}
		b, err := tx.Branch("main")
		if errors.Is(err, store.ErrNotFound) {
			id, err := tx.NextID()
			if err != nil {
				return err
			}
			b = store.BranchRecord{Name: "main", ID: id}
		} else if err != nil {
			return err
		}
		if expect != 0 && b.Head != expect {
			return &conflict{head: b.Head}
		}
		if key != "" {
			if n, ok, err := tx.Idempotent(key); err != nil || ok {
				rev = n
				return err
			}
		}
		rev = last + 1
		var parents []uint64
		if b.Head != 0 {
			parents = []uint64{b.Head}
		}
		now := time.Now().UTC()
		if err := tx.AddRevision(store.RevisionRecord{Number: rev, Root: []byte{6, 0}, Parents: parents, Branch: "main", Time: now}); err != nil {
			return err
		}
		b.Head = rev
		if err := tx.PutBranch(b); err != nil {
			return err
		}
		if err := tx.LogHead(b.ID, now, rev); err != nil {
			return err
		}
		if key != "" {
			return tx.SetIdempotent(key, rev)
		}
		return nil
	})
	return rev, err
}

type conflict struct{ head uint64 }

func (c *conflict) Error() string { return fmt.Sprintf("branch main is at revision %d", c.head) }

func head(t *testing.T, be store.Backend) uint64 {
	t.Helper()
	var h uint64
	if err := be.View(context.Background(), func(c store.CatalogReader) error {
		b, err := c.Branch("main")
		h = b.Head
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return h
}

// checkChain checks that revisions 1..want exist, each the parent of the next, and main's head is the last.
func checkChain(t *testing.T, be store.Backend, want uint64) {
	t.Helper()
	err := be.View(context.Background(), func(c store.CatalogReader) error {
		last, err := c.LastRevision()
		if err != nil {
			return err
		}
		if last != want {
			t.Errorf("last revision %d, want %d", last, want)
		}
		next := last
		err = c.Revisions(last, func(r store.RevisionRecord) bool {
			if r.Number != next {
				t.Errorf("revision %d follows %d: numbers have a gap", r.Number, next+1)
			}
			if next > 1 && (len(r.Parents) != 1 || r.Parents[0] != next-1) {
				t.Errorf("revision %d has parents %v, want [%d]: an update was lost", r.Number, r.Parents, next-1)
			}
			next--
			return true
		})
		if next != 0 {
			t.Errorf("revisions stop at %d", next+1)
		}
		b, err := c.Branch("main")
		if err != nil || b.Head != last {
			t.Errorf("main at %d (%v), want %d", b.Head, err, last)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPostgresTwoProcesses: two backends with pools of their own (as two processes have) commit to one database at
// once, each reading the head and committing only if it has not moved. No update is lost, a stale head is refused,
// and revision numbers are gap-free.
func TestPostgresTwoProcesses(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	p1, p2 := openPG(t, url, nil), openPG(t, url, nil)
	a := createPG(t, p1, "shared")
	b := openPGDB(t, p2, "shared")

	// A stale head is refused, whichever process moved it.
	r1 := must(commitNext(ctx, a, 0, ""))
	must(commitNext(ctx, b, r1, ""))
	if _, err := commitNext(ctx, a, r1, ""); err == nil || !strings.Contains(err.Error(), "is at revision 2") {
		t.Fatalf("a commit on a stale head: %v, want a conflict naming revision 2", err)
	}

	const writers, each = 8, 15
	var wg sync.WaitGroup
	var conflicts atomic.Int64
	errs := make(chan error, writers)
	for w := range writers {
		be := store.Backend(a)
		if w%2 == 1 {
			be = b
		}
		wg.Go(func() {
			for range each {
				for {
					_, err := commitNext(ctx, be, head(t, be), "")
					var c *conflict
					if errors.As(err, &c) {
						conflicts.Add(1)
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					break
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkChain(t, a, 2+writers*each)
	checkChain(t, b, 2+writers*each)
	t.Logf("%d writers × %d commits over two pools; %d conflicts retried", writers, each, conflicts.Load())
}

// TestPostgresRestart restarts PostgreSQL while a writer commits through one backend: calls in flight fail with
// ErrUnavailable, the backend recovers by itself (no reopen), every acknowledged commit is there, and a retry with
// the same idempotency key never commits twice.
func TestPostgresRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a PostgreSQL server")
	}
	ctx := context.Background()
	srv := pgtest.Server(t)
	p := openPG(t, srv.URL("postgres"), &store.PostgresOptions{ConnectTimeout: 2 * time.Second})
	d := createPG(t, p, "restart")

	acked := map[string]uint64{}
	var failures []error
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			key := fmt.Sprint("k", i)
			for {
				select {
				case <-stop:
					return
				default:
				}
				rev, err := commitNext(ctx, d, 0, key)
				mu.Lock()
				if err == nil {
					acked[key] = rev
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
	waitFor(t, 30*time.Second, "20 commits", func() bool { return count() >= 20 })
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	after := count()
	waitFor(t, 30*time.Second, "20 commits after the restart", func() bool { return count() >= after+20 })
	close(stop)
	<-done

	if len(failures) == 0 {
		t.Error("no call failed while PostgreSQL restarted: the test did not exercise anything")
	}
	for _, err := range failures {
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("a call during the restart failed with %v, which does not wrap store.ErrUnavailable", err)
		}
	}
	t.Logf("%d commits acknowledged, %d calls failed during the restart; first: %v", len(acked), len(failures), failures[0])
	// Every acknowledged commit is there, once: the keys map to distinct revisions that run from 1 without a gap.
	byRev := map[uint64]string{}
	for k, rev := range acked {
		if other, dup := byRev[rev]; dup {
			t.Errorf("keys %s and %s both acknowledged revision %d", k, other, rev)
		}
		byRev[rev] = k
	}
	checkChain(t, d, uint64(len(acked)))
	if err := d.View(ctx, func(c store.CatalogReader) error {
		for k, rev := range acked {
			if got, ok, err := c.Idempotent(k); err != nil || !ok || got != rev {
				t.Errorf("key %s: %d %v %v, want %d", k, got, ok, err, rev)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cutProxy forwards TCP connections to PostgreSQL, and can cut them at the moment the client sends its next bytes:
// after forwarding them (the server receives and runs what was sent, the client never hears back), or before.
type cutProxy struct {
	l      net.Listener
	target string
	mode   atomic.Int32 // cutNone, cutAfter or cutBefore, for the next client write
	cuts   atomic.Int32
}

const (
	cutNone = iota
	cutAfter
	cutBefore
)

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{l: l, target: target}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *cutProxy) serve(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	defer client.Close()
	defer server.Close()
	var cut atomic.Bool
	go func() {
		defer client.Close() // the server hung up: so does the proxy
		buf := make([]byte, 64<<10)
		for {
			n, err := server.Read(buf)
			if err != nil || cut.Load() {
				return
			}
			if _, err := client.Write(buf[:n]); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if err != nil {
			return
		}
		switch p.mode.Swap(cutNone) {
		case cutBefore:
			cut.Store(true)
			p.cuts.Add(1)
			return
		case cutAfter:
			// The client must not hear the answer: stop relaying it, give the server time to act, then cut.
			cut.Store(true)
			p.cuts.Add(1)
			_, _ = server.Write(buf[:n])
			time.Sleep(300 * time.Millisecond)
			return
		}
		if _, err := server.Write(buf[:n]); err != nil {
			return
		}
	}
}

// TestPostgresCommitCut loses the connection exactly while a commit is on its way, after the server received it or
// before. The client cannot tell the two apart, and says so: either way the caller gets an error wrapping
// ErrUnavailable that says the outcome is unknown, never success; the commit is whole or absent (there in the first
// case, absent in the second); and the backend goes on working without being reopened.
func TestPostgresCommitCut(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCutProxy(t, net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)))
	purl := strings.Replace(url, net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)), proxy.l.Addr().String(), 1)
	if !strings.Contains(purl, proxy.l.Addr().String()) {
		t.Fatalf("could not point %s at the proxy", url)
	}
	direct := openPG(t, url, nil)
	p := openPG(t, purl, &store.PostgresOptions{MaxConns: 1})
	d := createPG(t, p, "cut")
	check := openPGDB(t, direct, "cut")
	must(commitNext(ctx, d, 0, "first"))

	for _, c := range []struct {
		name   string
		mode   int32
		landed bool
	}{{"after the server got COMMIT", cutAfter, true}, {"before the server got COMMIT", cutBefore, false}} {
		t.Run(c.name, func(t *testing.T) {
			// A commit on the connection first: it prepares the statements the one below sends, so that nothing
			// but its writes and COMMIT goes out after the proxy is armed.
			must(commitNext(ctx, d, 0, ""))
			before := head(t, check)
			cuts := proxy.cuts.Load()
			err := d.Update(ctx, func(tx store.CatalogTx) error {
				last, _ := tx.LastRevision()
				if err := tx.AddRevision(store.RevisionRecord{Number: last + 1, Root: []byte{6, 0}, Branch: "main", Time: time.Now()}); err != nil {
					return err
				}
				b, err := tx.Branch("main")
				if err != nil {
					return err
				}
				b.Head = last + 1
				if err := tx.PutBranch(b); err != nil {
					return err
				}
				// The next bytes the backend sends are the writes and COMMIT, in one round trip.
				proxy.mode.Store(c.mode)
				return nil
			})
			if proxy.cuts.Load() != cuts+1 {
				t.Fatalf("the proxy did not cut the commit (err %v)", err)
			}
			if err == nil {
				t.Fatal("a commit whose connection was cut reported success")
			}
			if !errors.Is(err, store.ErrUnavailable) {
				t.Fatalf("error %v does not wrap store.ErrUnavailable", err)
			}
			if !strings.Contains(err.Error(), "may or may not have been made") {
				t.Errorf("error %q does not say the outcome is unknown", err)
			}
			want := before
			if c.landed {
				want = before + 1
			}
			if got := head(t, check); got != want {
				t.Errorf("head %d after the cut, want %d", got, want)
			}
			// The same backend commits again, on a new connection.
			start := time.Now()
			if _, err := commitNext(ctx, d, 0, ""); err != nil {
				t.Fatalf("after the cut: %v", err)
			}
			t.Logf("recovered in %v", time.Since(start))
		})
	}
}

// TestPostgresWatch: a commit made through one pool is heard through another, by notification (polling is off),
// and, when the listening connection dropped and is not back, by polling.
func TestPostgresWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url := pgtest.URL(t)
	writer := openPG(t, url, nil)
	a := createPG(t, writer, "watched")
	must(commitNext(ctx, a, 0, ""))

	recv := func(t *testing.T, ch <-chan uint64, want uint64, within time.Duration) {
		t.Helper()
		deadline := time.After(within)
		for {
			select {
			case got, ok := <-ch:
				if !ok {
					t.Fatal("the watch ended")
				}
				if got == want {
					return
				}
				if got > want {
					t.Fatalf("heard revision %d, want %d", got, want)
				}
			case <-deadline:
				t.Fatalf("revision %d not heard within %v", want, within)
			}
		}
	}

	t.Run("notified", func(t *testing.T) {
		p := openPG(t, url, &store.PostgresOptions{PollInterval: time.Hour})
		b := openPGDB(t, p, "watched")
		ch := must(b.Watch(ctx))
		waitFor(t, 10*time.Second, "listening connection", func() bool { return store.Listening(p) })
		for range 3 {
			rev := must(commitNext(ctx, a, 0, ""))
			recv(t, ch, rev, 5*time.Second)
		}
		// A catalog-only change (a label) is heard too, with the same revision.
		last := head(t, a)
		if err := a.Update(ctx, func(tx store.CatalogTx) error {
			return tx.PutLabel(store.LabelRecord{Name: "v1", Revision: last})
		}); err != nil {
			t.Fatal(err)
		}
		recv(t, ch, last, 5*time.Second)
	})

	t.Run("ended when another server drops the database", func(t *testing.T) {
		// Found in review: such a watch never ended, and a subscription on it waited for ever.
		createPG(t, writer, "doomed")
		p := openPG(t, url, &store.PostgresOptions{PollInterval: 50 * time.Millisecond})
		b := openPGDB(t, p, "doomed")
		ch := must(b.Watch(ctx))
		if err := writer.Drop(ctx, "doomed"); err != nil {
			t.Fatal(err)
		}
		deadline := time.After(10 * time.Second)
		for open := true; open; {
			select {
			case _, open = <-ch:
			case <-deadline:
				t.Fatal("the watch of a dropped database did not end within 10 s")
			}
		}
		if !b.Dropped() {
			t.Fatal("the database does not know it was dropped")
		}
	})

	t.Run("polled after the listener dropped", func(t *testing.T) {
		p := openPG(t, url, &store.PostgresOptions{PollInterval: 50 * time.Millisecond})
		store.SetRelisten(p, time.Hour) // once dropped, it stays deaf: only polling can hear
		b := openPGDB(t, p, "watched")
		ch := must(b.Watch(ctx))
		waitFor(t, 10*time.Second, "listening connection", func() bool { return store.Listening(p) })
		sqlExec(t, url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'strata-listener' AND datname = current_database()")
		waitFor(t, 10*time.Second, "the listener to notice it was dropped", func() bool { return !store.Listening(p) })
		rev := must(commitNext(ctx, a, 0, ""))
		recv(t, ch, rev, 5*time.Second)
	})

	t.Run("caught up on listening again", func(t *testing.T) {
		p := openPG(t, url, &store.PostgresOptions{PollInterval: time.Hour})
		b := openPGDB(t, p, "watched")
		ch := must(b.Watch(ctx))
		waitFor(t, 10*time.Second, "listening connection", func() bool { return store.Listening(p) })
		// Drop the listener, and commit before it listens again: the notification is lost, and only the poll that
		// follows listening again can tell.
		sqlExec(t, url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'strata-listener' AND datname = current_database()")
		rev := must(commitNext(ctx, a, 0, ""))
		recv(t, ch, rev, 10*time.Second)
	})

	t.Run("polled where the server has no LISTEN", func(t *testing.T) {
		quiet := openPG(t, url, nil)
		store.SetNoNotify(quiet)
		w := openPGDB(t, quiet, "watched")
		p := openPG(t, url, &store.PostgresOptions{PollInterval: 50 * time.Millisecond})
		store.SetNoNotify(p)
		b := openPGDB(t, p, "watched")
		ch := must(b.Watch(ctx))
		rev := must(commitNext(ctx, w, 0, "")) // announced by nobody
		recv(t, ch, rev, 5*time.Second)
		if store.Listening(p) {
			t.Error("listening on a server said to have no LISTEN")
		}
	})

	t.Run("ends", func(t *testing.T) {
		p := openPG(t, url, nil)
		b := openPGDB(t, p, "watched")
		wctx, wcancel := context.WithCancel(ctx)
		ch := must(b.Watch(wctx))
		ch2 := must(b.Watch(ctx))
		wcancel()
		for range ch {
		}
		b.Close()
		for range ch2 {
		}
	})
}

// TestPostgresSchema: the schema is made once by processes starting together, kept by later ones, and a newer
// one is refused.
func TestPostgresSchema(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			p, err := store.OpenPostgres(ctx, url, nil)
			if err == nil {
				p.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("opening a new schema from 4 processes at once: %v", err)
		}
	}
	p := openPG(t, url, nil)
	must(p.Create(ctx, "kept"))
	p.Close()
	p = openPG(t, url, nil)
	if names := must(p.Names(ctx)); fmt.Sprint(names) != "[kept]" {
		t.Fatalf("names after reopening: %v", names)
	}
	sqlExec(t, url, fmt.Sprintf("UPDATE strata_schema SET version = %d", store.PostgresSchema+1))
	_, err := store.OpenPostgres(ctx, url, nil)
	if !errors.Is(err, store.ErrFormat) || !strings.Contains(err.Error(), fmt.Sprint("version ", store.PostgresSchema+1)) {
		t.Fatalf("a newer schema: %v, want an error wrapping ErrFormat naming the version", err)
	}
}

// TestPostgresDatabases: create, list, open, drop; a taken name and a missing one; a dropped database's backend
// says so.
func TestPostgresDatabases(t *testing.T) {
	ctx := context.Background()
	p := openPG(t, pgtest.URL(t), nil)
	a := createPG(t, p, "beta")
	createPG(t, p, "alpha")
	if _, err := p.Create(ctx, "beta"); !errors.Is(err, store.ErrExists) {
		t.Fatalf("creating a taken name: %v", err)
	}
	if names := must(p.Names(ctx)); fmt.Sprint(names) != "[alpha beta]" {
		t.Fatalf("names %v", names)
	}
	if _, err := p.Open(ctx, "gamma"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("opening a missing database: %v", err)
	}
	must(commitNext(ctx, a, 0, ""))
	if _, err := a.PutNodes(ctx, []store.Node{{Hash: store.HashOf([]byte("x")), Data: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	st := must(a.Stats(ctx))
	if st.Nodes != 1 || st.NodeBytes != 2 || st.RevisionBytes <= 0 || st.Bytes() != st.NodeBytes+st.RevisionBytes {
		t.Fatalf("stats %+v, want 1 node of 2 stored bytes and a revision record", st)
	}
	// Collection takes its nodes and revisions off the counts.
	must(commitNext(ctx, a, 0, ""))
	if err := a.Update(ctx, func(tx store.CatalogTx) error {
		if _, _, err := tx.DeleteNodes([]store.Hash{store.HashOf([]byte("x"))}); err != nil {
			return err
		}
		return tx.DeleteRevision(1)
	}); err != nil {
		t.Fatal(err)
	}
	if after := must(a.Stats(ctx)); after.Nodes != 0 || after.NodeBytes != 0 || after.RevisionBytes >= 2*st.RevisionBytes || after.RevisionBytes <= 0 {
		t.Fatalf("stats after collecting a node and a revision: %+v (before: %+v)", after, st)
	}
	if err := p.Drop(ctx, "beta"); err != nil {
		t.Fatal(err)
	}
	if err := p.Drop(ctx, "beta"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("dropping twice: %v", err)
	}
	if _, err := commitNext(ctx, a, 0, ""); !errors.Is(err, store.ErrDropped) {
		t.Fatalf("committing to a dropped database: %v", err)
	}
	// The name can be used again, for a new, empty database.
	b := createPG(t, p, "beta")
	if err := b.View(ctx, func(c store.CatalogReader) error {
		if n, _ := c.LastRevision(); n != 0 {
			t.Errorf("a re-created database has %d revisions", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetNodes(ctx, []store.Hash{store.HashOf([]byte("x"))}); !errors.Is(err, store.ErrNodeMissing) {
		t.Fatalf("a node of the dropped database: %v", err)
	}
}

// TestPostgresCorruptNode: a node whose stored bytes were changed behind Strata's back is reported, not served.
func TestPostgresCorruptNode(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	p := openPG(t, url, nil)
	d := createPG(t, p, "bits")
	data := []byte(strings.Repeat(`{"a":1}`, 200))
	n := store.Node{Hash: store.HashOf(data), Data: data}
	if _, err := d.PutNodes(ctx, []store.Node{n}); err != nil {
		t.Fatal(err)
	}
	sqlExec(t, url, `UPDATE strata_nodes SET data = overlay(data placing '\x00'::bytea from 5 for 1)`)
	if _, err := d.GetNodes(ctx, []store.Hash{n.Hash}); !errors.Is(err, store.ErrCorruptNode) {
		t.Fatalf("reading a flipped node: %v, want ErrCorruptNode", err)
	}
}

// TestPostgresBadURL: an unreachable server or a missing database is a clear error naming host and database, and
// never the password.
func TestPostgresBadURL(t *testing.T) {
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	const secret = "s3cret-Pa55word"
	_, err = store.OpenPostgres(ctx, "postgres://alice:"+secret+"@"+closed+"/inventory?connect_timeout=5", nil)
	t.Logf("unreachable: %v", err)
	if err == nil || !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), closed) ||
		!strings.Contains(err.Error(), "inventory") || strings.Contains(err.Error(), secret) {
		t.Fatalf("unreachable server: %v; want ErrUnavailable naming %s and inventory, without the password", err, closed)
	}

	url := pgtest.URL(t)
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	wrong := fmt.Sprintf("postgres://%s:%s@%s/no_such_database?sslmode=disable", cfg.User, secret, net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)))
	_, err = store.OpenPostgres(ctx, wrong, nil)
	t.Logf("missing database: %v", err)
	if err == nil || !strings.Contains(err.Error(), "no_such_database") || strings.Contains(err.Error(), secret) {
		t.Fatalf("missing database: %v; want an error naming no_such_database, without the password", err)
	}

	_, err = store.OpenPostgres(ctx, "postgres://bob:"+secret+"@host:notaport/db", nil)
	t.Logf("malformed: %v", err)
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("malformed URL: %v; want an error without the password", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

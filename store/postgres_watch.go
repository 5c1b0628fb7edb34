package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// Watcher is implemented by backends that can tell when a database changed, whichever process changed it.
type Watcher interface {
	// Watch returns a channel that receives the database's newest revision number after each commit that changes
	// it (a revision, a branch, a label, a plan: the number may then stay the same), by this process or any other,
	// until ctx ends or the backend closes; then the channel is closed. A receiver that falls behind gets the newest
	// number once, not every one in between. A watch of a database that is dropped (by any process) ends too.
	Watch(ctx context.Context) (<-chan uint64, error)
}

var _ Watcher = (*PostgresDB)(nil)

// Every commit bumps its database's commit counter (strata_databases.commits) and, on PostgreSQL, announces it with
// NOTIFY in the same transaction (so only once it is committed). One listening connection per Postgres hears the
// announcements for every database watched in the process. While it cannot listen (the connection dropped, the
// server restarts, or has no LISTEN/NOTIFY), the hub polls the counters instead; when it listens again it polls once
// more, so that commits announced while it was deaf are not missed; and while listening it still polls now and then.

type pgHub struct {
	p *Postgres

	mu      sync.Mutex
	subs    map[int64]map[*pgSub]bool
	cancel  context.CancelFunc // the running loop's, if any
	stopped bool

	listening atomic.Bool // a listening connection is up (for tests)
	// relisten is how long to wait before listening again after the connection dropped (tests lengthen it).
	relisten time.Duration
}

type pgSub struct {
	d    *PostgresDB
	ch   chan uint64
	seq  int64       // the commit counter last reported
	stop func() bool // unregisters the end of the watch's context
}

func newPGHub(p *Postgres) *pgHub {
	return &pgHub{p: p, subs: map[int64]map[*pgSub]bool{}, relisten: 100 * time.Millisecond}
}

// Watch implements Watcher.
func (d *PostgresDB) Watch(ctx context.Context) (<-chan uint64, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	var seq int64
	err := d.p.pool.QueryRow(ctx, "SELECT commits FROM strata_databases WHERE id = $1", d.id).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, d.dropped()
	}
	if err != nil {
		return nil, d.p.fail(ctx, "watching", err)
	}
	s := &pgSub{d: d, ch: make(chan uint64, 1), seq: seq}
	h := d.p.hub
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return nil, d.usable()
	}
	if h.subs[d.id] == nil {
		h.subs[d.id] = map[*pgSub]bool{}
	}
	h.subs[d.id][s] = true
	if h.cancel == nil {
		lctx, cancel := context.WithCancel(context.Background())
		h.cancel = cancel
		go h.run(lctx)
	}
	s.stop = context.AfterFunc(ctx, func() { h.remove(s) })
	h.mu.Unlock()
	return s.ch, nil
}

// remove ends one watch.
func (h *pgHub) remove(s *pgSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.subs[s.d.id]
	if !m[s] {
		return
	}
	delete(m, s)
	close(s.ch)
	s.stop()
	if len(m) == 0 {
		delete(h.subs, s.d.id)
	}
	if len(h.subs) == 0 && h.cancel != nil {
		h.cancel()
		h.cancel = nil
	}
}

// dropDB ends the watches of a closed database.
func (h *pgHub) dropDB(d *PostgresDB) {
	h.mu.Lock()
	var mine []*pgSub
	for s := range h.subs[d.id] {
		if s.d == d {
			mine = append(mine, s)
		}
	}
	h.mu.Unlock()
	for _, s := range mine {
		h.remove(s)
	}
}

// stop ends every watch and the loop.
func (h *pgHub) stop() {
	h.mu.Lock()
	h.stopped = true
	var all []*pgSub
	for _, m := range h.subs {
		for s := range m {
			all = append(all, s)
		}
	}
	h.mu.Unlock()
	for _, s := range all {
		h.remove(s)
	}
}

// deliver reports a database's counter and newest revision to its watchers that have not seen it.
func (h *pgHub) deliver(id, seq int64, rev uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[id] {
		if seq <= s.seq {
			continue
		}
		s.seq = seq
		select { // keep only the newest
		case <-s.ch:
		default:
		}
		s.ch <- rev
	}
}

// run listens, or polls while it cannot, until ctx ends.
func (h *pgHub) run(ctx context.Context) {
	poll := h.p.opts.PollInterval
	for ctx.Err() == nil {
		if h.p.notify {
			h.listen(ctx, poll)
			if ctx.Err() != nil {
				return
			}
			// Deaf until the next attempt: poll meanwhile.
			deadline := time.Now().Add(h.relisten)
			for ctx.Err() == nil && time.Now().Before(deadline) {
				h.poll(ctx)
				sleep(ctx, min(poll, time.Until(deadline)))
			}
			continue
		}
		h.poll(ctx)
		sleep(ctx, poll)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// listen holds a listening connection until it fails or ctx ends, polling once it listens (to catch up) and every
// ten poll intervals after.
func (h *pgHub) listen(ctx context.Context, poll time.Duration) {
	cfg := h.p.cfg.ConnConfig.Copy()
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["application_name"] = "strata-listener"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return
	}
	h.listening.Store(true)
	defer h.listening.Store(false)
	h.poll(ctx)
	next := time.Now().Add(10 * poll)
	for {
		// Poll every ten intervals however many notifications come: a drop is announced by none, and other
		// databases (of this installation, or of another schema on the channel) may keep the connection busy (found
		// in review: a busy neighbour kept a dropped database's watch waiting for ever).
		if time.Until(next) <= 0 {
			h.poll(ctx)
			next = time.Now().Add(10 * poll)
		}
		wctx, cancel := context.WithDeadline(ctx, next)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && wctx.Err() != nil && !conn.IsClosed():
			// quiet until the next poll: the loop polls
		case err != nil:
			return // the connection dropped: poll until listening again
		default:
			if id, seq, rev, ok := parseNotice(n.Payload); ok {
				h.deliver(id, seq, rev)
			}
		}
	}
}

// notice is the payload of a commit's NOTIFY.
func notice(id, seq int64, rev uint64) string {
	return fmt.Sprintf("%d %d %d", id, seq, rev)
}

func parseNotice(s string) (id, seq int64, rev uint64, ok bool) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return 0, 0, 0, false
	}
	var e1, e2, e3 error
	id, e1 = strconv.ParseInt(f[0], 10, 64)
	seq, e2 = strconv.ParseInt(f[1], 10, 64)
	rev, e3 = strconv.ParseUint(f[2], 10, 64)
	return id, seq, rev, e1 == nil && e2 == nil && e3 == nil
}

// poll reads the counters of every watched database and reports those that moved.
func (h *pgHub) poll(ctx context.Context) {
	h.mu.Lock()
	ids := make([]int64, 0, len(h.subs))
	for id := range h.subs {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rows, err := h.p.pool.Query(pctx, "SELECT id, commits, last_rev FROM strata_databases WHERE id = ANY($1)", ids)
	if err != nil {
		return // unreachable: the next poll tries again
	}
	type row struct {
		id, seq, rev int64
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.id, &x.seq, &x.rev)
		return x, err
	})
	if err != nil {
		return
	}
	present := make(map[int64]bool, len(got))
	for _, x := range got {
		present[x.id] = true
		h.deliver(x.id, x.seq, uint64(x.rev))
	}
	for _, id := range ids {
		if !present[id] {
			h.dropped(id)
		}
	}
}

// dropped ends the watches of a database that is no longer there (dropped, by this process or another): nothing
// will ever commit to it again, and a watcher waiting for it would wait for ever.
func (h *pgHub) dropped(id int64) {
	h.mu.Lock()
	var gone []*pgSub
	for s := range h.subs[id] {
		gone = append(gone, s)
	}
	h.mu.Unlock()
	for _, s := range gone {
		s.d.gone.Store(true)
		h.remove(s)
	}
}

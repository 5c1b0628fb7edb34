package snapshots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/store"
)

// A randomized concurrent review of the single writer: a mix of puts (small and through the import), patches,
// idempotent writes, compare-and-set writes, InTx hooks, dry runs, cancellations, catalog operations and promotes,
// on one database (and, shared, from a second handle on the same file, as another process), then invariants.

type rwOp struct {
	id       string
	g        int
	kind     string
	via      int // 0: db A, 1: db B (shared: another process)
	branch   string
	resource string
	value    string // put: whole value; patch: the value of /op
	key      string
	expected uint64
	observed uint64 // the head read before an expected-head write
	hook     int    // 0 none, 1 accept (marks the bucket), 2 refuse, 3 ExpectRoot(wrong)
	cancel   bool
	dry      bool
	large    bool
	res      *Result
	err      error
	t0, t1   time.Time
}

const rwBucket = "review-writer"

func TestWriterRandom(t *testing.T) {
	for _, name := range []string{"mem", "bolt", "shared"} {
		seeds := []int64{20261203}
		if os.Getenv("STRATA_LONG") != "" {
			seeds = append(seeds, 7) // the review ran both, with -race too
		}
		for _, seed := range seeds {
			t.Run(fmt.Sprint(name, "/", seed), func(t *testing.T) { testReviewWriterRandom(t, name, seed) })
		}
	}
}

func testReviewWriterRandom(t *testing.T, backend string, seed int64) {
	old := putImportBytes
	putImportBytes = 4096
	t.Cleanup(func() { putImportBytes = old })
	ctx := context.Background()
	var a, b *DB
	switch backend {
	case "mem":
		a, _ = openTest(t, store.NewMemBackend())
		b = a
	case "bolt":
		be, err := store.OpenBolt(filepath.Join(t.TempDir(), "db"+Ext), nil)
		if err != nil {
			t.Fatal(err)
		}
		a, _ = openTest(t, be)
		b = a
	case "shared":
		path := filepath.Join(t.TempDir(), "db"+Ext)
		s1, err := store.OpenShared(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		a, _ = openTest(t, s1)
		s2, err := store.OpenShared(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ = openTest(t, s2)
	}
	dbs := []*DB{a, b}
	const nres = 4
	for i := 0; i < nres; i++ {
		must(a.Put(ctx, fmt.Sprintf("r%d", i), []byte(`{"op":"setup"}`), WriteOptions{Message: "setup"}))
	}
	must(a.CreateBranch(ctx, "b1", Ref{}, "t"))
	must(a.CreateBranch(ctx, "b2", Ref{}, "t"))

	const G, N = 8, 250
	var mu sync.Mutex
	var all []*rwOp
	record := func(o *rwOp) {
		mu.Lock()
		all = append(all, o)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for g := 0; g < G; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rnd := rand.New(rand.NewSource(seed + int64(g)))
			var mine []string // temp branches of this goroutine
			for i := 0; i < N; i++ {
				id := fmt.Sprintf("g%d-%d", g, i)
				via := 0
				if backend == "shared" && rnd.Intn(3) == 0 {
					via = 1
				}
				db := dbs[via]
				branches := append([]string{Main, Main, Main, "b1", "b2"}, mine...)
				br := branches[rnd.Intn(len(branches))]
				o := &rwOp{id: id, g: g, via: via, branch: br, resource: fmt.Sprintf("r%d", rnd.Intn(nres))}
				w := WriteOptions{Branch: br, Message: id, Author: "g"}
				cctx := ctx
				var cancel context.CancelFunc
				if rnd.Intn(8) == 0 {
					o.cancel = true
					cctx, cancel = context.WithCancel(ctx)
					d := time.Duration(rnd.Intn(400)) * time.Microsecond
					if rnd.Intn(4) == 0 {
						cancel()
					} else {
						time.AfterFunc(d, cancel)
					}
				}
				putValue := func() []byte {
					if rnd.Intn(6) == 0 {
						o.large = true
						return []byte(fmt.Sprintf(`{"op":%q,"pad":%q}`, id, strings.Repeat("x", 5000+rnd.Intn(100))))
					}
					return []byte(fmt.Sprintf(`{"op":%q}`, id))
				}
				switch k := rnd.Intn(100); {
				case k < 18: // put
					o.kind = "put"
					v := putValue()
					o.value = string(v)
					o.t0 = time.Now()
					o.res, o.err = db.Put(cctx, o.resource, v, w)
				case k < 32: // patch
					o.kind = "patch"
					o.value = id
					o.t0 = time.Now()
					o.res, o.err = db.Patch(cctx, o.resource, []revision.Operation{{Op: "replace", Path: "/op", Value: []byte(fmt.Sprintf("%q", id)), HasValue: true}}, w)
				case k < 44: // idempotent put, sometimes twice at once
					o.kind = "idem"
					j := rnd.Intn(25)
					o.key, o.branch, o.resource = fmt.Sprintf("key%d", j), Main, fmt.Sprintf("idem%d", j)
					w.Branch, w.IdempotencyKey = Main, o.key
					var v []byte
					if rnd.Intn(5) == 0 {
						o.large = true
						v = []byte(fmt.Sprintf(`{"key":%q,"pad":%q}`, o.key, strings.Repeat("y", 5000+j)))
					} else {
						v = []byte(fmt.Sprintf(`{"key":%q}`, o.key))
					}
					o.value = string(v)
					if rnd.Intn(3) == 0 { // a concurrent twin with the same key
						twin := *o
						twin.id = id + "-twin"
						tw := w
						tw.Message = twin.id
						twinVia := rnd.Intn(2)
						if backend != "shared" {
							twinVia = 0
						}
						twin.via = twinVia
						wg.Add(1)
						go func() {
							defer wg.Done()
							twin.t0 = time.Now()
							twin.res, twin.err = dbs[twinVia].Put(cctx, twin.resource, v, tw)
							twin.t1 = time.Now()
							record(&twin)
						}()
					}
					o.t0 = time.Now()
					o.res, o.err = db.Put(cctx, o.resource, v, w)
				case k < 60: // expected head
					o.kind = "cas"
					st, err := db.Resolve(ctx, Ref{Branch: br})
					if err != nil {
						o.err = err
						break
					}
					o.observed = st.Rev.Number
					o.expected = st.Rev.Number
					if rnd.Intn(5) == 0 && o.expected > 1 {
						o.expected--
					}
					w.ExpectedHead = o.expected
					o.t0 = time.Now()
					if rnd.Intn(5) == 0 {
						o.kind = "cas-put"
						v := putValue()
						o.value = string(v)
						o.res, o.err = db.Put(cctx, o.resource, v, w)
					} else {
						o.value = id
						o.res, o.err = db.Patch(cctx, o.resource, []revision.Operation{{Op: "replace", Path: "/op", Value: []byte(fmt.Sprintf("%q", id)), HasValue: true}}, w)
					}
				case k < 70: // InTx
					o.kind = "intx"
					o.hook = 1 + rnd.Intn(3)
					hook := o.hook
					switch hook {
					case 1, 2:
						w.InTx = func(tx store.CatalogTx, rec store.RevisionRecord) error {
							if err := tx.Put(rwBucket, id, []byte(fmt.Sprint(rec.Number))); err != nil {
								return err
							}
							if hook == 2 {
								return errors.New("refused by the hook")
							}
							return nil
						}
					case 3:
						w.InTx = BothInTx(func(tx store.CatalogTx, rec store.RevisionRecord) error {
							return tx.Put(rwBucket, id, []byte(fmt.Sprint(rec.Number)))
						}, ExpectRoot([]byte("nope")))
					}
					o.value = id
					o.t0 = time.Now()
					if rnd.Intn(3) == 0 {
						o.kind = "intx-put"
						v := putValue()
						o.value = string(v)
						o.res, o.err = db.Put(cctx, o.resource, v, w)
					} else {
						o.res, o.err = db.Patch(cctx, o.resource, []revision.Operation{{Op: "replace", Path: "/op", Value: []byte(fmt.Sprintf("%q", id)), HasValue: true}}, w)
					}
				case k < 75: // dry run
					o.kind = "dry"
					o.dry = true
					w.DryRun = true
					v := putValue()
					o.value = string(v)
					o.t0 = time.Now()
					o.res, o.err = db.Put(cctx, o.resource, v, w)
				case k < 83: // branch create/delete
					o.kind = "branch"
					if len(mine) > 0 && rnd.Intn(2) == 0 {
						o.kind = "branch-delete"
						n := mine[rnd.Intn(len(mine))]
						o.branch = n
						_, o.err = db.DeleteBranch(cctx, n)
						if o.err == nil {
							for i, m := range mine {
								if m == n {
									mine = append(mine[:i], mine[i+1:]...)
									break
								}
							}
						}
					} else {
						n := "t" + id
						o.branch = n
						var br store.BranchRecord
						br, o.err = db.CreateBranch(cctx, n, Ref{}, "g")
						if o.err == nil {
							mine = append(mine, n)
							o.res = &Result{Revision: br.Head}
						}
					}
				case k < 88: // snapshot
					o.kind = "snapshot"
					_, o.err = db.CreateSnapshot(cctx, "s"+id, Ref{Branch: br}, "", "g")
					if o.err == nil && rnd.Intn(2) == 0 {
						_, o.err = db.DeleteSnapshot(cctx, "s"+id)
					}
				default: // promote
					o.kind = "promote"
					src := []string{"b1", "b2"}[rnd.Intn(2)]
					o.branch = Main
					o.resource = src
					w.Branch = Main
					o.t0 = time.Now()
					var pr *PromoteResult
					pr, o.err = db.Promote(cctx, src, Main, w)
					if o.err != nil && pr != nil && len(pr.Conflicts) > 0 {
						o.kind = "promote-resolved"
						res := map[string]string{}
						for _, c := range pr.Conflicts {
							res[c.Path] = ResolveBranch
						}
						pr, o.err = db.PromoteWith(cctx, src, Main, w, PromoteOptions{Resolve: res})
					}
					if o.err == nil {
						o.res = pr.Result
					}
				}
				o.t1 = time.Now()
				if cancel != nil {
					cancel()
				}
				record(o)
			}
		}(g)
	}
	wg.Wait()
	t.Logf("%s: %d operations", backend, len(all))
	reviewWriterCheck(t, a, all)
}

func canonJSON(t *testing.T, s []byte) any {
	var v any
	if err := json.Unmarshal(s, &v); err != nil {
		t.Fatalf("bad json %s: %v", s, err)
	}
	return v
}

func reviewWriterCheck(t *testing.T, db *DB, all []*rwOp) {
	ctx := context.Background()
	var revs []store.RevisionRecord
	byMsg := map[string][]store.RevisionRecord{}
	var branchRecs []store.BranchRecord
	idem := map[string]uint64{}
	marks := map[string]bool{}
	err := db.be.View(ctx, func(c store.CatalogReader) error {
		last, err := c.LastRevision()
		if err != nil {
			return err
		}
		for n := uint64(1); n <= last; n++ {
			r, err := c.Revision(n)
			if err != nil {
				return fmt.Errorf("revision %d: %w", n, err)
			}
			revs = append(revs, r)
			byMsg[r.Message] = append(byMsg[r.Message], r)
		}
		if branchRecs, err = c.Branches(); err != nil {
			return err
		}
		for _, o := range all {
			if o.key != "" {
				if n, ok, err := c.Idempotent(o.key); err != nil {
					return err
				} else if ok {
					idem[o.key] = n
				}
			}
			if o.hook != 0 {
				_, ok, err := c.Get(rwBucket, o.id)
				if err != nil {
					return err
				}
				marks[o.id] = ok
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	fails := 0
	fail := func(format string, args ...any) {
		fails++
		if fails <= 40 {
			t.Errorf(format, args...)
		}
	}
	// (4) numbers consecutive, times strictly increasing, parents exist and come before.
	for i, r := range revs {
		if r.Number != uint64(i+1) {
			fail("revision at %d numbered %d", i+1, r.Number)
		}
		if i > 0 && !r.Time.After(revs[i-1].Time) {
			fail("revision %d time %v not after %d's %v", r.Number, r.Time, revs[i-1].Number, revs[i-1].Time)
		}
		for _, p := range r.Parents {
			if p == 0 || p >= r.Number {
				fail("revision %d parent %d", r.Number, p)
			}
		}
	}
	// Each branch's revisions form a chain from its base (names are never reused in this test).
	bases := map[string]uint64{}
	heads := map[string]uint64{}
	for _, b := range branchRecs {
		bases[b.Name], heads[b.Name] = b.Base, b.Head
	}
	var created = map[string]uint64{}
	for _, o := range all {
		if o.kind == "branch" && o.err == nil {
			created[o.branch] = o.res.Revision
		}
	}
	chain := map[string]map[uint64]bool{}
	for name, b := range bases {
		chain[name] = map[uint64]bool{b: true}
	}
	for name, b := range created {
		chain[name] = map[uint64]bool{b: true}
	}
	onBranch := map[string][]store.RevisionRecord{}
	for _, r := range revs {
		onBranch[r.Branch] = append(onBranch[r.Branch], r)
	}
	for name, rs := range onBranch {
		base, ok := bases[name]
		if !ok {
			base, ok = created[name]
		}
		chain[name] = map[uint64]bool{base: true}
		prev := base
		for i, r := range rs {
			if name == Main && i == 0 {
				prev = r.Number
				chain[name][r.Number] = true
				continue
			}
			if len(r.Parents) == 0 || r.Parents[0] != prev {
				fail("branch %s: revision %d (%s) has parents %v, want first %d (the previous head)", name, r.Number, r.Message, r.Parents, prev)
			}
			prev = r.Number
			chain[name][r.Number] = true
		}
		if h, ok := heads[name]; ok && h != prev {
			fail("branch %s head %d, its last revision is %d", name, h, prev)
		}
	}
	// (1)(3)(5) each operation's answer against the history.
	ids := map[string]bool{"setup": true, "create database": true}
	unexpected := map[string]int{}
	keyOps := map[string][]*rwOp{}
	for _, o := range all {
		ids[o.id] = true
		if o.key != "" {
			keyOps[o.key] = append(keyOps[o.key], o)
		}
		switch o.kind {
		case "branch", "branch-delete", "snapshot":
			if o.err != nil && !(o.cancel && errors.Is(o.err, context.Canceled)) {
				unexpected[o.kind+": "+o.err.Error()]++
			}
			continue
		}
		got := byMsg[o.id]
		committed := o.err == nil && !o.dry && !o.res.Replayed && !o.res.Unchanged
		if o.hook != 0 && marks[o.id] != committed {
			fail("%s %s: hook mark %v, committed %v (err %v)", o.kind, o.id, marks[o.id], committed, o.err)
		}
		if !committed {
			if len(got) != 0 {
				fail("%s %s (via %d, cancel %v): answered %+v / %v but revision %d carries it", o.kind, o.id, o.via, o.cancel, o.res, o.err, got[0].Number)
			}
			if o.err != nil {
				var ce *ConflictError
				switch {
				case o.cancel && (errors.Is(o.err, context.Canceled) || errors.Is(o.err, context.DeadlineExceeded)):
				case o.hook >= 2:
				case errors.As(o.err, &ce) && ce.Msg == "" && o.expected != 0:
					if ce.Expected != o.expected || ce.Head == o.expected || ce.Head < o.observed || !chain[o.branch][ce.Head] && ce.Head != bases[o.branch] {
						fail("%s %s: conflict %v names head %d (expected %d, observed %d)", o.kind, o.id, o.err, ce.Head, o.expected, o.observed)
					}
				case strings.HasPrefix(o.kind, "promote") && errors.As(o.err, &ce):
				case o.kind == "promote-resolved" && errors.Is(o.err, ErrInvalidArgument): // the merge changed since its conflicts were read
				default:
					unexpected[o.kind+": "+o.err.Error()]++
				}
			} else if o.dry {
				if o.res.Revision != 0 && !o.res.Unchanged || (o.res.Preview == nil && !o.res.Unchanged) {
					fail("dry %s: %+v", o.id, o.res)
				}
			} else if o.res.Unchanged && o.kind != "idem" && !strings.HasPrefix(o.kind, "promote") {
				fail("%s %s unchanged: %+v", o.kind, o.id, o.res)
			}
			continue
		}
		if len(got) != 1 {
			fail("%s %s acknowledged as %d but %d revisions carry it", o.kind, o.id, o.res.Revision, len(got))
			continue
		}
		r := got[0]
		if r.Number != o.res.Revision || r.Branch != o.branch || o.res.Branch != o.branch || len(r.Parents) == 0 || r.Parents[0] != o.res.Parent || !r.Time.Equal(o.res.Time) {
			fail("%s %s: result %+v, revision %+v (branch %s)", o.kind, o.id, o.res, r, o.branch)
		}
		if o.expected != 0 && r.Parents[0] != o.expected {
			fail("%s %s: expected head %d but committed on %d", o.kind, o.id, o.expected, r.Parents[0])
		}
		if strings.HasPrefix(o.kind, "promote") {
			if len(r.Parents) != 2 {
				fail("promote %s: parents %v", o.id, r.Parents)
			}
			continue
		}
		ptr := ""
		want := o.value
		if o.kind == "patch" || o.kind == "cas" || o.kind == "intx" {
			ptr, want = "/op", fmt.Sprintf("%q", o.value)
		}
		v, _, err := db.Get(ctx, Ref{Revision: r.Number}, o.resource, revision.MustPointer(ptr))
		if err != nil {
			fail("%s %s: get at %d: %v", o.kind, o.id, r.Number, err)
			continue
		}
		text, err := db.Forest().JSON(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(canonJSON(t, text), canonJSON(t, []byte(want))) {
			fail("%s %s: revision %d has %s%s = %.80s, want %.80s", o.kind, o.id, r.Number, o.resource, ptr, text, want)
		}
	}
	// No revision without a write that was answered (nor one from nowhere).
	for msg, rs := range byMsg {
		if !ids[msg] {
			fail("revision %d carries unknown message %q", rs[0].Number, msg)
		}
	}
	// (2) idempotency keys: one revision per key, every success names it.
	for k, os := range keyOps {
		var commits []*rwOp
		var revsOf []uint64
		for _, o := range os {
			for _, r := range byMsg[o.id] {
				revsOf = append(revsOf, r.Number)
			}
			if o.err == nil && !o.res.Replayed {
				commits = append(commits, o)
			}
		}
		if len(revsOf) > 1 {
			fail("key %s committed %d times: %v", k, len(revsOf), revsOf)
		}
		for _, o := range os {
			if o.err == nil && (len(revsOf) != 1 || o.res.Revision != revsOf[0] || idem[k] != revsOf[0]) {
				fail("key %s: %s answered revision %d (replayed %v), the key's revisions %v, recorded %d", k, o.id, o.res.Revision, o.res.Replayed, revsOf, idem[k])
			}
		}
		if len(commits) > 1 {
			fail("key %s: %d answers not replayed: %s and %s", k, len(commits), commits[0].id, commits[1].id)
		}
	}
	if len(unexpected) > 0 {
		var ks []string
		for k, n := range unexpected {
			ks = append(ks, fmt.Sprintf("%dx %s", n, k))
		}
		sort.Strings(ks)
		t.Logf("errors not in an expected category:\n  %s", strings.Join(ks, "\n  "))
	}
	// (6) the database is sound.
	rep, err := db.Check(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) > 0 {
		t.Errorf("check: %v", rep.Problems)
	}
	stats := map[string]int{}
	for _, o := range all {
		s := o.kind
		switch {
		case o.err != nil:
			s += " err"
		case o.res != nil && o.res.Replayed:
			s += " replayed"
		case o.res != nil && o.res.Unchanged:
			s += " unchanged"
		default:
			s += " ok"
		}
		stats[s]++
		if o.cancel {
			stats["cancelled-ctx "+s]++
		}
	}
	t.Logf("revisions %d, stats %v", len(revs), stats)
}

// A group in which more than ten writes are refused by their InTx hooks: each refusal restarts the group and counts
// as a retry, so the writes after the tenth are refused "the database kept changing (another process)" though
// nothing else writes.
func TestWriterInTxRefusalsExhaustRetries(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t, store.NewMemBackend())
	must(db.Put(ctx, "doc", []byte(`{"n":0}`), WriteOptions{}))
	hold, held := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // holds the writer inside its transaction while the others queue
		defer wg.Done()
		must(db.Patch(ctx, "doc", patchOp("/n", 1), WriteOptions{InTx: func(store.CatalogTx, store.RevisionRecord) error {
			close(held)
			<-hold
			return nil
		}}))
	}()
	<-held
	const refusers = 11
	errs := make([]error, refusers+1)
	for i := 0; i <= refusers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			w := WriteOptions{Message: fmt.Sprint(i)}
			if i < refusers {
				w.InTx = func(store.CatalogTx, store.RevisionRecord) error { return errors.New("refused") }
			}
			_, errs[i] = db.Patch(ctx, "doc", patchOp(fmt.Sprintf("/w%d", i), i), w)
		}(i)
	}
	for len(db.queue) < refusers+1 {
		time.Sleep(time.Millisecond)
	}
	close(hold)
	wg.Wait()
	if errs[refusers] != nil {
		t.Fatalf("the write without a hook: %v", errs[refusers])
	}
}

// Shared: another process deletes a branch and creates one of the same name at the same head while this process's
// writer holds the branch in its seed. The check at commit compares heads only, so the commit writes the old
// branch's record (its id, creation, base) over the new branch.
func TestWriterSharedBranchRecreated(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db"+Ext)
	open := func() *DB {
		s, err := store.OpenShared(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		db, _ := openTest(t, s)
		return db
	}
	a, b := open(), open()
	must(a.Put(ctx, "doc", []byte(`{"n":0}`), WriteOptions{}))
	must(a.CreateBranch(ctx, "x", Ref{}, "alice"))
	r := must(a.Patch(ctx, "doc", patchOp("/n", 1), WriteOptions{Branch: "x"})) // a's seed now holds x
	old := must(a.Resolve(ctx, Ref{Branch: "x"}))
	_ = old
	must(b.DeleteBranch(ctx, "x"))
	nb := must(b.CreateBranch(ctx, "x", Ref{Revision: r.Revision}, "bob"))
	must(a.Patch(ctx, "doc", patchOp("/n", 2), WriteOptions{Branch: "x"}))
	var got store.BranchRecord
	if err := a.be.View(ctx, func(c store.CatalogReader) error {
		var err error
		got, err = c.Branch("x")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got.ID != nb.ID || got.Creator != "bob" || !got.Created.Equal(nb.Created) {
		t.Errorf("branch x after the write: %+v, want the recreated branch %+v (id %d, creator bob)", got, nb, nb.ID)
	}
	rep := must(a.Check(ctx, nil))
	if len(rep.Problems) > 0 {
		t.Errorf("check: %v", rep.Problems)
	}
}

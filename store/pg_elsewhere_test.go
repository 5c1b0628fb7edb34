package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/pgtest"
	"github.com/strata-db/strata/store"
)

// TestPGWatchDropWhileOthersBusy: a watch of a database another server drops ends (store.Watcher's
// contract), also while other databases of the installation keep committing: their announcements must not keep the
// listener from its periodic poll, the only way a drop is heard.
func TestPGWatchDropWhileOthersBusy(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url := pgtest.URL(t)
	writer := openPG(t, url, nil)
	busy := createPG(t, writer, "busy")
	createPG(t, writer, "doomed")
	p := openPG(t, url, &store.PostgresOptions{PollInterval: 20 * time.Millisecond}) // polls every 200 ms while listening
	b := openPGDB(t, p, "doomed")
	ch := must(b.Watch(ctx))
	waitFor(t, 10*time.Second, "listening connection", func() bool { return store.Listening(p) })

	// Another database commits every 50 ms, for as long as the test runs.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if _, err := commitNext(ctx, busy, 0, ""); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { close(stop); <-done }()
	time.Sleep(100 * time.Millisecond) // let the busy writer start (not a wait for a result)
	if err := writer.Drop(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(4 * time.Second) // twenty polls' worth
	for open := true; open; {
		select {
		case _, open = <-ch:
		case <-deadline:
			t.Fatal("the watch of a dropped database did not end while another database kept committing")
		}
	}
}

// Package pgtest gives tests a PostgreSQL to run against.
//
// If STRATA_TEST_POSTGRES is set (a postgres:// URL), tests use that server; otherwise the first test that asks
// starts a throwaway server from the installed PostgreSQL binaries (package pgserver), shared by every test of the
// test binary and gone when it exits. Each call of URL makes a new, empty schema and returns a URL whose
// search_path selects it, so tests never see each other's tables. When neither is possible, a test fails under CI
// (CI set in the environment), naming what is missing, and is skipped otherwise.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/strata-db/strata/internal/pgserver"
	"github.com/strata-db/strata/internal/testenv"
)

// EnvURL names the variable that points the tests at an existing PostgreSQL.
const EnvURL = "STRATA_TEST_POSTGRES"

var shared struct {
	once    sync.Once
	base    string // the URL of the database tests make their schemas in
	missing error  // PostgreSQL is not installed
	err     error  // it is, and would not start
}

// Unavailable fails the test under CI, or skips it, saying why PostgreSQL is not there and how to provide it.
func Unavailable(t testing.TB, why string) {
	t.Helper()
	testenv.Missing(t, "PostgreSQL is not available: %s; install it (apt-get install -y postgresql) or set %s to a postgres:// URL", why, EnvURL)
}

// base returns the URL of the database to make schemas in, starting the shared server on first use.
func base(t testing.TB) string {
	t.Helper()
	shared.once.Do(func() {
		if u := os.Getenv(EnvURL); u != "" {
			shared.base = u
			return
		}
		bins, err := pgserver.FindBins()
		if err != nil {
			shared.missing = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		srv, err := pgserver.Start(ctx, "", &pgserver.Options{Bins: &bins})
		if err != nil {
			shared.err = err
			return
		}
		// The server is stopped, and its directory removed, when the test binary exits (see pgserver).
		shared.base = srv.URL("postgres")
	})
	if shared.missing != nil {
		Unavailable(t, shared.missing.Error())
	}
	if shared.err != nil {
		t.Fatalf("starting a throwaway PostgreSQL: %v", shared.err)
	}
	return shared.base
}

// URL returns the URL of a new, empty schema for this test (dropped at its end).
func URL(t testing.TB) string {
	t.Helper()
	return SchemaURL(t, base(t))
}

// SchemaURL makes a new, empty schema in the database at baseURL and returns a URL whose search_path selects it.
// The schema is dropped when the test ends.
func SchemaURL(t testing.TB, baseURL string) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := exec(ctx, baseURL, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("making a schema for the test in %s: %v", redact(baseURL), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := exec(ctx, baseURL, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Logf("dropping the test's schema %s: %v", schema, err)
		}
	})
	return WithParam(baseURL, "search_path", schema)
}

// WithParam returns a URL with a query parameter set.
func WithParam(rawURL, key, value string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		sep := "?"
		if strings.Contains(rawURL, "?") {
			sep = "&"
		}
		return rawURL + sep + url.QueryEscape(key) + "=" + url.QueryEscape(value)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

func exec(ctx context.Context, rawURL, sql string) error {
	conn, err := pgx.Connect(ctx, rawURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

func redact(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		return u.Redacted()
	}
	return "the server"
}

// Server starts a private throwaway server for a test that must stop or restart it, stopped at the test's end. It
// needs the PostgreSQL binaries, even when STRATA_TEST_POSTGRES is set.
func Server(t testing.TB) *pgserver.Server {
	t.Helper()
	bins, err := pgserver.FindBins()
	if err != nil {
		Unavailable(t, fmt.Sprintf("this test stops or restarts a server of its own, which needs the PostgreSQL binaries: %v", err))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := pgserver.Start(ctx, "", &pgserver.Options{Bins: &bins})
	if err != nil {
		t.Fatalf("starting a throwaway PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Logf("stopping PostgreSQL: %v", err)
		}
	})
	return srv
}

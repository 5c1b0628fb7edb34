//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/strata-db/strata/internal/pgtest"
	"github.com/strata-db/strata/store"
)

// openPGLog opens the audit table of the Strata schema at url (making the schema), on a pool of its own.
func openPGLog(t testing.TB, url string) (*Log, *store.Postgres) {
	t.Helper()
	p, err := store.OpenPostgres(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	l, err := OpenPostgres(context.Background(), p.Pool(), p.Location(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, p
}

// pgText is the table's log as the file would hold it.
func pgText(t *testing.T, p *store.Postgres) []byte {
	t.Helper()
	b, err := io.ReadAll(ReadPostgres(context.Background(), p.Pool()))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pgExec(t *testing.T, url, sql string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestPGAppendChild is the child process of TestPostgresAppendAcrossProcesses; it does nothing in a normal run.
func TestPGAppendChild(t *testing.T) {
	url, who := os.Getenv("STRATA_AUDIT_PG"), os.Getenv("STRATA_AUDIT_WHO")
	if url == "" {
		t.Skip("child process of TestPostgresAppendAcrossProcesses")
	}
	n, _ := strconv.Atoi(os.Getenv("STRATA_AUDIT_N"))
	l, _ := openPGLog(t, url)
	appendN(t, l, who, n)
}

// TestPostgresAppendAcrossProcesses: two child processes and two pools of this one append to one table at once;
// the result is one chain with every record, byte for byte the file's format: a file holding the table's lines
// verifies as a log file does.
func TestPostgresAppendAcrossProcesses(t *testing.T) {
	url := pgtest.URL(t)
	l1, p := openPGLog(t, url)
	l2, _ := openPGLog(t, url)
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for _, who := range []string{"a", "b"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPGAppendChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "STRATA_AUDIT_PG="+url, "STRATA_AUDIT_WHO="+who, "STRATA_AUDIT_N="+strconv.Itoa(n))
		wg.Go(func() {
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("child %s: %v\n%s", who, err, out)
			}
		})
	}
	for who, l := range map[string]*Log{"p1": l1, "p2": l2} {
		wg.Go(func() {
			for i := range n {
				if _, err := l.Append(sample(who, i)); err != nil {
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
	if got, err := VerifyPostgres(context.Background(), p.Pool(), nil); err != nil || got != 4*n {
		t.Fatalf("VerifyPostgres = %d, %v; want %d records, chain intact", got, err, 4*n)
	}
	path := filepath.Join(t.TempDir(), FileName)
	text := pgText(t, p)
	if err := os.WriteFile(path, text, 0o600); err != nil {
		t.Fatal(err)
	}
	checkAll(t, path, map[string]int{"a": n, "b": n, "p1": n, "p2": n})
	// A file log continues the chain the table's lines make: the same format, the same hashes.
	fl, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	if r, err := fl.Append(sample("file", 0)); err != nil || r.Seq != 4*n+1 {
		t.Fatalf("a file log after the table's lines: %+v %v", r, err)
	}
	if got, err := verifyFile(t, path); err != nil || got != 4*n+1 {
		t.Fatalf("the file with the table's lines and one more: %d %v", got, err)
	}
	switches, last := 0, ""
	for _, m := range regexp.MustCompile(`"principal":"(\w+)"`).FindAllStringSubmatch(string(text), -1) {
		if m[1] != last {
			switches, last = switches+1, m[1]
		}
	}
	t.Logf("2 processes and 2 pools × %d appends; the writer changed %d times along the table", n, switches)
}

// TestPostgresTamperingDetected: an edited, deleted or inserted row is found, and so are rows deleted from the end
// (the head row still names the last record appended), which a file's chain alone cannot show.
func TestPostgresTamperingDetected(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, sql string
		line      int
		problem   string
	}{
		{"edited", `UPDATE strata_audit SET line = replace(line, '"principal":"ada"', '"principal":"eve"') WHERE seq = 3`, 3, "hash does not match"},
		{"deleted", `DELETE FROM strata_audit WHERE seq = 4`, 4, "seq is 5, want 4"},
		{"cut at the end", `DELETE FROM strata_audit WHERE seq >= 5`, 5, "the last 2 record(s) were deleted"},
		{"appended behind its back", `INSERT INTO strata_audit (seq, line) SELECT 7, line FROM strata_audit WHERE seq = 6`, 7, "inserted behind the log's back"},
		{"last replaced", `UPDATE strata_audit_head SET hash = repeat('0', 64)`, 6, "it was replaced"},
		{"a newline", `UPDATE strata_audit SET line = line || E'\n' WHERE seq = 2`, 3, "empty line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := pgtest.URL(t)
			l, p := openPGLog(t, url)
			appendN(t, l, "ada", 6)
			if n, err := VerifyPostgres(ctx, p.Pool(), nil); err != nil || n != 6 {
				t.Fatalf("before tampering: %d %v", n, err)
			}
			pgExec(t, url, tc.sql)
			_, err := VerifyPostgres(ctx, p.Pool(), nil)
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.Line != tc.line || !strings.Contains(ve.Problem, tc.problem) {
				t.Fatalf("VerifyPostgres after %s: %v; want line %d: …%s…", tc.name, err, tc.line, tc.problem)
			}
		})
	}
}

// TestPostgresLogUnavailable: while the server is down, Check and Append fail (the gate then refuses writes: fail
// closed); once it is back, the same Log appends again, continuing the chain.
func TestPostgresLogUnavailable(t *testing.T) {
	if testing.Short() {
		t.Skip("stops a PostgreSQL server")
	}
	ctx := context.Background()
	srv := pgtest.Server(t)
	l, p := openPGLog(t, srv.URL("postgres")+"&connect_timeout=2")
	appendN(t, l, "ada", 2)
	if err := srv.StopServer(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Check(); err == nil {
		t.Fatal("Check with the server down succeeded")
	}
	if _, err := l.Append(sample("ada", 2)); err == nil || !strings.Contains(err.Error(), "table strata_audit") && !strings.Contains(err.Error(), "127.0.0.1") {
		t.Fatalf("Append with the server down: %v", err)
	}
	if err := srv.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Check(); err != nil {
		t.Fatalf("Check once the server is back: %v", err)
	}
	r, err := l.Append(sample("ada", 2))
	if err != nil || r.Seq != 3 {
		t.Fatalf("Append once the server is back: %+v %v", r, err)
	}
	if n, err := VerifyPostgres(ctx, p.Pool(), nil); err != nil || n != 3 {
		t.Fatalf("VerifyPostgres = %d, %v", n, err)
	}
	if !bytes.Contains(pgText(t, p), []byte(`"seq":3,`)) {
		t.Fatal("the third record is not in the table")
	}
}

// TestPostgresAuditKeyed: the table keys its chain as the file does: records written with a key carry its id and
// verify only with it; once the chain is keyed, it is not opened without the key or with another, and a writer
// that opened it before is refused.
func TestPostgresAuditKeyed(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	plain, p := openPGLog(t, url)
	if _, err := plain.Append(sample("before", 1)); err != nil {
		t.Fatal(err)
	}
	key, err := NewKey([]byte("0123456789abcdef-table"))
	if err != nil {
		t.Fatal(err)
	}
	keyed, err := OpenPostgres(ctx, p.Pool(), p.Location(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer keyed.Close()
	for i := range 3 {
		if r, err := keyed.Append(sample("keyed", i)); err != nil || r.KeyID != key.ID() {
			t.Fatalf("keyed append: %+v, %v", r, err)
		}
	}
	if n, err := VerifyPostgres(ctx, p.Pool(), key); err != nil || n != 4 {
		t.Fatalf("verify with the key: %d, %v", n, err)
	}
	var ke *KeyError
	if _, err := VerifyPostgres(ctx, p.Pool(), nil); !errors.As(err, &ke) {
		t.Fatalf("verify without the key: %v, want a *KeyError", err)
	}
	if _, err := plain.Append(sample("after", 9)); !errors.As(err, &ke) {
		t.Fatalf("an unkeyed append to a keyed chain: %v, want a *KeyError", err)
	}
	other, _ := NewKey([]byte("another key of 16+ bytes"))
	if _, err := OpenPostgres(ctx, p.Pool(), p.Location(), other); !errors.As(err, &ke) || ke.Given == "" {
		t.Fatalf("opening with another key: %v, want a *KeyError naming it", err)
	}
	if _, err := OpenPostgres(ctx, p.Pool(), p.Location(), nil); !errors.As(err, &ke) {
		t.Fatalf("opening a keyed chain without the key: %v, want a *KeyError", err)
	}
	if n, err := VerifyPostgres(ctx, p.Pool(), key); err != nil || n != 4 {
		t.Fatalf("the refused appends changed the log: %d, %v", n, err)
	}
}

// TestPostgresReadNewest: the table reads newest first as the file does, page after page, with a filter too.
func TestPostgresReadNewest(t *testing.T) {
	l, _ := openPGLog(t, pgtest.URL(t))
	appendN(t, l, "ada", 25)
	appendN(t, l, "bob", 5)
	wantNewest(t, pagesNewest(t, l, Filter{}, 4), 30, nil)
	wantNewest(t, pagesNewest(t, l, Filter{Principal: "ada"}, 6), 30, func(s uint64) bool { return s <= 25 })
}

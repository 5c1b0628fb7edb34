//go:build unix

package pgserver

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A server that fails to start must be reported as an error, not crash the process: Start's deferred clean-up read
// the named result s, which "return nil, err" had already set to nil (found running strata bench --tmp with a
// relative directory, where pg_ctl start fails: the bench died with a nil pointer dereference).
func TestStartFailureIsAnError(t *testing.T) {
	root := t.TempDir()
	if os.Geteuid() == 0 {
		// As root the server's user must reach the directory (runAsServerUser chmods the parents up to TempDir).
		_ = os.Chmod(root, 0o755)
	}
	for _, tc := range []struct {
		name string
		bins Bins
	}{
		// initdb fails: no watchdog yet, the defer removes the directory.
		{"initdb fails", Bins{Initdb: "/bin/false", PgCtl: "/bin/true", Postgres: "/bin/true"}},
		// initdb "succeeds", the watchdog starts, pg_ctl start fails: the defer stops the watchdog.
		{"pg_ctl start fails", Bins{Initdb: "/bin/true", PgCtl: "/bin/false", Postgres: "/bin/true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				s   *Server
				err error
			)
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("Start panicked instead of returning its error: %v", r)
					}
				}()
				bins := tc.bins
				s, err = Start(context.Background(), root, &Options{Bins: &bins})
			}()
			if err == nil || s != nil {
				t.Fatalf("Start = %v, %v; want nil and an error", s, err)
			}
			left, _ := filepath.Glob(filepath.Join(root, "postgres-*"))
			if len(left) != 0 {
				t.Fatalf("a failed Start left %v behind", left)
			}
		})
	}
}

// strata bench --tmp DIR passes DIR to Start as given. A relative root made the server's directory relative, and
// PostgreSQL, which resolves unix_socket_directories against its data directory, could not create its socket's lock
// file: every PostgreSQL peer of the bench failed ("could not create lock file "btmp/…/.s.PGSQL.N.lock"").
func TestStartRelativeRoot(t *testing.T) {
	bins, err := FindBins()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	base := t.TempDir()
	if os.Geteuid() == 0 {
		_ = os.Chmod(base, 0o755)
	}
	t.Chdir(base)
	if err := os.Mkdir("rel", 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := Start(context.Background(), "rel", &Options{Bins: &bins})
	if err != nil {
		t.Fatalf("Start with a relative root: %v", err)
	}
	defer s.Stop()
	if !filepath.IsAbs(s.Dir) {
		t.Errorf("Server.Dir = %q, want an absolute path", s.Dir)
	}
}

// A root deep enough that the server's socket path passes sun_path's 107 bytes made PostgreSQL refuse to start
// ("Unix-domain socket path … is too long"): strata bench --tmp /a/deep/dir lost every PostgreSQL peer.
func TestStartDeepRoot(t *testing.T) {
	bins, err := FindBins()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	root := t.TempDir()
	for len(root) < 120 {
		root = filepath.Join(root, "a-rather-long-directory-name")
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		for p := root; p != filepath.Dir(t.TempDir()); p = filepath.Dir(p) {
			_ = os.Chmod(p, 0o755)
		}
	}
	s, err := Start(context.Background(), root, &Options{Bins: &bins})
	if err != nil {
		t.Fatalf("Start under a %d-byte root: %v", len(root), err)
	}
	defer s.Stop()
}

//go:build unix

// Package pgserver starts throwaway PostgreSQL servers from the binaries of an installed PostgreSQL (Debian's
// postgresql package puts them in /usr/lib/postgresql/VERSION/bin), for tests and the benchmark suite: a new cluster
// made with initdb in a temporary directory, listening on a free loopback port only, run as the postgres user when
// the caller is root (PostgreSQL refuses to run as root).
//
// A server started here never outlives its process: a small watchdog shell, in a process group of its own, waits
// for its standard input to close (Stop closes it; so does the kernel when the process exits or is killed), then
// stops the server and removes its directory.
package pgserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Bins are the PostgreSQL programs a server needs. Psql is optional (empty when not found).
type Bins struct {
	Initdb, PgCtl, Postgres, Psql string
}

// debianRoot is where Debian's postgresql-NN packages install their programs, one directory per major version.
const debianRoot = "/usr/lib/postgresql"

// FindBins finds initdb, pg_ctl and postgres: on PATH first (beside the real initdb, if that is a link), then in the
// newest /usr/lib/postgresql/VERSION/bin. The error says what is missing and how to install it.
func FindBins() (Bins, error) {
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	if ents, err := os.ReadDir(debianRoot); err == nil {
		var versions []int
		for _, e := range ents {
			if v, err := strconv.Atoi(e.Name()); err == nil {
				versions = append(versions, v)
			}
		}
		sort.Sort(sort.Reverse(sort.IntSlice(versions)))
		for _, v := range versions {
			dirs = append(dirs, filepath.Join(debianRoot, strconv.Itoa(v), "bin"))
		}
	}
	for _, d := range dirs {
		b := Bins{Initdb: filepath.Join(d, "initdb"), PgCtl: filepath.Join(d, "pg_ctl"), Postgres: filepath.Join(d, "postgres")}
		if !executable(b.Initdb) || !executable(b.PgCtl) || !executable(b.Postgres) {
			continue
		}
		if p := filepath.Join(d, "psql"); executable(p) {
			b.Psql = p
		} else if p, err := exec.LookPath("psql"); err == nil {
			b.Psql = p
		}
		return b, nil
	}
	return Bins{}, errors.New("PostgreSQL's initdb, pg_ctl and postgres were not found on PATH or in " + debianRoot +
		"/VERSION/bin: install them (apt-get install -y postgresql)")
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// Options configures Start. The zero value gives a server with PostgreSQL's defaults (fsync on).
type Options struct {
	// User is the superuser initdb creates (default "strata"). Authentication is trust, over loopback only.
	User string
	// Settings are extra server settings, as NAME=VALUE.
	Settings []string
	// Bins are the programs to run (default: FindBins).
	Bins *Bins
}

// Server is a running throwaway PostgreSQL server.
type Server struct {
	Bins Bins
	Dir  string // the server's directory: pgdata, the socket and server.log
	Port int
	User string

	data     string
	settings []string
	cred     *syscall.Credential // the server's OS user, when we are root
	watchdog *exec.Cmd
	stdin    io.WriteCloser
	exited   chan struct{}
}

// Start makes a new cluster in a new directory under root (os.TempDir() if empty) and starts it. When the caller is
// root, the server runs as the postgres user (or nobody), and the directories from root down are made traversable
// for it, so that it can read files placed there (pg_read_file).
func Start(ctx context.Context, root string, opts *Options) (s *Server, err error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.User == "" {
		o.User = "strata"
	}
	var bins Bins
	if o.Bins != nil {
		bins = *o.Bins
	} else if bins, err = FindBins(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(root, "postgres-")
	if err != nil {
		return nil, err
	}
	// The server resolves relative paths (unix_socket_directories) against its data directory, and initdb and
	// pg_ctl run as another user: give them an absolute one.
	if abs, aerr := filepath.Abs(dir); aerr == nil {
		dir = abs
	}
	s = &Server{Bins: bins, Dir: dir, User: o.User, data: filepath.Join(dir, "pgdata"), settings: o.Settings, exited: make(chan struct{})}
	srv := s // "return nil, err" sets s to nil before this defer runs
	defer func() {
		if err != nil {
			if srv.watchdog != nil {
				_ = srv.Stop()
			} else {
				_ = os.RemoveAll(dir)
			}
		}
	}()
	if os.Geteuid() == 0 {
		if err := s.runAsServerUser(dir); err != nil {
			return nil, err
		}
	}
	// initdb need not fsync the new cluster: it is thrown away with its process. The running server keeps fsync on
	// unless Settings say otherwise.
	if err := s.run(ctx, bins.Initdb, "-D", s.data, "-U", o.User, "--auth=trust", "-E", "UTF8", "--no-instructions", "--no-sync"); err != nil {
		return nil, err
	}
	if s.Port, err = freePort(); err != nil {
		return nil, err
	}
	if err := s.startWatchdog(); err != nil {
		return nil, err
	}
	if err := s.pgctl(ctx, "start"); err != nil {
		return nil, err
	}
	return s, nil
}

// runAsServerUser arranges for the server to run as the postgres user (or nobody).
func (s *Server) runAsServerUser(dir string) error {
	u, err := user.Lookup("postgres")
	if err != nil {
		if u, err = user.Lookup("nobody"); err != nil {
			return errors.New("running as root, and there is no postgres or nobody user to run PostgreSQL as (it refuses to run as root)")
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	// The server's user must reach its directory (and files the caller places beside it).
	for p := filepath.Dir(dir); p != "/" && p != "."; p = filepath.Dir(p) {
		if p == filepath.Clean(os.TempDir()) {
			break
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o011 != 0o011 {
			if err := os.Chmod(p, fi.Mode().Perm()|0o011); err != nil {
				return err
			}
		}
	}
	return os.Chown(dir, uid, gid)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startWatchdog starts the shell that stops the server and removes its directory once our end of its standard
// input closes: at Stop, or when this process exits, however it exits.
func (s *Server) startWatchdog() error {
	script := `read _ || true; "$0" -D "$1" -m immediate -w -t 30 stop >/dev/null 2>&1; rm -rf "$2"`
	cmd := exec.Command("/bin/sh", "-c", script, s.Bins.PgCtl, s.data, s.Dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: s.cred}
	w, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the PostgreSQL watchdog: %w", err)
	}
	s.watchdog, s.stdin = cmd, w
	go func() { _ = cmd.Wait(); close(s.exited) }()
	return nil
}

// pgctl runs pg_ctl start or restart with the server's settings and waits until it accepts connections.
func (s *Server) pgctl(ctx context.Context, action string) error {
	settings := append([]string{"listen_addresses=127.0.0.1", "port=" + strconv.Itoa(s.Port), "unix_socket_directories=" + s.socketDir()}, s.settings...)
	var opts []string
	for _, kv := range settings {
		opts = append(opts, "-c "+kv)
	}
	return s.run(ctx, s.Bins.PgCtl, "-D", s.data, "-o", strings.Join(opts, " "), "-l", filepath.Join(s.Dir, "server.log"), "-w", "-t", "60", action)
}

// run runs a program as the server's user.
func (s *Server) run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if log, rerr := os.ReadFile(filepath.Join(s.Dir, "server.log")); rerr == nil && len(log) > 0 {
			msg += "\nserver.log:\n" + tail(string(log), 2000)
		}
		return fmt.Errorf("%s %s: %w: %s", filepath.Base(name), strings.Join(args[len(args)-1:], " "), err, msg)
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// URL returns the address of a database on the server: loopback, no TLS, the superuser, no password.
func (s *Server) URL(database string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", s.User, s.Port, database)
}

// Restart stops the server (fast shutdown: sessions are terminated, as when an administrator restarts it) and
// starts it again on the same port.
func (s *Server) Restart(ctx context.Context) error {
	return s.pgctl(ctx, "restart")
}

// StopServer stops the server (fast shutdown) without removing it; Resume starts it again.
func (s *Server) StopServer(ctx context.Context) error {
	return s.run(ctx, s.Bins.PgCtl, "-D", s.data, "-m", "fast", "-w", "-t", "60", "stop")
}

// Resume starts a server stopped with StopServer.
func (s *Server) Resume(ctx context.Context) error { return s.pgctl(ctx, "start") }

// Stop stops the server and removes its directory.
func (s *Server) Stop() error {
	if s.stdin == nil {
		return nil
	}
	_ = s.stdin.Close()
	s.stdin = nil
	select {
	case <-s.exited:
	case <-time.After(60 * time.Second):
		return fmt.Errorf("PostgreSQL in %s did not stop within 60 s", s.Dir)
	}
	if _, err := os.Stat(s.Dir); err == nil {
		return os.RemoveAll(s.Dir)
	}
	return nil
}

// socketDir is where the server makes its Unix-domain socket: its own directory, unless that path is too long for
// a socket's (sun_path holds 107 bytes, and PostgreSQL then refuses to start: a deep strata bench --tmp did that).
// Everything connects over TCP (URL), so then there is none.
func (s *Server) socketDir() string {
	if len(filepath.Join(s.Dir, ".s.PGSQL.65535")) > 100 {
		return "''"
	}
	return s.Dir
}

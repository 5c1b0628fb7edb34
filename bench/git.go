package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// gitSystem keeps the document in a git repository, one element per line, and commits each revision (with
// core.fsync=all, so that commits are durable, and without automatic gc). Snapshots are tags, branches are branches.
type gitSystem struct {
	bin   string
	dir   string
	elems [][]byte
	revs  []string // revs[k] is revision k's commit
}

const gitFile = "doc.json"

func (s *gitSystem) git(ctx context.Context, stdout io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, s.bin, args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "LC_ALL=C")
	var errb bytes.Buffer
	cmd.Stdout = stdout
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return nil
}

func (s *gitSystem) output(ctx context.Context, args ...string) ([]byte, error) {
	var out bytes.Buffer
	err := s.git(ctx, &out, args...)
	return out.Bytes(), err
}

func (s *gitSystem) open(ctx context.Context, dir string) error {
	s.dir = dir
	if err := s.git(ctx, nil, "init", "-q", "-b", "main"); err != nil {
		return err
	}
	for _, kv := range [][2]string{{"user.name", "bench"}, {"user.email", "bench@example.com"}, {"core.fsync", "all"},
		{"core.fsyncMethod", "fsync"}, {"gc.auto", "0"}, {"commit.gpgSign", "false"}, {"core.autocrlf", "false"}} {
		if err := s.git(ctx, nil, "config", kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

func (s *gitSystem) writeAndCommit(ctx context.Context, msg string, add bool) error {
	if err := os.WriteFile(filepath.Join(s.dir, gitFile), joinElems(s.elems, true), 0o644); err != nil {
		return err
	}
	if add {
		if err := s.git(ctx, nil, "add", gitFile); err != nil {
			return err
		}
		if err := s.git(ctx, nil, "commit", "-q", "-m", msg); err != nil {
			return err
		}
	} else if err := s.git(ctx, nil, "commit", "-q", "-a", "-m", msg); err != nil {
		return err
	}
	return nil
}

func (s *gitSystem) head(ctx context.Context) error {
	out, err := s.output(ctx, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	s.revs = append(s.revs, strings.TrimSpace(string(out)))
	return nil
}

func (s *gitSystem) load(ctx context.Context, d *doc) error {
	s.elems = make([][]byte, len(d.elems))
	copy(s.elems, d.elems)
	if err := s.writeAndCommit(ctx, "load", true); err != nil {
		return err
	}
	s.revs = s.revs[:0]
	return s.head(ctx)
}

// commit writes the file and commits it; reading the new commit's id afterwards is part of the cost (an application
// needs it to name the revision).
func (s *gitSystem) commit(ctx context.Context, k, i, score int) error {
	s.elems[i] = element(i, score)
	if err := s.writeAndCommit(ctx, fmt.Sprintf("revision %d", k), false); err != nil {
		return err
	}
	return s.head(ctx)
}

func (s *gitSystem) diskBytes(context.Context) (int64, error) {
	return dirSize(filepath.Join(s.dir, ".git"))
}

func (s *gitSystem) snapshot(ctx context.Context, name string, k int) error {
	return s.git(ctx, nil, "tag", name, s.revs[k])
}

func (s *gitSystem) branch(ctx context.Context, name string, k int) error {
	return s.git(ctx, nil, "branch", name, s.revs[k])
}

func (s *gitSystem) show(ctx context.Context, k int) ([]byte, error) {
	return s.output(ctx, "show", s.revs[k]+":"+gitFile)
}

func (s *gitSystem) readElement(ctx context.Context, k, i int) ([]byte, error) {
	data, err := s.show(ctx, k)
	if err != nil {
		return nil, err
	}
	return elementOf(data, i)
}

// diff runs git diff and counts the changed lines (one element per line).
func (s *gitSystem) diff(ctx context.Context, a, b int) (int, error) {
	out, err := s.output(ctx, "diff", "--no-color", "-U0", s.revs[a], s.revs[b], "--", gitFile)
	if err != nil {
		return 0, err
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<30)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) > 1 && line[0] == '+' && line[1] == '{' {
			n++
		}
	}
	return n, sc.Err()
}

func (s *gitSystem) export(ctx context.Context, k int, w io.Writer) error {
	return s.git(ctx, w, "show", s.revs[k]+":"+gitFile)
}

func (s *gitSystem) jq(ctx context.Context, k int) (int, error) {
	data, err := s.show(ctx, k)
	if err != nil {
		return 0, err
	}
	return gojqCount(ctx, data)
}

func (s *gitSystem) close() error { return nil }

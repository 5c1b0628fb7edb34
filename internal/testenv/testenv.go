// Package testenv is how a test asks its environment for a tool or service it needs (strace, node, sqlite3,
// PostgreSQL, …). When one is missing, the test skips, saying what is missing and how to provide it; under CI
// (the environment variable CI set, as .ci/run and CI systems set it) it fails instead, with the same message, so
// that a CI run that lacks something it is meant to test is red rather than quietly green.
//
// Skips that are not about the environment (-short, an opt-in long test) do not go through here.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// CI reports whether the tests run under CI: the environment variable CI is set (to anything but "").
func CI() bool { return os.Getenv("CI") != "" }

// Missing ends the test because something it needs is not there: it fails under CI and skips otherwise. The
// message says what is missing and how to provide it.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if CI() {
		t.Fatalf("%s (CI is set, so this fails instead of skipping)", msg)
	}
	t.Skip(msg)
}

// Tool returns the path of the program name found on PATH, or ends the test with Missing. install says how to get
// it (e.g. "apt-get install -y strace").
func Tool(t testing.TB, name, install string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, "%s is not installed or not on PATH: %s", name, install)
	}
	return p
}

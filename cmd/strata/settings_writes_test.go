package main

import (
	"strings"
	"testing"
)

// TestWritesOffRefusesWritingPolicy: with writes off (by the flag, the file, or by default) a policy that lets a
// principal write stops startup (found in review: strata mcp --writes off offered put, create_database and
// create_branch, over databases it opens read only, and said "writes off").
func TestWritesOffRefusesWritingPolicy(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	for name, c := range map[string]struct{ config, flag string }{
		"by the flag":    {`{"default":{"policy":{"write":"allow","admin":"allow"}}}`, "off"},
		"by the file":    {`{"writes":"off","principals":{"bob":{"policy":{"protected":"ask"}}}}`, ""},
		"by the default": {`{"default":{"policy":{"write":"ask"}}}`, ""},
	} {
		cfg := writeFile(t, "strata.json", c.config, 0o600)
		args := []string{"mcp", "--config", cfg}
		if c.flag != "" {
			args = append(args, "--writes", c.flag)
		}
		_, errOut, code := s.run("", args...)
		if code != exitUsage || !strings.Contains(errOut, "but writes are off") {
			t.Errorf("%s: exit %d: %s", name, code, errOut)
		}
	}
	// A policy that only denies more is fine.
	cfg := writeFile(t, "strata.json", `{"default":{"policy":{"write":"deny"}}}`, 0o600)
	if names := stdioTools(t, s, "--config", cfg); names["put"] || !names["read"] {
		t.Errorf("tools with writes off and a denying policy: %v", names)
	}
}

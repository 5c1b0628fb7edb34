package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestConfigPrincipalTypo (docs/security.md §1 "A typo in a flag or configuration file stops startup"; README
// "strictly read: a typo stops startup"): with --token-file the principals are the token file's, so an entry under
// principals that no token names can only be a misspelling, and the principal it was meant for silently gets the
// default (here: writable branches instead of read-only). strata serve must refuse to start, naming the entry.
func TestConfigPrincipalTypo(t *testing.T) {
	s := newSession(t, false, nil)
	s.setup()
	cfg := writeFile(t, "strata.json", `{"writes":"branches","principals":{"alcie":{"policy":{"write":"deny","protected":"deny","admin":"deny"}}}}`, 0o600)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := newRootCommand(s.e)
	root.SetArgs([]string{"--data", s.data, "serve", "--listen", "127.0.0.1:0", "--config", cfg, "--token-file", tokenFile(t, "alice "+aliceToken)})
	var stderr lockedBuffer
	root.SetIn(strings.NewReader(""))
	root.SetOut(&stderr)
	root.SetErr(&stderr)
	done := make(chan error, 1)
	go func() { _, err := root.ExecuteContextC(ctx); done <- err }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		select {
		case err := <-done:
			if err == nil || !strings.Contains(stderr.String()+err.Error(), "alcie") {
				t.Fatalf("strata serve ended with %v, not naming the unknown principal: %s", err, stderr.String())
			}
			return
		case <-time.After(20 * time.Millisecond):
		}
		if strings.Contains(stderr.String(), "/mcp") || time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("strata serve started with a principal no token names (alice gets the default policy, writable):\n%s", stderr.String())
		}
	}
}

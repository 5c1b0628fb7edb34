package gate

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEConfig: the configuration example in the README parses and means what the README says.
func TestREADMEConfig(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- begin config example -->")
	block, _, ok2 := strings.Cut(rest, "<!-- end config example -->")
	if !ok || !ok2 {
		t.Fatal("README: no config example between its markers")
	}
	block = strings.TrimSpace(block)
	block = strings.TrimSuffix(strings.TrimPrefix(block, "```json"), "```")
	s, err := ParseSettings(strings.NewReader(block))
	if err != nil {
		t.Fatalf("README config: %v", err)
	}
	if got := s.For("release-agent"); got.Policy != (Policy{Read: Allow, Write: Allow, Protected: Ask, Admin: Allow}) || !got.Scope.Databases.Permits("shop") || got.Scope.Databases.Permits("other") {
		t.Errorf("release-agent: %+v", got)
	}
	if got := s.For("reviewer-bot"); got.Policy.Writes() {
		t.Errorf("reviewer-bot may write: %+v", got.Policy)
	}
	if got := s.For("someone"); got.Policy.Protected != Deny || got.Scope.Resources.Permits("secrets") || !got.Scope.Resources.Permits("orders") {
		t.Errorf("default: %+v", got)
	}
	if r := s.RateLimitFor("release-agent"); r.PerSecond != 5 || r.Burst != 20 {
		t.Errorf("rate limit: %+v", r)
	}
}

// TestSettingsRefused: every fault in a configuration stops startup, naming it.
func TestSettingsRefused(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{`{"writes":"yes"}`, `unknown write mode "yes"`},
		{`{"wirtes":"on"}`, `unknown field "wirtes"`},
		{`{"default":{"policy":{"write":"maybe"}}}`, `unknown decision "maybe"`},
		{`{"default":{"policy":{"admin":"ask"}}}`, `"ask" is not possible for admin tools`},
		{`{"principals":{"x":{"policy":{"read":"deny"}}}}`, `reads are always allowed; hide databases and resources with scopes`},
		{`{"principals":{"bad name":{}}}`, `use letters, digits`},
		{`{"plan_ttl":"5 minutes"}`, `duration "5 minutes"`},
		{`{"session_idle":"1ms"}`, `session_idle 1ms`},
		{`{"max_sessions":-1}`, `max_sessions`},
		{`{"plan_ttl":"1ms"}`, `between 1s and 24h`},
		{`{"rate_limit":{"calls_per_second":0,"burst":1}}`, `calls_per_second must be above 0`},
		{`{"default":{"scopes":{"resources":{"deny":[""]}}}}`, `empty pattern`},
		{`{"writes":"on"} {}`, `data after the configuration object`},
		{"{\n\"writes\": on}", `line 2`},
	} {
		if _, err := ParseSettings(strings.NewReader(tc.config)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.config, err, tc.want)
		}
	}
	s := &Settings{Writes: WritesOn}
	if err := s.WithWritesFlag(WritesOff, true); err == nil || !strings.Contains(err.Error(), "contradicts") {
		t.Errorf("contradicting --writes: %v", err)
	}
}

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"secrets", "secrets", true}, {"secrets", "Secrets", false}, {"secret*", "secrets-2", true},
		{"*-prod", "shop-prod", true}, {"*-prod", "shop-prod2", false}, {"a*b*c", "aXbYc", true},
		{"a*b*c", "acb", false}, {"*", "", true}, {"x", "x\x00", false},
	} {
		if got := globMatch(tc.pattern, tc.name); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v", tc.pattern, tc.name, got)
		}
	}
}

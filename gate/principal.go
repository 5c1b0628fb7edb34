package gate

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/strata-db/strata/snapshots"
)

// The write modes (docs/design.md §4): presets of the policy.
const (
	// WritesOff lets nothing change: a front end offers no write at all. The default.
	WritesOff = "off"
	// WritesBranches lets a principal create branches and write on any branch that is not protected; a change to a
	// protected branch needs a confirmed plan.
	WritesBranches = "branches"
	// WritesOn lets a principal write everywhere, except that a change to a protected branch that removes or
	// overwrites data needs a confirmed plan.
	WritesOn = "on"
)

// ValidMode refuses an unknown write mode, so that a typo stops startup instead of leaving a server writable.
func ValidMode(mode string) error {
	switch mode {
	case "", WritesOff, WritesBranches, WritesOn:
		return nil
	}
	return fmt.Errorf("unknown write mode %q: use off (the default: no write tools), branches (write on unprotected branches) or on (write everywhere; removing or overwriting data on a protected branch still needs a confirmed plan)", mode)
}

// ModeText says in words what a mode allows.
func ModeText(mode string) string {
	switch mode {
	case WritesBranches:
		return "writes on unprotected branches; protected branches change only through a confirmed plan"
	case WritesOn:
		return "writes everywhere; removing or overwriting data on a protected branch needs a confirmed plan"
	}
	return "read-only: no write tool is available"
}

// Principal is who calls through the gate and what the operator lets them do. The operator's configuration is the
// ceiling: nothing a request carries widens it.
type Principal struct {
	// Name is recorded as the author of every revision the principal makes, as the creator of its branches,
	// snapshots and plans, and in the audit log. Empty means "agent".
	Name string
	// Mode is the write mode the policy's empty classes come from (PresetPolicy). Empty means off.
	Mode string
	// Policy decides, per class of call, whether it runs (allow), becomes a plan a person confirms (ask) or is
	// refused (deny).
	Policy Policy
	// Scope narrows the databases and resources the principal sees; what it hides is indistinguishable from what
	// does not exist. The zero Scope sees everything.
	Scope Scope
	// Protected lists the protected branches. nil means ["main"]; an empty non-nil slice protects none.
	Protected []string
	// PlanTTL is how long a plan of this principal waits for its confirmation. 0 means DefaultPlanTTL.
	PlanTTL time.Duration
	// Review lets the principal approve and reject other principals' plans, as a person out of band.
	Review bool
	// MergeKeys names the key member of arrays at given paths for the merges of this principal's promotes
	// (Settings.MergeKeys): a change's own keys (Change.Keys) take precedence over these.
	MergeKeys map[string]string
	// Operator is the person at the terminal (the command line): every class is allowed, nothing is hidden, and
	// protected branches do not bind them (docs/design.md §5). Their calls are audited like everyone's.
	Operator bool
}

// Operator is the principal of the command line: the operator named name (the OS user).
func Operator(name string) Principal {
	return Principal{Name: name, Mode: WritesOn, Policy: Policy{Read: Allow, Write: Allow, Protected: Allow, Admin: Allow},
		Protected: []string{}, Review: true, Operator: true}
}

// Validate checks the principal without opening anything, so that a command line can refuse bad flags first.
func (p Principal) Validate() error {
	if err := ValidMode(p.Mode); err != nil {
		return err
	}
	if p.Name != "" && !p.Operator { // the operator is whoever the OS says they are
		if err := ValidPrincipal(p.Name); err != nil {
			return err
		}
	}
	if err := p.Policy.validate(); err != nil {
		return err
	}
	if p.PlanTTL < 0 {
		return fmt.Errorf("plan TTL %s is negative", p.PlanTTL)
	}
	for _, b := range p.Protected {
		if err := snapshots.ValidRefName("branch", b); err != nil {
			return fmt.Errorf("protected branch: %w", err)
		}
	}
	if err := p.Scope.Databases.validate("databases", snapshots.ValidDatabaseName); err != nil {
		return err
	}
	if err := ValidMergeKeys(p.MergeKeys); err != nil {
		return fmt.Errorf("merge keys: %w", err)
	}
	return p.Scope.Resources.validate("resources", snapshots.ValidResourceName)
}

// WithDefaults fills in the defaults of a valid principal.
func (p Principal) WithDefaults() Principal {
	if p.Mode == "" {
		p.Mode = WritesOff
	}
	p.Policy = p.Policy.over(PresetPolicy(p.Mode))
	if p.PlanTTL == 0 {
		p.PlanTTL = DefaultPlanTTL
	}
	if p.Protected == nil {
		p.Protected = []string{snapshots.Main}
	} else {
		p.Protected = slices.Clone(p.Protected)
	}
	slices.Sort(p.Protected)
	p.Protected = slices.Compact(p.Protected)
	if p.Name == "" {
		p.Name = "agent"
	}
	p.MergeKeys = maps.Clone(p.MergeKeys)
	return p
}

// Protects reports whether a branch is protected for this principal ("" is main).
func (p Principal) Protects(branch string) bool {
	if branch == "" {
		branch = snapshots.Main
	}
	return slices.Contains(p.Protected, branch)
}

// Writes reports whether the policy lets anything change: front ends offer writes only then.
func (p Principal) Writes() bool { return p.Policy.Writes() }

// Plans reports whether a call of this principal can become a plan (some class is ask).
func (p Principal) Plans() bool {
	return p.Policy.Write == Ask || p.Policy.Protected == Ask || p.Policy.Write == Approve || p.Policy.Protected == Approve
}

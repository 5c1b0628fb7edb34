package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/strata-db/strata/snapshots"
)

// Tool classes (docs/design.md §4). Every tool has one; a call's class can depend on its arguments: a write to a
// protected branch is `protected`, the same write elsewhere `write`.
const (
	ClassRead      = "read"
	ClassWrite     = "write"
	ClassProtected = "protected"
	ClassAdmin     = "admin"
)

// Decisions a policy gives a class.
const (
	Allow = "allow"
	// Ask makes the call a plan that a person confirms: the client's user when the client can ask them
	// (elicitation), or a person out of band (strata approve, the review page).
	Ask = "ask"
	// Approve makes the call a plan that only a person approves out of band: a client's answer does not count. For
	// clients that declare they can ask their user but may answer for themselves (an agent's own client).
	Approve = "approve"
	Deny    = "deny"
)

// Policy is the decision for each class. The write modes are presets of it (PresetPolicy).
type Policy struct {
	Read      string `json:"read,omitempty"`
	Write     string `json:"write,omitempty"`
	Protected string `json:"protected,omitempty"`
	Admin     string `json:"admin,omitempty"`
}

// PresetPolicy is the policy a write mode stands for:
//
//	off       read allow, write deny,  protected deny, admin deny
//	branches  read allow, write allow, protected ask,  admin allow
//	on        read allow, write allow, protected ask,  admin allow  (a change to a protected branch that only adds
//	          counts as write)
func PresetPolicy(mode string) Policy {
	switch mode {
	case WritesBranches, WritesOn:
		return Policy{Read: Allow, Write: Allow, Protected: Ask, Admin: Allow}
	}
	return Policy{Read: Allow, Write: Deny, Protected: Deny, Admin: Deny}
}

// Decision is the policy's decision for a class.
func (p Policy) Decision(class string) string {
	switch class {
	case ClassRead:
		return p.Read
	case ClassWrite:
		return p.Write
	case ClassProtected:
		return p.Protected
	case ClassAdmin:
		return p.Admin
	}
	return Deny
}

// Writes reports whether the policy lets anything change: only then are write tools registered.
func (p Policy) Writes() bool {
	return p.Write != Deny || p.Protected != Deny || p.Admin != Deny
}

// over fills the classes p leaves empty from base.
func (p Policy) over(base Policy) Policy {
	for _, f := range []struct {
		dst *string
		src string
	}{{&p.Read, base.Read}, {&p.Write, base.Write}, {&p.Protected, base.Protected}, {&p.Admin, base.Admin}} {
		if *f.dst == "" {
			*f.dst = f.src
		}
	}
	return p
}

func (p Policy) validate() error {
	for _, f := range []struct{ class, d string }{{ClassRead, p.Read}, {ClassWrite, p.Write}, {ClassProtected, p.Protected}, {ClassAdmin, p.Admin}} {
		switch f.d {
		case Deny:
			if f.class == ClassRead {
				return fmt.Errorf("policy read: \"deny\" is not possible: reads are always allowed; hide databases and resources with scopes instead")
			}
		case "", Allow:
		case Ask, Approve:
			if f.class == ClassAdmin || f.class == ClassRead {
				return fmt.Errorf("policy %s: %q is not possible for %s tools: use allow or deny", f.class, f.d, f.class)
			}
		default:
			return fmt.Errorf("policy %s: unknown decision %q: use allow, ask (a plan a person confirms), approve (a plan only a person approves out of band) or deny", f.class, f.d)
		}
	}
	return nil
}

// Names is an allow list and a deny list of names. A name is permitted when the allow list is empty or one of its
// patterns matches, and no pattern of the deny list matches. A pattern is a name, compared byte for byte, in which
// `*` stands for any run of characters (including none).
type Names struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// Permits reports whether the lists let a name through.
func (n Names) Permits(name string) bool {
	if len(n.Allow) > 0 && !slices.ContainsFunc(n.Allow, func(p string) bool { return globMatch(p, name) }) {
		return false
	}
	return !slices.ContainsFunc(n.Deny, func(p string) bool { return globMatch(p, name) })
}

func (n Names) empty() bool { return len(n.Allow) == 0 && len(n.Deny) == 0 }

// validate checks the patterns of a list of names of a kind: valid (snapshots.ValidDatabaseName or
// ValidResourceName) says whether a name of that kind can be spelt so. A pattern no name can match is refused: a
// deny of "Payroll" would deny nothing, as database names are lower-case (found in review).
func (n Names) validate(what string, valid func(string) error) error {
	if n.Allow != nil && len(n.Allow) == 0 && !strings.HasPrefix(what, "database_classes") {
		// Left out, allow lets every name through; written empty, it reads as "none" (found in review).
		return fmt.Errorf("scopes %s: an empty allow list would let every name through, as leaving it out does; leave it out, or to allow none, deny \"*\"", what)
	}
	for _, p := range append(slices.Clone(n.Allow), n.Deny...) {
		if p == "" {
			return fmt.Errorf("scopes %s: an empty pattern matches nothing; remove it", what)
		}
		// The shortest name the pattern matches, but a name that begins where a '*' stands begins with a letter.
		shortest := strings.ReplaceAll(p, "*", "")
		if strings.HasPrefix(p, "*") {
			shortest = "a" + shortest
		}
		if err := valid(shortest); err != nil {
			return fmt.Errorf("scopes %s: pattern %q can match no name: %v", what, p, strings.TrimPrefix(err.Error(), snapshots.ErrInvalidArgument.Error()+": "))
		}
	}
	return nil
}

// globMatch matches a name against a pattern where `*` matches any run of characters.
func globMatch(pattern, name string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(name, p)
		if i < 0 {
			return false
		}
		name = name[i+len(p):]
	}
	return strings.HasSuffix(name, parts[len(parts)-1])
}

// Scope is what a principal may see and touch: databases, and resources within them. What it does not permit is
// indistinguishable from what does not exist.
type Scope struct {
	Databases Names `json:"databases"`
	Resources Names `json:"resources"`
}

// Unlimited reports whether the scope lets everything through.
func (s Scope) Unlimited() bool { return s.Databases.empty() && s.Resources.empty() }

// RateLimit bounds the calls of one principal: a token bucket of Burst calls refilled at PerSecond.
type RateLimit struct {
	PerSecond float64 `json:"calls_per_second"`
	Burst     int     `json:"burst"`
}

// DefaultRateLimit is the limit of a principal the configuration gives none.
var DefaultRateLimit = RateLimit{PerSecond: 50, Burst: 100}

// PrincipalSettings is the configuration of one principal (or the default for all).
type PrincipalSettings struct {
	// Policy overrides the classes it names; the others come from the write mode's preset.
	Policy Policy `json:"policy"`
	// Scopes narrows what the principal sees. Empty: everything.
	Scopes Scope `json:"scopes"`
	// RateLimit overrides the default rate limit.
	RateLimit *RateLimit `json:"rate_limit,omitempty"`
	// Review lets the principal approve and reject other principals' plans (out of band, as a person).
	Review bool `json:"review,omitempty"`
}

// Duration is a time.Duration written as "5m" in the configuration file.
type Duration time.Duration

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"5m\" or \"90s\", not %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %v (use a string such as \"5m\" or \"90s\")", s, err)
	}
	*d = Duration(v)
	return nil
}

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Settings is the operator's configuration (`--config FILE`): the ceiling of what any caller may do. Nothing a
// request carries can widen it.
type Settings struct {
	// Writes is the write mode (a preset policy): off, branches or on. A --writes flag that says otherwise is a
	// contradiction and stops startup.
	Writes string `json:"writes,omitempty"`
	// Protected lists the protected branches (default ["main"]).
	Protected []string `json:"protected_branches,omitempty"`
	// PlanTTL is how long a plan waits for confirmation (default 5m).
	PlanTTL Duration `json:"plan_ttl,omitempty"`
	// MaxOutputChars caps one tool result (default 50,000).
	MaxOutputChars int `json:"max_output_chars,omitempty"`
	// MaxConcurrentQueries caps the jq programs running at once, across all sessions (default 4).
	MaxConcurrentQueries int `json:"max_concurrent_queries,omitempty"`
	// RateLimit is every principal's rate limit unless its own settings give one.
	RateLimit *RateLimit `json:"rate_limit,omitempty"`
	// MaxSessions and MaxSessionsPerPrincipal cap the HTTP sessions open at once, in all and of one principal
	// (default 1024 and 64); SessionIdle closes a session after that long without a request (default 10m).
	MaxSessions             int      `json:"max_sessions,omitempty"`
	MaxSessionsPerPrincipal int      `json:"max_sessions_per_principal,omitempty"`
	SessionIdle             Duration `json:"session_idle,omitempty"`
	// MergeKeys names, for arrays at given paths, the member that identifies their elements when a promote merges
	// them: a JSON Pointer from the database root, beginning with the resource and with indexes as a merge's
	// conflicts count them ("/catalog/items", "/orders/lines") → the member ("sku"; "" aligns that array by
	// position). Arrays not named here are aligned by "id" where every element read carries a unique one. Every
	// principal's promote uses it, and so does strata promote --config FILE.
	MergeKeys map[string]string `json:"merge_keys,omitempty"`
	// DatabaseClasses groups databases for the metrics of strata serve --metrics-listen: each class's name and the
	// patterns of the databases in it (a name, `*` standing for any run of characters, as in scopes). A database in
	// no class counts as "other". Metrics never carry a database's own name: there could be any number of them.
	DatabaseClasses map[string][]string `json:"database_classes,omitempty"`
	// Default applies to every principal the Principals map does not name (over stdio, the local user).
	Default PrincipalSettings `json:"default"`
	// Principals configures principals by name (a bearer token names its principal; over stdio, the OS user).
	Principals map[string]PrincipalSettings `json:"principals,omitempty"`
}

// Defaults of the settings.
const (
	DefaultPlanTTL              = 5 * time.Minute
	DefaultMaxConcurrentQueries = 4
	// DefaultMaxOutputChars caps the JSON of one tool result.
	DefaultMaxOutputChars = 50_000
	// MinOutputChars is the smallest cap accepted: below it not even an error fits.
	MinOutputChars = 2_000
)

// LoadSettings reads a configuration file. Unknown fields, bad values and trailing data are errors that name the
// fault: a typo must stop startup, not leave the server more open than meant.
func LoadSettings(path string) (*Settings, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	s, err := ParseSettings(f)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return s, nil
}

// ParseSettings reads a configuration (JSON) and validates it.
func ParseSettings(r io.Reader) (*Settings, error) {
	b, err := io.ReadAll(io.LimitReader(r, 1<<20+1))
	if err != nil {
		return nil, err
	}
	if len(b) > 1<<20 {
		return nil, errors.New("larger than 1 MiB")
	}
	if k := duplicateKeyIn(b, ""); k != "" {
		return nil, fmt.Errorf("%s is given twice: give each setting once", k)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Settings
	if err := dec.Decode(&s); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := lineCol(b, se.Offset)
			return nil, fmt.Errorf("line %d, column %d: %v", line, col, err)
		}
		return nil, fmt.Errorf("%v (the file is JSON; its fields are in the README, under Guardrails)", err)
	}
	if dec.More() {
		return nil, errors.New("data after the configuration object")
	}
	return &s, s.Validate()
}

// duplicateKeyIn finds a member that an object of the JSON text names twice, at any depth ("" for none; bad JSON
// is left for the decoder to report). Settings fields are matched case-insensitively by encoding/json, so
// "writes" and "Writes" count as the same member outside the maps of names.
func duplicateKeyIn(b []byte, at string) string {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return ""
	}
	switch tok {
	case json.Delim('{'):
		fold := at != "principals" && at != "merge_keys" && at != "database_classes"
		seen := map[string]bool{}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return ""
			}
			k, _ := t.(string)
			key := k
			if fold {
				key = strings.ToLower(k)
			}
			if seen[key] {
				return fmt.Sprintf("%q", k)
			}
			seen[key] = true
			var v json.RawMessage
			if dec.Decode(&v) != nil {
				return ""
			}
			if d := duplicateKeyIn(v, strings.ToLower(k)); d != "" {
				return d
			}
		}
	case json.Delim('['):
		for dec.More() {
			var v json.RawMessage
			if dec.Decode(&v) != nil {
				return ""
			}
			if d := duplicateKeyIn(v, ""); d != "" {
				return d
			}
		}
	}
	return ""
}

func lineCol(b []byte, off int64) (int, int) {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	pre := b[:off]
	line := bytes.Count(pre, []byte("\n")) + 1
	return line, int(off) - bytes.LastIndexByte(pre, '\n')
}

// Validate checks every field.
func (s *Settings) Validate() error {
	if err := (Principal{Name: "default", Mode: s.Writes, Protected: s.Protected}).Validate(); err != nil {
		return err
	}
	if s.MaxOutputChars != 0 && s.MaxOutputChars < MinOutputChars {
		return fmt.Errorf("max_output_chars %d is too small: use at least %d (or 0 for the default %d)", s.MaxOutputChars, MinOutputChars, DefaultMaxOutputChars)
	}
	if s.PlanTTL < 0 || (s.PlanTTL != 0 && time.Duration(s.PlanTTL) < time.Second) || time.Duration(s.PlanTTL) > 24*time.Hour {
		return fmt.Errorf("plan_ttl %s: use between 1s and 24h", time.Duration(s.PlanTTL))
	}
	if s.MaxSessions < 0 || s.MaxSessionsPerPrincipal < 0 {
		return fmt.Errorf("max_sessions and max_sessions_per_principal must be positive (0 for the defaults)")
	}
	if s.SessionIdle < 0 || (s.SessionIdle != 0 && time.Duration(s.SessionIdle) < time.Second) || time.Duration(s.SessionIdle) > 24*time.Hour {
		return fmt.Errorf("session_idle %s: use between 1s and 24h", time.Duration(s.SessionIdle))
	}
	if err := ValidMergeKeys(s.MergeKeys); err != nil {
		return fmt.Errorf("merge_keys: %w", err)
	}
	if s.MaxConcurrentQueries < 0 || s.MaxConcurrentQueries > 256 {
		return fmt.Errorf("max_concurrent_queries %d: use between 1 and 256 (0 for the default %d)", s.MaxConcurrentQueries, DefaultMaxConcurrentQueries)
	}
	check := func(who string, p PrincipalSettings) error {
		if err := p.Policy.validate(); err != nil {
			return fmt.Errorf("%s: %w", who, err)
		}
		if err := p.Scopes.Databases.validate("databases", snapshots.ValidDatabaseName); err != nil {
			return fmt.Errorf("%s: %w", who, err)
		}
		if err := p.Scopes.Resources.validate("resources", snapshots.ValidResourceName); err != nil {
			return fmt.Errorf("%s: %w", who, err)
		}
		if r := p.RateLimit; r != nil {
			if err := r.validate(); err != nil {
				return fmt.Errorf("%s: %w", who, err)
			}
		}
		return nil
	}
	if s.RateLimit != nil {
		if err := s.RateLimit.validate(); err != nil {
			return err
		}
	}
	if err := validClasses(s.DatabaseClasses); err != nil {
		return err
	}
	if err := check("default", s.Default); err != nil {
		return err
	}
	names := make([]string, 0, len(s.Principals))
	for n := range s.Principals {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := ValidPrincipal(n); err != nil {
			return err
		}
		if err := check("principal "+n, s.Principals[n]); err != nil {
			return err
		}
	}
	return nil
}

func (r RateLimit) validate() error {
	if r.PerSecond <= 0 || r.Burst < 1 {
		return fmt.Errorf("rate_limit: calls_per_second must be above 0 and burst at least 1 (got %g and %d)", r.PerSecond, r.Burst)
	}
	return nil
}

// ValidPrincipal checks a principal's name: 1 to 64 letters, digits and . _ - @.
func ValidPrincipal(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("principal %q: a name has 1 to 64 characters", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-@", r)) {
			return fmt.Errorf("principal %q: use letters, digits and . _ - @ only", name)
		}
	}
	return nil
}

// WithWritesFlag combines the settings with a --writes flag. set says whether the flag was given: a flag that
// contradicts the file's mode stops startup.
func (s *Settings) WithWritesFlag(flag string, set bool) error {
	switch {
	case !set:
	case s.Writes == "":
		s.Writes = flag
	case s.Writes != flag:
		return fmt.Errorf("--writes %s contradicts the configuration file's \"writes\": %q; give one of them", flag, s.Writes)
	}
	if err := ValidMode(s.Writes); err != nil {
		return err
	}
	if s.Writes == "" || s.Writes == WritesOff {
		// Off opens the databases read only and registers no write tool: a policy that lets a principal write
		// would promise what the server will not do (found in review: the tools were offered, the startup line
		// said "writes off").
		check := func(who string, p PrincipalSettings) error {
			if pol := p.Policy.over(PresetPolicy(WritesOff)); pol.Writes() {
				return fmt.Errorf("%s lets it change data (write %s, protected %s, admin %s), but writes are off: set \"writes\" (or --writes) to branches or on, and deny writes to those that must not, or drop that policy",
					who, pol.Write, pol.Protected, pol.Admin)
			}
			return nil
		}
		if err := check("the default policy", s.Default); err != nil {
			return err
		}
		for _, name := range slices.Sorted(maps.Keys(s.Principals)) {
			if err := check("the policy of principal "+name, s.Principals[name]); err != nil {
				return err
			}
		}
	}
	return nil
}

// For is the principal of that name as the settings configure it (over stdio, the OS user; over HTTP, a token's
// principal): its entry under principals, else the default.
func (s *Settings) For(principal string) Principal {
	p, ok := s.Principals[principal]
	if !ok {
		p = s.Default
	}
	return Principal{
		Name:      principal,
		Mode:      s.Writes,
		Protected: s.Protected,
		Policy:    p.Policy.over(PresetPolicy(s.Writes)),
		Scope:     p.Scopes,
		PlanTTL:   time.Duration(s.PlanTTL),
		Review:    p.Review,
		MergeKeys: s.MergeKeys,
	}
}

// RateLimitFor is the rate limit of a principal.
func (s *Settings) RateLimitFor(principal string) RateLimit {
	if p, ok := s.Principals[principal]; ok {
		if p.RateLimit != nil {
			return *p.RateLimit
		}
	} else if s.Default.RateLimit != nil {
		return *s.Default.RateLimit
	}
	if s.RateLimit != nil {
		return *s.RateLimit
	}
	return DefaultRateLimit
}

// OtherClass is the class of a database that no class of DatabaseClasses names.
const OtherClass = "other"

// maxClasses bounds DatabaseClasses: each class is a label value of every per-database metric.
const maxClasses = 32

func validClasses(cs map[string][]string) error {
	if len(cs) > maxClasses {
		return fmt.Errorf("database_classes: %d classes; use at most %d (each is a label value of the metrics)", len(cs), maxClasses)
	}
	for name, patterns := range cs {
		if name == "" || len(name) > 32 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") != "" {
			return fmt.Errorf("database_classes: class %q: a class name has 1 to 32 lower-case letters, digits, _ and -", name)
		}
		if len(patterns) == 0 {
			return fmt.Errorf("database_classes: class %q has no database pattern; list its databases (`*` for any run of characters)", name)
		}
		if err := (Names{Allow: patterns}).validate("database_classes "+name, snapshots.ValidDatabaseName); err != nil {
			return err
		}
	}
	return nil
}

// DatabaseClass returns a function that tells the class of a database: the first class, in name order, with a
// pattern that matches it, else OtherClass.
func (s *Settings) DatabaseClass() func(database string) string {
	names := make([]string, 0, len(s.DatabaseClasses))
	for n := range s.DatabaseClasses {
		names = append(names, n)
	}
	slices.Sort(names)
	classes := make([]Names, len(names))
	for i, n := range names {
		classes[i] = Names{Allow: s.DatabaseClasses[n]}
	}
	return func(database string) string {
		for i, c := range classes {
			if c.Permits(database) {
				return names[i]
			}
		}
		return OtherClass
	}
}

package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/strata-db/strata/internal/suggest"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
)

// args are a call's decoded arguments. Payloads (value, operations) keep their exact raw text; everything else is
// decoded strictly by its declared kind.
type args struct {
	present map[string]bool
	strs    map[string]string
	ints    map[string]uint64
	bools   map[string]bool
	times   map[string]time.Time
	raws    map[string]json.RawMessage
}

func (a *args) has(name string) bool     { return a.present[name] }
func (a *args) str(name string) string   { return a.strs[name] }
func (a *args) uint(name string) uint64  { return a.ints[name] }
func (a *args) boolean(name string) bool { return a.bools[name] }

// timeRef is a time argument for a ref, nil when absent (any instant, year 1 included, when present).
func (a *args) timeRef(name string) *time.Time {
	if t, ok := a.times[name]; ok {
		return &t
	}
	return nil
}
func (a *args) raw(name string) json.RawMessage { return a.raws[name] }

var plainInteger = regexp.MustCompile(`^(0|[1-9][0-9]*)$`)

// decodeArgs decodes the raw arguments of a call against the tool's parameters. It reads the bytes of the request
// itself, never a map[string]any round trip: it refuses invalid UTF-8 and duplicate names, and keeps payloads as the
// exact text the client sent, so that a 20-digit integer survives. Every fault is collected, so that one refusal
// lists them all; nothing runs when there is one.
func decodeArgs(t *toolSpec, data json.RawMessage) (*args, error) {
	a := &args{present: map[string]bool{}, strs: map[string]string{}, ints: map[string]uint64{},
		bools: map[string]bool{}, times: map[string]time.Time{}, raws: map[string]json.RawMessage{}}
	if !utf8.Valid(data) {
		return nil, newError(codeInvalidArgument, "the arguments are not valid UTF-8; nothing was done")
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || string(data) == "null" {
		data = []byte("{}")
	}
	var faults, near []string
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, newError(codeInvalidArgument, "the arguments must be a JSON object, such as {\"database\": \"shop\"}; nothing was done")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, newError(codeInvalidArgument, "the arguments are not valid JSON: %v; nothing was done", err)
		}
		name, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, newError(codeInvalidArgument, "the arguments are not valid JSON: %v; nothing was done", err)
		}
		if a.present[name] {
			faults = append(faults, fmt.Sprintf("argument %q is given twice", clip(name)))
			continue
		}
		a.present[name] = true
		p, ok := t.param(name)
		if !ok {
			msg := fmt.Sprintf("unknown argument %q", clip(name))
			if s := closestNames(name, t.paramNames()); len(s) > 0 {
				msg += fmt.Sprintf(" (did you mean %s?)", quoteAll(s))
				near = append(near, s...)
			}
			faults = append(faults, msg)
			continue
		}
		if f := a.decode(p, raw); f != "" {
			faults = append(faults, f)
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, newError(codeInvalidArgument, "the arguments are not valid JSON: %v; nothing was done", err)
	}
	for _, p := range t.params {
		if p.required && !a.present[p.name] {
			f := fmt.Sprintf("missing argument %q", p.name)
			if p.desc != "" {
				f += " (" + p.desc + ")"
			}
			faults = append(faults, f)
		}
	}
	if len(faults) > 0 {
		e := newError(codeInvalidArgument, "%s refused its arguments, and nothing was done: %s", t.name, strings.Join(faults, "; "))
		e.Hint = "the arguments of " + t.name + " are: " + strings.Join(t.paramNames(), ", ")
		slices.Sort(near)
		e.DidYouMean = slices.Compact(near)
		return nil, e
	}
	return a, nil
}

// decode checks and stores one argument; it returns a fault, or "".
func (a *args) decode(p param, raw json.RawMessage) string {
	shown := clip(string(raw))
	switch p.kind {
	case kString, kTime:
		var s string
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
			return fmt.Sprintf("argument %q must be a string, not %s", p.name, shown)
		}
		if p.kind == kTime {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return fmt.Sprintf("argument %q must be an RFC 3339 time such as \"2026-03-14T09:00:00Z\", not %q", p.name, clip(s))
			}
			a.times[p.name] = t
		}
		if len(p.enum) > 0 && !slices.Contains(p.enum, s) {
			return fmt.Sprintf("argument %q must be one of %s, not %q", p.name, quoteAll(p.enum), clip(s))
		}
		a.strs[p.name] = s
	case kInteger:
		n, ok := wholeNumber(raw)
		if !ok {
			return fmt.Sprintf("argument %q must be a whole number, not %s", p.name, shown)
		}
		if n < p.min || (p.max > 0 && n > p.max) {
			if p.max > 0 {
				return fmt.Sprintf("argument %q must be from %d to %d, not %d", p.name, p.min, p.max, n)
			}
			return fmt.Sprintf("argument %q must be at least %d, not %d", p.name, p.min, n)
		}
		a.ints[p.name] = n
	case kBoolean:
		switch string(raw) {
		case "true":
			a.bools[p.name] = true
		case "false":
			a.bools[p.name] = false
		default:
			return fmt.Sprintf("argument %q must be true or false, not %s", p.name, shown)
		}
	case kJSON:
		a.raws[p.name] = raw
	case kParams:
		if len(raw) == 0 || (raw[0] != '{' && string(raw) != "null") {
			return fmt.Sprintf("argument %q must be an object such as {\"min\": 100}, not %s", p.name, shown)
		}
		a.raws[p.name] = raw
	case kResolve:
		if f := resolveFault(p.name, raw); f != "" {
			return f
		}
		a.raws[p.name] = raw
	case kPatch:
		if len(raw) == 0 || raw[0] != '[' {
			return fmt.Sprintf("argument %q must be an array of RFC 6902 operations such as [{\"op\":\"add\",\"path\":\"/a\",\"value\":1}], not %s", p.name, shown)
		}
		a.raws[p.name] = raw
	}
	return ""
}

// clip shortens a caller's text for a message.
func clip(s string) string {
	if len(s) <= 80 {
		return s
	}
	cut := 80
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// closestNames returns up to three names near name, nearest first (case, '_' and '-' do not count, so that
// expectedHead finds expected_head).
func closestNames(name string, names []string) []string { return suggest.Closest(name, names) }

// pointer parses a JSON Pointer argument ("" when absent).
func (a *args) pointer(name string) (revision.Pointer, error) {
	p, err := revision.ParsePointer(a.str(name))
	if err != nil {
		return nil, fmt.Errorf("argument %q: %w", name, err)
	}
	return p, nil
}

// ref builds the ref named by the fields revision, snapshot, branch and at, each with the prefix ("", "from_",
// "to_"). given reports whether any of them was set; with none, the ref is the head of main.
func (a *args) ref(prefix string) (ref snapshots.Ref, given bool, err error) {
	rev, snap, branch, at := prefix+"revision", prefix+"snapshot", prefix+"branch", prefix+"at"
	var set []string
	for _, n := range []string{rev, snap, branch} {
		if a.has(n) {
			set = append(set, n)
		}
	}
	if len(set) > 1 {
		return ref, true, newError(codeInvalidArgument, "%s name different states: give one of %s, %s or %s (%s may take %s)",
			strings.Join(set, " and "), rev, snap, branch, branch, at)
	}
	if a.has(at) && (a.has(rev) || a.has(snap)) {
		return ref, true, newError(codeInvalidArgument, "%s applies to a branch, not to %s or %s: give %s with %s (default main)",
			at, rev, snap, branch, at)
	}
	ref = snapshots.Ref{Revision: a.uint(rev), Snapshot: a.str(snap), Branch: a.str(branch), At: a.timeRef(at)}
	if a.has(at) && ref.Branch == "" {
		ref.Branch = snapshots.Main
	}
	return ref, len(set) > 0 || a.has(at), nil
}

// wholeNumber reads a non-negative whole number that fits 64 bits. As JSON Schema's integer does, it takes one
// written with a fraction of zero or an exponent (2.0, 2e0: found in review, some clients write them), not 2.5.
func wholeNumber(raw []byte) (uint64, bool) {
	if plainInteger.Match(raw) {
		n, err := strconv.ParseUint(string(raw), 10, 64)
		return n, err == nil
	}
	if len(raw) > 64 || !jsonNumberText.Match(raw) {
		return 0, false
	}
	r, ok := new(big.Rat).SetString(string(raw))
	if !ok || !r.IsInt() || r.Sign() < 0 || !r.Num().IsUint64() {
		return 0, false
	}
	return r.Num().Uint64(), true
}

var jsonNumberText = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]{1,3})?$`)

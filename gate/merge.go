package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
)

// Promotes under the gate (docs/design.md §3.3): a promote's change carries the resolutions of its conflicts and the
// keys of its arrays, so that a plan of a promote records them and applying it merges exactly as previewed. The
// operator's merge keys (Settings.MergeKeys) apply to every principal's promote; a scoped principal never sees a
// conflict, nor its values, in a resource its scope hides.

// ValidMergeKeys checks merge keys: each path a JSON Pointer that begins with a resource name.
func ValidMergeKeys(keys map[string]string) error {
	for _, p := range slices.Sorted(maps.Keys(keys)) {
		if _, err := resourcePointer(p, "array"); err != nil {
			return err
		}
	}
	return nil
}

// resourcePointer parses a pointer from the database root that names something inside a resource (what) and
// returns it in its canonical spelling.
func resourcePointer(p, what string) (string, error) {
	ptr, err := revision.ParsePointer(p)
	if err != nil {
		return "", fmt.Errorf("%w: the path of %s %q: %w", snapshots.ErrInvalidArgument, what, p, err)
	}
	if len(ptr) == 0 {
		return "", fmt.Errorf("%w: the path of %s %q is the whole database: begin it with the resource, as in \"/catalog/items\"", snapshots.ErrInvalidArgument, what, p)
	}
	if err := snapshots.ValidResourceName(ptr[0]); err != nil {
		return "", fmt.Errorf("the path of %s %q: %w", what, p, err)
	}
	return ptr.String(), nil
}

// promoteOptions are the library's options of a promote change: its resolutions and keys, each path in its
// canonical spelling.
func promoteOptions(ch Change) (snapshots.PromoteOptions, error) {
	var o snapshots.PromoteOptions
	if len(ch.Resolve) > 0 {
		o.Resolve = make(map[string]string, len(ch.Resolve))
		for _, p := range slices.Sorted(maps.Keys(ch.Resolve)) {
			c, err := resourcePointer(p, "resolution")
			if err != nil {
				return o, err
			}
			if _, dup := o.Resolve[c]; dup {
				return o, fmt.Errorf("%w: resolve names %q twice (spelt two ways)", snapshots.ErrInvalidArgument, c)
			}
			o.Resolve[c] = ch.Resolve[p]
		}
	}
	if len(ch.Keys) > 0 {
		o.Keys = make(map[string]string, len(ch.Keys))
		for _, p := range slices.Sorted(maps.Keys(ch.Keys)) {
			c, err := resourcePointer(p, "array")
			if err != nil {
				return o, err
			}
			o.Keys[c] = ch.Keys[p]
		}
	}
	return o, nil
}

// withMergeKeys gives a promote change the keys it merges with: the operator's merge keys, under the change's own.
// A plan keeps them, so that applying it merges as its preview did even if the configuration changed since.
func (v *View) withMergeKeys(ch *Change) {
	if ch.Op != OpPromote || len(v.a.p.MergeKeys) == 0 {
		return
	}
	keys := maps.Clone(v.a.p.MergeKeys)
	maps.Copy(keys, ch.Keys)
	ch.Keys = keys
}

// hiddenConflict refuses, for a scoped principal, a promote whose merge conflicts (or would have settled a conflict)
// in a resource the scope hides, exactly as a promote that would change such a resource is refused: neither the
// paths nor the values are shown.
func (v *View) hiddenConflict(pr *snapshots.PromoteResult, err error) error {
	if !v.a.limited() {
		return nil
	}
	var paths []string
	if pr != nil {
		for _, c := range append(slices.Clone(pr.Conflicts), pr.Resolved...) {
			paths = append(paths, c.Path)
		}
	}
	var re *revision.ResolutionError
	if errors.As(err, &re) {
		paths = append(paths, re.Conflicts...)
	}
	if slices.ContainsFunc(paths, func(p string) bool { return !v.pathPermitted(p) }) {
		return denied(OpPromote + " of a state that differs outside your scope")
	}
	return nil
}

// ConflictReport is one path a promote could not merge, with the three values there: at the merge base, on the
// branch promoted into, and on the branch promoted. A value is its JSON, or an $elided marker (Elided) when it is
// larger than asked for, or nil where the path is absent on that side. Array indexes in Path count positions at the
// merge base, where both sides' changes were compared.
type ConflictReport struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
	// Elements: the conflict is over a run of array elements beginning at Path's last index, and each value is an
	// array holding the run as that side has it.
	Elements bool            `json:"elements,omitempty"`
	Base     json.RawMessage `json:"base,omitempty"`
	Into     json.RawMessage `json:"into,omitempty"`
	Branch   json.RawMessage `json:"branch,omitempty"`
}

// ConflictReports shows the conflicts of a promote's merge, in order, for the principal: each value whole when its
// JSON has at most perValue bytes, else an $elided marker. It stops before the reports would pass budget bytes (0:
// no bound), and returns the reports made and how many conflicts there are in all. A conflict the scope hides is
// never shown (the gate refuses such a promote before it gets here).
func (v *View) ConflictReports(ctx context.Context, pr *snapshots.PromoteResult, perValue, budget int) ([]ConflictReport, int, error) {
	if pr == nil {
		return nil, 0, nil
	}
	f := pr.ConflictForest()
	value := func(val revision.Value, path string) (json.RawMessage, error) {
		if !val.IsValid() {
			return nil, nil
		}
		if val.Size() <= uint64(perValue) {
			b, err := f.JSON(ctx, val)
			if err != nil || len(b) <= perValue {
				return b, err
			}
		}
		b, _ := json.Marshal(Elided{Elided: val.Kind().String(), Path: path, Count: val.Len(), Bytes: val.Size()})
		return b, nil
	}
	var out []ConflictReport
	used, total := 0, 0
	for _, c := range pr.Conflicts {
		if !v.pathPermitted(c.Path) {
			continue
		}
		total++
		if budget > 0 && used >= budget {
			continue
		}
		r := ConflictReport{Path: c.Path, Reason: c.Reason, Elements: c.Elements}
		var err error
		if r.Base, err = value(c.Base, c.Path); err != nil {
			return nil, 0, err
		}
		if r.Into, err = value(c.Ours, c.Path); err != nil {
			return nil, 0, err
		}
		if r.Branch, err = value(c.Theirs, c.Path); err != nil {
			return nil, 0, err
		}
		b, _ := json.Marshal(r)
		if budget > 0 && used+len(b)+1 > budget {
			used = budget // keep the reports in order: none after one that did not fit
			continue
		}
		used += len(b) + 1
		out = append(out, r)
	}
	return out, total, nil
}

// isMergeConflict reports whether err is a merge's conflict (not a moved branch head).
func isMergeConflict(err error) bool {
	var ce *snapshots.ConflictError
	return errors.As(err, &ce) && ce.Msg != "" && ce.Branch == ""
}

package revision

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/strata-db/strata/store"
)

// The two sides a resolution can take: the value ours (the first descendant given to Merge) or theirs has.
const (
	Ours   = "ours"
	Theirs = "theirs"
)

// DefaultKey is the member that identifies the elements of an array of objects, unless MergeOptions.Keys names
// another for that array.
const DefaultKey = "id"

// Conflict is a path that both sides changed in ways that cannot both be kept. Absent values are the zero Value.
//
// Array indexes in Path count positions in the base array (the common ancestor), where both sides' changes are
// compared: /items/3 is the element that was fourth in the base, wherever each side has it now.
type Conflict struct {
	Path   string
	Reason string
	Base   Value
	Ours   Value
	Theirs Value
	// Elements is set when the conflict is over a run of array elements rather than one value: Base, Ours and
	// Theirs are then arrays holding the run as each side has it, beginning at Path's last index. The merge builds
	// those arrays; large ones live in nodes that only MergeResult.Nodes holds.
	Elements bool
}

// MergeOptions adjusts a three-way merge. The zero value aligns arrays of objects by DefaultKey where every element
// carries a unique one, and resolves nothing.
type MergeOptions struct {
	// Keys names, for the array at a JSON Pointer (counted from the merged value's root, indexes as conflicts
	// report them), the member that identifies its elements instead of DefaultKey; "" aligns that array by
	// position.
	Keys map[string]string
	// Resolve settles conflicts: for a conflict's Path, Ours or Theirs takes that side's value there (for a run of
	// elements, that side's run). A path that is not in conflict, or any other value, is refused (ErrResolution).
	Resolve map[string]string
}

// MergeResult is the outcome of a merge.
type MergeResult struct {
	// Change is the merged value and the nodes it adds; nil while any conflict is unresolved.
	Change *Change
	// Conflicts are the conflicts that Resolve did not settle; Resolved those it did.
	Conflicts []Conflict
	Resolved  []Conflict
	// Nodes holds the nodes of conflict values that the merge built (runs of elements, see Conflict.Elements). They
	// are in no store: read those values through a forest that has them (Forest.WithStore over a store holding
	// them in front of this forest's).
	Nodes []store.Node
	// NodeReads is how many nodes the merge read (from its own new nodes, the cache or the store): its cost, which
	// grows with what the two sides changed, not with the documents.
	NodeReads int
}

// ResolutionError refuses a merge whose resolutions name paths that are not in conflict.
type ResolutionError struct {
	NotInConflict []string // the paths named by a resolution that are not in conflict
	Conflicts     []string // every path in conflict (settled by a resolution or not)
	// Inside are paths named by a resolution that were in conflict inside an array that another resolution settles
	// whole (with that side's array): the two resolutions overlap.
	Inside []string
}

func (e *ResolutionError) Error() string {
	if len(e.NotInConflict) == 0 {
		return fmt.Sprintf("resolve names %s inside an array that it also settles whole (a resolution at the array's own path takes that side's whole array): give either the array's resolution or those inside it", listPaths(e.Inside))
	}
	s := fmt.Sprintf("resolve names %s, which %s not in conflict", listPaths(e.NotInConflict), pluralIs(len(e.NotInConflict)))
	if len(e.Inside) > 0 {
		s += fmt.Sprintf(", and %s inside an array that it also settles whole", listPaths(e.Inside))
	}
	if len(e.Conflicts) == 0 {
		return s + "; this merge has no conflicts: drop the resolutions"
	}
	return s + "; the conflicts are at " + listPaths(e.Conflicts) + " (name those paths exactly as reported)"
}

// listPaths quotes up to 20 paths, separated by commas.
func listPaths(ps []string) string {
	const most = 20
	var b strings.Builder
	for i, p := range ps {
		if i == most {
			fmt.Fprintf(&b, " and %d more", len(ps)-most)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", p)
	}
	return b.String()
}

func (e *ResolutionError) Unwrap() error { return ErrResolution }

// Merge combines two descendants of base, ours and theirs, three ways: what only one side changed takes that side's
// value; the same change on both sides is kept once; changes that overlap are conflicts, reported with all three
// values, and never guessed. Objects merge member by member. Arrays merge element by element (see mergeArray): by
// position, or by a key member when every element read is an object with a unique one.
//
// Equal subtrees (equal hashes) are never descended: the cost grows with the changes, not the documents. When
// conflicts remain after opts.Resolve, the result has no Change and nothing is built to be written.
func (f *Forest) Merge(ctx context.Context, base, ours, theirs Value, opts *MergeOptions) (*MergeResult, error) {
	m := &merger{t: f.newTxn(ctx), paths: map[string]int{}, inside: map[string]bool{}}
	if opts != nil {
		m.opts = *opts
	}
	for p, side := range m.opts.Resolve {
		if side != Ours && side != Theirs {
			return nil, fmt.Errorf("%w: %q for %q: a resolution takes %q or %q", ErrResolution, side, p, Ours, Theirs)
		}
	}
	m.d = &differ{r: &m.t.reader, res: &DiffResult{}, visited: map[[32]byte]bool{}, opts: DiffOptions{MaxWork: defaultMaxWork}}
	v, err := m.merge(Pointer{}, base, ours, theirs)
	if err != nil {
		return nil, err
	}
	res := &MergeResult{}
	var all []string
	for _, s := range m.settled {
		all = append(all, s.c.Path)
		if s.side == "" {
			res.Conflicts = append(res.Conflicts, s.c)
		} else {
			res.Resolved = append(res.Resolved, s.c)
		}
	}
	var unused, inside []string
	for p := range m.opts.Resolve {
		switch {
		case m.paths[p] > 0:
		case m.inside[p]:
			inside = append(inside, p)
		default:
			unused = append(unused, p)
		}
	}
	if len(unused) > 0 || len(inside) > 0 {
		sort.Strings(unused)
		sort.Strings(inside)
		return nil, &ResolutionError{NotInConflict: unused, Conflicts: all, Inside: inside}
	}
	if res.Nodes, err = m.conflictNodes(); err != nil {
		return nil, err
	}
	if len(res.Conflicts) == 0 {
		if res.Change, err = m.t.change(v); err != nil {
			return nil, err
		}
	}
	res.NodeReads = m.t.reads
	return res, nil
}

// defaultMaxWork caps the edit-script search of one run of changed elements, as for Diff.
const defaultMaxWork = 1_000_000

type merger struct {
	t    *txn
	d    *differ
	opts MergeOptions

	settled []settled      // every conflict found, in order, with the side its resolution took ("" if none)
	paths   map[string]int // how many settled conflicts have each path
	dups    int            // how often a conflict path repeated one already settled
	// inside: the paths of conflicts a resolution settled inside an array that a resolution at its own path then
	// settled whole.
	inside map[string]bool
}

type settled struct {
	c    Conflict
	side string
}

// settle records a conflict and returns the side its resolution takes, or "" when none settles it.
func (m *merger) settle(c Conflict) string {
	side := m.opts.Resolve[c.Path]
	m.settled = append(m.settled, settled{c, side})
	if m.paths[c.Path] > 0 {
		m.dups++
	}
	m.paths[c.Path]++
	return side
}

// rollback forgets the conflicts settled since mark.
func (m *merger) rollback(mark int) {
	for _, s := range m.settled[mark:] {
		if m.paths[s.c.Path]--; m.paths[s.c.Path] == 0 {
			delete(m.paths, s.c.Path)
		}
	}
	m.settled = m.settled[:mark]
}

// clash settles a conflict over one value and returns the value the merge keeps there (ours while unresolved:
// nothing is written then).
func (m *merger) clash(p Pointer, reason string, base, ours, theirs Value) Value {
	if m.settle(Conflict{Path: p.String(), Reason: reason, Base: base, Ours: ours, Theirs: theirs}) == Theirs {
		return theirs
	}
	return ours
}

// conflictNodes returns the nodes built by the merge that the values of conflicts over runs of elements reach.
func (m *merger) conflictNodes() ([]store.Node, error) {
	var out []store.Node
	seen := map[store.Hash]bool{}
	for _, s := range m.settled {
		if !s.c.Elements {
			continue
		}
		for _, v := range []Value{s.c.Base, s.c.Ours, s.c.Theirs} {
			ns, err := m.t.newNodes(v)
			if err != nil {
				return nil, err
			}
			for _, n := range ns {
				if !seen[n.Hash] {
					seen[n.Hash] = true
					out = append(out, n)
				}
			}
		}
	}
	return out, nil
}

// merge returns the merged value at p (the zero Value for "absent").
func (m *merger) merge(p Pointer, base, ours, theirs Value) (Value, error) {
	switch {
	case ours == theirs, base == theirs:
		return ours, nil
	case base == ours:
		return theirs, nil
	}
	if err := m.t.ctx.Err(); err != nil {
		return Value{}, err
	}
	kb, ko, kt := base.Kind(), ours.Kind(), theirs.Kind()
	switch {
	case !ours.IsValid() || !theirs.IsValid():
		return m.clash(p, "removed on one side and changed on the other", base, ours, theirs), nil
	case kb == Object && ko == Object && kt == Object:
		return m.object(p, base, ours, theirs)
	case kb == Array && ko == Array && kt == Array:
		return m.array(p, base, ours, theirs)
	case !base.IsValid():
		return m.clash(p, "added on both sides with different values", base, ours, theirs), nil
	default:
		return m.clash(p, "changed on both sides to different values", base, ours, theirs), nil
	}
}

func (m *merger) object(p Pointer, base, ours, theirs Value) (Value, error) {
	oursChanged := map[string]bool{}
	if err := m.d.members(base, ours, func(k, _, _ string) error { oursChanged[k] = true; return nil }); err != nil {
		return Value{}, err
	}
	result := ours
	err := m.d.members(base, theirs, func(k, vb, vt string) error {
		kp := p.Child(k)
		var merged Value
		if !oursChanged[k] {
			merged = Value{vt}
		} else {
			vo, err := m.lookup(ours, k)
			if err != nil {
				return err
			}
			if merged, err = m.merge(kp, Value{vb}, vo, Value{vt}); err != nil {
				return err
			}
			if merged == vo {
				return nil
			}
		}
		var err error
		if merged.IsValid() {
			result, _, err = m.t.editChild(result, Pointer{k}, editAdd, merged)
		} else {
			result, _, err = m.t.editChild(result, Pointer{k}, editRemove, Value{})
		}
		return err
	})
	return result, err
}

func (m *merger) lookup(obj Value, key string) (Value, error) {
	loc, err := m.t.locateKey(obj, key)
	if err != nil || !loc.found {
		return Value{}, err
	}
	return loc.val(), nil
}

// String describes a conflict in one line.
func (c Conflict) String() string { return fmt.Sprintf("%s: %s", c.Path, c.Reason) }

// pluralIs is "is" for one, "are" for more.
func pluralIs(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

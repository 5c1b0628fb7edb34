package revision

import (
	"context"
	"fmt"
	"strconv"
)

// Conflict is a path that both sides changed in different ways. Absent values are the zero Value.
type Conflict struct {
	Path   string
	Reason string
	Base   Value
	Ours   Value
	Theirs Value
}

// Merge combines two descendants of base by path: a member or element changed on one side only takes that side's
// value; the same path changed two different ways is a conflict, reported with all three values, and nothing is
// guessed. Objects merge member by member and arrays of unchanged length element by element; an array whose length
// changed on one side and that the other side changed too is a conflict at the array.
//
// When there are conflicts the returned Change is nil.
func (f *Forest) Merge(ctx context.Context, base, ours, theirs Value) (*Change, []Conflict, error) {
	m := &merger{t: f.newTxn(ctx)}
	m.d = &differ{r: &m.t.reader, res: &DiffResult{}, visited: map[[32]byte]bool{}}
	v, err := m.merge(Pointer{}, base, ours, theirs)
	if err != nil {
		return nil, nil, err
	}
	if len(m.conflicts) > 0 {
		return nil, m.conflicts, nil
	}
	c, err := m.t.change(v)
	return c, nil, err
}

type merger struct {
	t         *txn
	d         *differ
	conflicts []Conflict
}

func (m *merger) conflict(p Pointer, reason string, base, ours, theirs Value) {
	m.conflicts = append(m.conflicts, Conflict{Path: p.String(), Reason: reason, Base: base, Ours: ours, Theirs: theirs})
}

// merge returns the merged value at p (the zero Value for "absent").
func (m *merger) merge(p Pointer, base, ours, theirs Value) (Value, error) {
	switch {
	case ours == theirs, base == theirs:
		return ours, nil
	case base == ours:
		return theirs, nil
	}
	kb, ko, kt := base.Kind(), ours.Kind(), theirs.Kind()
	switch {
	case !ours.IsValid() || !theirs.IsValid():
		m.conflict(p, "removed on one side and changed on the other", base, ours, theirs)
	case kb == Object && ko == Object && kt == Object:
		return m.object(p, base, ours, theirs)
	case kb == Array && ko == Array && kt == Array && base.Len() == ours.Len() && base.Len() == theirs.Len():
		return m.array(p, base, ours, theirs)
	case kb == Array && ko == Array && kt == Array:
		m.conflict(p, "both sides changed this array and at least one changed its length", base, ours, theirs)
	case !base.IsValid():
		m.conflict(p, "added on both sides with different values", base, ours, theirs)
	default:
		m.conflict(p, "changed on both sides to different values", base, ours, theirs)
	}
	return ours, nil
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

func (m *merger) array(p Pointer, base, ours, theirs Value) (Value, error) {
	oursChanged := map[uint64]bool{}
	if err := m.d.positions(base, ours, func(i uint64, _, _ string) error { oursChanged[i] = true; return nil }); err != nil {
		return Value{}, err
	}
	result := ours
	err := m.d.positions(base, theirs, func(i uint64, vb, vt string) error {
		tok := strconv.FormatUint(i, 10)
		merged := Value{vt}
		if oursChanged[i] {
			loc, err := m.t.locateIndex(ours, i)
			if err != nil {
				return err
			}
			vo := loc.val()
			if merged, err = m.merge(p.Child(tok), Value{vb}, vo, Value{vt}); err != nil {
				return err
			}
			if merged == vo {
				return nil
			}
		}
		var err error
		result, _, err = m.t.editChild(result, Pointer{tok}, editReplace, merged)
		return err
	})
	return result, err
}

// String describes a conflict in one line.
func (c Conflict) String() string { return fmt.Sprintf("%s: %s", c.Path, c.Reason) }

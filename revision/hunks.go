package revision

import (
	"fmt"
	"sort"
)

// hunk is one change from a base array to another: the base elements [lo, lo+len(del)) became ins. Elements are
// their encodings.
type hunk struct {
	lo       uint64
	del, ins []string
}

// hunks lists, in order, the runs of elements where b differs from a, found the way Diff finds them: equal
// subtrees are skipped by hash at every level without being read, and what remains is aligned by anchors (pieces
// found once on each side) and, among elements, by Myers' edit script over their encodings. Only the elements of
// the runs returned are read, so the cost grows with the change, not with the arrays.
func (d *differ) hunks(a, b Value) ([]hunk, error) {
	if a.Kind() != Array || b.Kind() != Array {
		return nil, fmt.Errorf("%w: hunks of a %s and a %s", ErrInvalidPath, a.Kind(), b.Kind())
	}
	var out []hunk
	d.onRun = func(aAt, _ uint64, qa, qb []item) error {
		if len(qa) == 0 || len(qb) == 0 {
			del, err := d.vals(qa)
			if err != nil {
				return err
			}
			ins, err := d.vals(qb)
			if err != nil {
				return err
			}
			out = append(out, hunk{lo: aAt, del: del, ins: ins})
			return nil
		}
		out = d.entryHunks(out, aAt, qa, qb) // run hands over two non-empty runs only when all are elements
		return nil
	}
	defer func() { d.onRun = nil }()
	qa, err := d.items(a)
	if err != nil {
		return nil, err
	}
	qb, err := d.items(b)
	if err != nil {
		return nil, err
	}
	if err := d.run(nil, qa, qb, 0, 0); err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].lo < out[j].lo })
	return out, nil
}

// entryHunks appends the hunks between two runs of elements. Long runs are first split at anchors (elements found
// once on each side, in order), so that Myers' search only ever covers the short runs between them.
func (d *differ) entryHunks(out []hunk, aAt uint64, qa, qb []item) []hunk {
	switch {
	case len(qa) == 0 && len(qb) == 0:
		return out
	case len(qa) == 0 || len(qb) == 0:
		return append(out, hunk{lo: aAt, del: entryVals(qa), ins: entryVals(qb)})
	case len(qa)+len(qb) > 64:
		if anchors := d.anchorsOf(qa, qb); len(anchors) > 0 {
			ia, ib := 0, 0
			for _, an := range anchors {
				out = d.entryHunks(out, aAt+uint64(ia), qa[ia:an[0]], qb[ib:an[1]])
				ia, ib = an[0]+1, an[1]+1
			}
			return d.entryHunks(out, aAt+uint64(ia), qa[ia:], qb[ib:])
		}
	}
	script, ok := myers(qa, qb, d.opts.MaxWork)
	if !ok {
		return append(out, hunk{lo: aAt, del: entryVals(qa), ins: entryVals(qb)})
	}
	ai, i := 0, 0
	for i < len(script) {
		if script[i].kind == '=' {
			ai++
			i++
			continue
		}
		h := hunk{lo: aAt + uint64(ai)}
		for ; i < len(script) && script[i].kind != '='; i++ {
			if e := script[i]; e.kind == 'd' {
				h.del = append(h.del, qa[e.a].val)
				ai++
			} else {
				h.ins = append(h.ins, qb[e.b].val)
			}
		}
		out = append(out, h)
	}
	return out
}

func entryVals(q []item) []string {
	out := make([]string, len(q))
	for i, it := range q {
		out[i] = it.val
	}
	return out
}

// vals returns the elements of a run of pieces, reading the subtrees among them.
func (d *differ) vals(q []item) ([]string, error) {
	var out []string
	for _, it := range q {
		if err := d.eachEntry(it, func(val string) error { out = append(out, val); return nil }); err != nil {
			return nil, err
		}
	}
	return out, nil
}

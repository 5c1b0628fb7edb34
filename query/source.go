package query

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
)

// source is a query's input before it is materialised: one stored value, null (a path that led nowhere), or the
// root with some resources hidden (Request.Visible).
type source struct {
	f       *revision.Forest
	v       revision.Value
	null    bool
	members []member // the visible resources, when the root is filtered
	filter  bool
}

type member struct {
	name string
	v    revision.Value
}

// source resolves a request's input.
func (e *Engine) source(ctx context.Context, req *Request) (*source, error) {
	s := &source{f: req.Forest, v: req.Root}
	if req.Resource != "" {
		if req.Visible != nil && !req.Visible(req.Resource) {
			return nil, &snapshots.NotFoundError{What: "resource", Name: req.Resource, Hint: fmt.Sprintf("not in revision %d", req.Revision)}
		}
		v, err := req.Forest.Get(ctx, req.Root, revision.Pointer{req.Resource})
		if err != nil {
			if errors.Is(err, revision.ErrNotFound) {
				var near []string
				var pe *revision.PathError
				if errors.As(err, &pe) && req.Visible == nil {
					near = pe.DidYouMean
				}
				return nil, &snapshots.NotFoundError{What: "resource", Name: req.Resource, DidYouMean: near, Hint: fmt.Sprintf("not in revision %d", req.Revision)}
			}
			return nil, err
		}
		s.v = v
		return s, nil
	}
	if req.Visible != nil {
		s.filter = true
		err := req.Forest.Members(ctx, req.Root, func(name string, v revision.Value) error {
			if req.Visible(name) {
				s.members = append(s.members, member{name, v})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *source) kind() revision.Kind {
	switch {
	case s.null:
		return revision.Null
	case s.filter:
		return revision.Object
	}
	return s.v.Kind()
}

// size is the length of the source as compact JSON.
func (s *source) size() int64 {
	switch {
	case s.null:
		return 4
	case s.filter:
		n := int64(2)
		for i, m := range s.members {
			if i > 0 {
				n++
			}
			n += int64(len(appendString(nil, m.name))) + 1 + int64(m.v.Size())
		}
		return n
	}
	return int64(s.v.Size())
}

func (s *source) writeJSON(ctx context.Context, w io.Writer) error {
	switch {
	case s.null:
		_, err := io.WriteString(w, "null")
		return err
	case s.filter:
		if _, err := io.WriteString(w, "{"); err != nil {
			return err
		}
		for i, m := range s.members {
			b := appendString(nil, m.name)
			if i > 0 {
				b = append([]byte{','}, b...)
			}
			b = append(b, ':')
			if _, err := w.Write(b); err != nil {
				return err
			}
			if err := s.f.WriteJSON(ctx, w, m.v); err != nil {
				return err
			}
		}
		_, err := io.WriteString(w, "}")
		return err
	}
	return s.f.WriteJSON(ctx, w, s.v)
}

// materialize returns the source as Go values for gojq, through the cache; hit reports a cache hit (for a
// filtered root: every visible resource was one).
func (s *source) materialize(ctx context.Context, c *materialCache) (material, bool, error) {
	switch {
	case s.null:
		return material{}, false, nil
	case s.filter:
		m := make(map[string]any, len(s.members))
		all, long := true, false
		for _, mb := range s.members {
			x, hit, err := c.materialize(ctx, s.f, mb.v)
			if err != nil {
				return material{}, false, err
			}
			all, long = all && hit, long || x.long
			m[mb.name] = x.v
		}
		return material{v: m, long: long}, all && len(s.members) > 0, nil
	}
	return c.materialize(ctx, s.f, s.v)
}

// resolve gives a step's member name or array index, reading a parameter for .[$name]. ok is false for a
// parameter that is neither a string nor an integer (jq then decides what indexing with it means).
func (st *step) resolve(ps *params) (key string, index int, isIndex, ok bool) {
	if st.param == "" {
		return st.key, st.index, st.isIndex, true
	}
	for i, n := range ps.names {
		if n != st.param {
			continue
		}
		if v, ok := ps.values[i].(string); ok {
			return v, 0, false, true
		}
		if v, ok := intOf(ps.values[i]); ok && v > -(1<<40) && v < 1<<40 {
			return "", v, true, true
		}
		return "", 0, false, false
	}
	return "", 0, false, false
}

// descend reads the program's leading literal path by pointer, step by step, and returns where it got and how many
// steps it took. A missing member or an index out of range makes the input null (jq's answer for the rest of a
// literal path); a step jq would reject (a name on an array, an index on an object or a scalar) stops the descent
// there, and the program's remaining steps run in jq, which reports the error its own way.
func (e *Engine) descend(ctx context.Context, s *source, prog *program, ps *params) (*source, int, string, error) {
	steps := prog.plan.steps
	var ptr revision.Pointer
	for k := range steps {
		key, idx, isIdx, ok := steps[k].resolve(ps)
		if !ok {
			return s, k, ptr.String(), nil
		}
		if isIdx {
			ptr = append(ptr, strconv.Itoa(idx))
		} else {
			ptr = append(ptr, key)
		}
		switch kind := s.kind(); {
		case kind == revision.Null:
			s = &source{f: s.f, null: true}
		case kind == revision.Object && !isIdx && s.filter:
			next := &source{f: s.f, null: true}
			for _, m := range s.members {
				if m.name == key {
					next = &source{f: s.f, v: m.v}
				}
			}
			s = next
		case kind == revision.Object && !isIdx:
			v, err := s.f.Get(ctx, s.v, revision.Pointer{key})
			switch {
			case errors.Is(err, revision.ErrNotFound):
				s = &source{f: s.f, null: true}
			case err != nil:
				if ctx.Err() != nil {
					return nil, 0, "", ctxError(ctx, prog.text)
				}
				return nil, 0, "", err
			default:
				s = &source{f: s.f, v: v}
			}
		case kind == revision.Array && isIdx:
			n := int64(s.v.Len())
			i := int64(idx)
			if i < 0 {
				i += n
			}
			if i < 0 || i >= n {
				s = &source{f: s.f, null: true}
				continue
			}
			ptr[len(ptr)-1] = strconv.FormatInt(i, 10)
			v, err := s.f.Get(ctx, s.v, revision.Pointer{strconv.FormatInt(i, 10)})
			if err != nil {
				if ctx.Err() != nil {
					return nil, 0, "", ctxError(ctx, prog.text)
				}
				return nil, 0, "", err
			}
			s = &source{f: s.f, v: v}
		default:
			return s, k, ptr[:k].String(), nil
		}
	}
	return s, len(steps), ptr.String(), nil
}

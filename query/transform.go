package query

import (
	"context"
	"errors"
	"strings"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
)

// Transform runs a program on value and returns its single output as JSON text: the new value for a write. A
// program that produces no value or several is an ErrQuery error, and a value larger than
// Options.MaxTransformBytes an ErrLimit error; either way nothing should be written. Transform writes nothing
// itself; TransformResource does the whole write.
//
// Transforms obey the same isolation as queries: most use assignment (|=, +=, del, …), which is not bounded, so
// they run in a worker, which is sent the value as JSON and sends the new value back.
func (e *Engine) Transform(ctx context.Context, f *revision.Forest, value revision.Value, program string, params map[string]any) ([]byte, error) {
	src := &source{f: f, v: value}
	if !value.IsValid() {
		src = &source{f: f, null: true}
	}
	return e.transform(ctx, src, program, params)
}

func (e *Engine) transform(ctx context.Context, src *source, program string, params map[string]any) ([]byte, error) {
	ps, err := e.params(program, params)
	if err != nil {
		return nil, err
	}
	prog, err := e.program(program, ps.names)
	if err != nil {
		return nil, err
	}
	ctx, cancel := e.deadline(ctx)
	defer cancel()
	src, k, _, err := e.descend(ctx, src, prog, ps)
	if err != nil {
		return nil, err
	}
	if prog.plan.whole() && k == len(prog.plan.steps) {
		if n := src.size(); n > int64(e.opts.MaxTransformBytes) {
			return nil, limitErr(program, "the transformed value is larger than the %s limit; nothing was written", sizeText(e.opts.MaxTransformBytes))
		}
		var b strings.Builder
		if err := src.writeJSON(ctx, &b); err != nil {
			if ctx.Err() != nil {
				return nil, ctxError(ctx, program)
			}
			return nil, err
		}
		return []byte(b.String()), nil
	}
	var plan Plan
	pg, err := e.execute(ctx, prog, ps, src, k, "transform", 0, 1, e.opts.MaxTransformBytes, &plan)
	if err != nil {
		return nil, err
	}
	return pg.results[0], nil
}

// TransformResource replaces a resource on a branch with the single output of a program run on its current value,
// as one new revision. The program runs outside the database's writer, on the branch head it read; the write then
// commits only if the head has not moved (w.ExpectedHead, when set, is checked as for any write). When another
// write got there first and the caller set no ExpectedHead, the transform runs again on the new head, up to three
// times. Zero or several outputs, a run-time error, or a limit write nothing.
func (e *Engine) TransformResource(ctx context.Context, db *snapshots.DB, resource, program string, params map[string]any, w snapshots.WriteOptions) (*snapshots.Result, error) {
	if err := snapshots.ValidResourceName(resource); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		st, err := db.Resolve(ctx, snapshots.Ref{Branch: w.Branch})
		if err != nil {
			return nil, err
		}
		v, err := db.Forest().Get(ctx, st.Root, revision.Pointer{resource})
		if errors.Is(err, revision.ErrNotFound) {
			var near []string
			var pe *revision.PathError
			if errors.As(err, &pe) {
				near = pe.DidYouMean
			}
			return nil, &snapshots.NotFoundError{What: "resource", Name: resource, DidYouMean: near, Hint: "use put to create it"}
		}
		if err != nil {
			return nil, err
		}
		text, err := e.Transform(ctx, db.Forest(), v, program, params)
		if err != nil {
			return nil, err
		}
		wo := w
		retry := wo.ExpectedHead == 0
		if retry {
			wo.ExpectedHead = st.Rev.Number
		}
		path := revision.Pointer{resource}.String()
		res, err := db.Commit(ctx, wo, func(ctx context.Context, f *revision.Forest, head snapshots.State) (*revision.Change, error) {
			return f.Patch(ctx, head.Root, []revision.Operation{{Op: "add", Path: path, Value: text, HasValue: true}})
		})
		if retry && attempt < 2 && errors.Is(err, snapshots.ErrConflict) {
			continue
		}
		return res, err
	}
}

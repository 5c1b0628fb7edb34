package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
)

// promote's conflicts and their resolutions (docs/design.md §3.3): a merge's conflicts come back as the error's
// conflicts, each with its path and the base, into and branch values there (elided when large, as path_history
// elides them), so that an agent can decide without reading further; promote again with resolve, an object from
// each path to "branch" or "into", settles them. The gate keeps what a scope hides out of both.

var pResolve = param{name: "resolve", kind: kResolve,
	desc: `{"/resource/path": "branch" or "into"} for each conflict a promote reported: take the branch's value there, or keep into's`}

// maxResolveFaults bounds the faults one refusal of resolve lists.
const maxResolveFaults = 5

// resolveFault checks a resolve argument: an object (or null) whose members are JSON Pointers from the database
// root, each given once, and whose values are "branch" or "into". It returns the faults, or "".
func resolveFault(name string, raw json.RawMessage) string {
	if string(raw) == "null" {
		return ""
	}
	example := fmt.Sprintf(`argument %q must be an object such as {"/cat/items/3/price": "branch"}`, name)
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return example + ", not " + clip(string(raw))
	}
	var faults []string
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return example + ": " + err.Error()
		}
		path, _ := tok.(string)
		var side any
		if err := dec.Decode(&side); err != nil {
			return example + ": " + err.Error()
		}
		switch s, _ := side.(string); {
		case seen[path]:
			faults = append(faults, fmt.Sprintf("%q is given twice", clip(path)))
		case path == "" || path[0] != '/':
			faults = append(faults, fmt.Sprintf("%q is not a path as conflicts report them (a JSON Pointer beginning with the resource, such as \"/cat/items/3/price\")", clip(path)))
		case s != snapshots.ResolveBranch && s != snapshots.ResolveInto:
			b, _ := json.Marshal(side)
			faults = append(faults, fmt.Sprintf("%q takes \"branch\" (the branch's value) or \"into\" (into's), not %s", clip(path), clip(string(b))))
		}
		seen[path] = true
	}
	if len(faults) == 0 {
		return ""
	}
	more := ""
	if len(faults) > maxResolveFaults {
		more = fmt.Sprintf(" (and %d more)", len(faults)-maxResolveFaults)
		faults = faults[:maxResolveFaults]
	}
	return fmt.Sprintf("argument %q: %s%s", name, strings.Join(faults, "; "), more)
}

// resolveArg is a checked resolve argument (nil when absent or null).
func resolveArg(raw json.RawMessage) map[string]string {
	var m map[string]string
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &m) // resolveFault checked it
	}
	return m
}

// conflicts is the error of a promote whose merge conflicts: each path with its three values, in conflicts, as many
// as fit the output cap.
func (c *call) conflicts(ctx context.Context, v *gate.View, ch gate.Change, pr *snapshots.PromoteResult, err error) error {
	budget := c.s.budget()
	reports, total, rerr := v.ConflictReports(ctx, pr, max(budget/12, 200), budget-1500)
	if rerr != nil {
		return rerr
	}
	into := branchOr(ch.Branch)
	e := &codedError{toolError: toolError{Code: codeConflict,
		Hint: `settle each path with resolve: {"PATH": "branch"} takes the branch's value there, "into" keeps ` + into +
			`'s; or make the branch agree with ` + into + ` there, and promote again`},
		err: err}
	message := func() string {
		listed := "listed in conflicts with their base, into and branch values"
		if len(e.Conflicts) < total {
			listed = fmt.Sprintf("the first %d listed in conflicts with their base, into and branch values", len(e.Conflicts))
		}
		settled := ""
		if n := len(pr.Resolved); n > 0 {
			settled = fmt.Sprintf(" (resolve settled %d other(s))", n)
		}
		return fmt.Sprintf("promoting %s into %s conflicts at %d path(s)%s, %s; nothing was written", ch.Source, into, total, settled, listed)
	}
	e.Conflicts = reports
	e.Message = message()
	// Escaping can make values longer than they read: keep the whole error within the cap.
	for len(e.Conflicts) > 0 {
		b, _, merr := marshalData(e.toolError)
		if merr == nil && len(b) <= c.s.cfg.MaxOutputChars-200 {
			break
		}
		e.Conflicts = e.Conflicts[:len(e.Conflicts)-1]
		e.Message = message()
	}
	return e
}

// resolutionError rewords a refusal of resolutions that name paths not in conflict: the paths, which come from the
// store, go inside the untrusted-data boundary (did_you_mean lists the paths in conflict), never in the message.
func resolutionError(err error) error {
	var re *revision.ResolutionError
	if !errors.As(err, &re) {
		return err
	}
	e := &codedError{toolError: toolError{Code: codeInvalidArgument,
		Message: fmt.Sprintf("resolve names %d path(s) that are not in conflict; nothing was written (they are in detail)", len(re.NotInConflict)),
		Detail:  re.Error()}, err: err}
	if len(re.NotInConflict) == 0 {
		e.Message = fmt.Sprintf("resolve names %d path(s) inside an array that it also settles whole; nothing was written (they are in detail)", len(re.Inside))
		e.Hint = "a resolution at an array's own path takes that side's whole array: give either it or the resolutions inside it"
		return e
	}
	if len(re.Conflicts) == 0 {
		e.Hint = "this merge has no conflicts: promote without resolve"
		return e
	}
	e.DidYouMean = re.Conflicts[:min(len(re.Conflicts), 20)]
	e.Hint = "name each path exactly as the conflicts report it (the paths in conflict are in did_you_mean); promote without resolve to see them with their values"
	return e
}

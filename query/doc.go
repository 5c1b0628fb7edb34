// Package query runs jq programs (gojq v0.12.20) over any revision of a Strata database: safely, in pages, fast.
//
// # Use
//
//	e, err := query.New(query.Options{})          // limits default to Timeout 5 s, 1 MiB pages, 2 workers of 256 MiB
//	defer e.Close()
//	res, err := e.Query(ctx, db, snapshots.Ref{Branch: "main"}, query.Request{
//		Resource: "users", Program: `.[] | select(.score > $min) | {id, name}`,
//		Params: map[string]any{"min": 90}, Limit: 100, Caller: "agent-7"})
//	// res.Results: one page, each result compact JSON with numbers' exact text; res.NextCursor continues it.
//
// A binary that uses an Engine must call WorkerMain first thing in main (tests: in TestMain), because workers are
// re-executions of the binary itself.
//
// Run takes the revision explicitly (Forest, Root, Revision); Query resolves a snapshots.Ref, or the revision a
// cursor was issued for. Transform returns the single output of a program as the new value of a resource, and
// TransformResource commits it; Bisect finds the first revision where a predicate became true.
//
// # How a query runs
//
//  1. The program is parsed, checked against the policy (below), classified and compiled once, then cached (an LRU
//     keyed by program text and parameter names). A compiled gojq program is safe to run from many goroutines.
//  2. Pushdown: a leading literal path (.items[5].name, .["x"], .[-1], .[$param]) — the whole program or the
//     left side of its top-level pipe, never a binding "… as $x |" — is read by pointer (revision.Forest.Get) before
//     anything is materialised, one step at a time, with jq's semantics: a missing member or an index out of range
//     gives null, a step jq would reject stops the descent and the rest of the path runs in jq, which reports the
//     error. Only the subtree is materialised or shipped. Result.Plan.Pointer names what was read.
//  3. Route (Result.Plan.Route):
//     - "read": the program is only a literal path. No jq runs; the value's JSON is streamed from its nodes.
//     - "in-process": the program is bounded (bounded.go: no construct can build a value larger than the input
//     plus the program, no single operation runs long). The input is materialised as Go values and cached by
//     Value.Hash (an LRU bounded in estimated bytes, 4 bytes of heap per byte of JSON; contents never change;
//     concurrent misses materialise once), and gojq runs under the query's deadline.
//     - "in-process", split (Plan.Split): a program that decomposes over the elements of the array it reads —
//     .[] | f, [.[] | f] | g, map(f) | g, [.[] | f] | length, add — with f bounded and finite, and g bounded or
//     length or add (split.go). f runs on each leaf of the array's tree, in parallel, on only the members it reads,
//     and each node's result is cached by hash (in the cache of materialised values): after a commit only the new
//     nodes run. Not under IsolateAll.
//     - "worker": everything else (Isolate decides; IsolateAll sends every program, IsolateNone none). The input's
//     JSON is streamed to a worker process, which decodes it while it arrives and runs the program.
//  4. Paging: results are encoded as they come; a page ends at Limit results (≤ MaxResults) or before the result
//     that would take it past MaxOutputBytes, with a cursor. A single result over MaxOutputBytes is ErrLimit.
//
// No jq runs inside a bbolt transaction: inputs are read through the forest's node cache and short catalog reads,
// then the program runs on Go values or in another process.
//
// # Cursors
//
// A cursor is base64url of (version, revision, offset, 128-bit HMAC-SHA256 tag). The tag covers the offset and
// revision and everything the answer depends on: program, parameters (canonical JSON), resource, the revision's
// root hash (so the same revision number in another database does not match) and the caller. An altered, forged,
// truncated or transplanted cursor is refused with ErrQuery. Revisions are immutable, so a cursor never goes stale:
// the next page re-runs the program on the same revision and skips what was returned (a page at offset k costs
// evaluating k results; no iterator is held between calls). The key is random per Engine unless Options.CursorKey
// is set. CursorRevision reads a cursor's revision without the key.
//
// # Policy
//
// Programs are compiled with gojq.WithEnvironLoader returning nothing ($ENV and env are {}), no module loader and no
// input iterator. Before that, the parsed program is walked and refused (ErrQuery, caret under the name) when it
// imports or includes a module, or names input, inputs, input_filename, input_line_number, debug, stderr, halt,
// halt_error, modulemeta, get_search_list, get_prog_origin, get_jq_origin or $__prog_args — anywhere, including
// inside definitions and string interpolations, and as the name of a definition. Walking the AST was chosen over
// gojq.WithFunction overrides because input, halt and halt_error are gojq internals that a custom function cannot
// replace, and a refusal that names the function is clearer than a stub that fails at run time.
//
// # Containment
//
// Every query has a deadline (Options.Timeout, or the caller's if earlier), a cap on results per page, on bytes
// per page and per result, on program and parameter size, and on a transform's output.
//
// Programs that are not bounded run in worker processes: re-executions of the current binary (WorkerMain) with an
// empty environment, a pipe protocol (proto.go), and a memory limit. Per query the worker sets RLIMIT_DATA to its
// current data segment plus Options.WorkerMemory plus 8 bytes per byte of input, sets a soft Go memory limit below
// it, and caps goroutine stacks at 128 MiB. A program that allocates past it ("x" * 2000000000) or recurses past
// it (tojson of a value nested 10^6 deep: a fatal stack overflow in-process) kills only its worker; the engine
// reports ErrLimit and starts another. The worker stops at the deadline by itself (gojq checks its context between
// operations); one that does not answer within the deadline plus 150 ms is killed (ErrTimeout). A worker is
// retired after a query whose input was over WorkerMemory/16 (its limit was raised for it) or once its data segment
// has grown by WorkerMemory/2 since it started (Go keeps heap it has mapped), so a limit means about the same for
// every query.
// Pdeathsig ends workers with the server. Hostile inputs to the bounded subset stay in-process and end at the
// deadline; their memory is at most a small multiple of the input's. An input holding a number of more than 10,000
// characters runs in a worker whatever the program: gojq parses such a number with big.Int.SetString, quadratic in
// one uninterruptible step (a million digits: 3 s; four million: 31 s).
//
// What is not contained: on systems other than Linux there is no memory limit for workers (they are still separate
// processes killed at the deadline). Under IsolateNone nothing is. CPU is not partitioned: up to Workers hostile
// programs can keep that many cores busy until their deadlines. The in-process classification is the line of
// defence for bounded programs: a gojq builtin on the allowed list that allocated super-linearly would be a hole.
// Worker processes run with the server's user and file-system rights (jq has no file or network builtins left).
//
// # Errors
//
// Errors wrap ErrQuery (QUERY_ERROR), ErrTimeout (QUERY_TIMEOUT), ErrLimit (LIMIT_EXCEEDED) or ErrUnavailable, or
// are snapshots.NotFoundError for a missing resource or revision. A *QueryError carries the program and the byte
// offset of the fault (parse errors; unknown functions and variables; refused functions; error(…); "f cannot be
// applied to …"), and its Error shows the program — cut to 60 characters either side of the fault — with a caret
// under it. Values from the data are quoted by gojq at most 30 bytes; values passed to error(…) at most 200.
//
// # Findings (gojq v0.12.20)
//
//   - del and delpaths modify their input (deleteEmpty rewrites every map it walks). On a materialised value shared
//     by concurrent queries that is a concurrent map write, a fatal error. Only bounded programs (which cannot call
//     them) share cached values; other in-process programs (IsolateNone) get a private copy.
//   - A number text that is neither an int64 nor a float is parsed with big.Int.SetString, quadratic in its length,
//     on every comparison or arithmetic operation; a stored number of megabytes of digits stalls one operation for
//     minutes. Hence the long-number check above, and tonumber is not in the bounded subset.
//   - Under RLIMIT_DATA the Go runtime dies in several ways when mapping fails: "out of memory", "cannot allocate
//     memory", "out of memory allocating heap arena metadata", and once a SIGSEGV in the garbage collector. All end
//     the worker only.
package query

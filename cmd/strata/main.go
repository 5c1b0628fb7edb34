// Command strata is the command line for Strata, a copy-on-write, versioned JSON document store for AI agents.
//
// It is a thin adapter over the library (packages snapshots, query, mcp and audit): the commands of docs/design.md §5,
// the MCP servers (strata mcp over stdio, strata serve over HTTP), and strata demo, which plays an agent's session
// through the MCP protocol on a demo database.
package main

import (
	"os"

	"github.com/strata-db/strata/query"
)

func main() {
	// The query engine's workers are re-executions of this binary: WorkerMain serves as one when started as one,
	// and returns at once otherwise.
	query.WorkerMain()
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

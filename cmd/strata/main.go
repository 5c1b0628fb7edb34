// Command strata is the command line for Strata, a copy-on-write, versioned JSON document store for AI agents.
//
// Today it offers `strata demo`, which plays the storage engine's story on an embedded catalogue, and
// `strata version`. The rest of the command set (DESIGN.md §5) arrives with the versioned database and MCP server.
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

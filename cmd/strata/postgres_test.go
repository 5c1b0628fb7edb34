package main

import (
	"testing"

	"github.com/strata-db/strata/internal/pgtest"
)

// TestCLIScriptPostgres plays the command-line session of testdata/cli.txt with its databases in PostgreSQL
// (STRATA_DATA a postgres:// URL): every command answers as it does on a data directory.
func TestCLIScriptPostgres(t *testing.T) { playScript(t, pgtest.URL(t)) }

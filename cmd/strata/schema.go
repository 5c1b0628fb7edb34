package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/snapshots"
)

// newSchemaCommand is `strata schema`: set, show and remove the JSON Schemas that guard resources.
func newSchemaCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Set, show and remove the JSON Schemas that guard resources",
		Long: `A resource may have a JSON Schema (draft 2020-12), set by the operator: every write that would leave
the resource invalid against it is refused and writes nothing, whoever makes it (an agent over MCP, or
this command line: import, restore, revert, promote), with the violations listed (exit 2 here,
SCHEMA_VIOLATION over MCP). A schema is configuration of the database, not part of its history: a
revert, restore or promote never changes one. Each change is recorded, with who made it and when, and
shown by strata log and in the audit log. A schema must be self-contained: references to other
documents (http, file) are refused.`,
		Args: cobra.NoArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error { return cmd.Help() }),
	}
	cmd.AddCommand(newSchemaSetCommand(g), newSchemaShowCommand(g), newSchemaRmCommand(g))
	return cmd
}

// schemaJSON is a schema as the schema commands print it with --json.
type schemaJSON struct {
	Resource string    `json:"resource"`
	Schema   any       `json:"schema"`
	Digest   string    `json:"digest"`
	SetBy    string    `json:"set_by"`
	SetAt    time.Time `json:"set_at"`
}

func schemaOf(rec snapshots.SchemaRecord) schemaJSON {
	return schemaJSON{Resource: rec.Resource, Schema: rawJSON(rec.Schema), Digest: rec.Digest, SetBy: rec.SetBy, SetAt: rec.SetAt}
}

// rawJSON keeps JSON text as it is in an encoded answer.
type rawJSON []byte

func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }

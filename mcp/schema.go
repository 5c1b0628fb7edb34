package mcp

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Schemas are written by hand, as plain maps, so that nothing is inferred, and so that every LLM API and MCP client
// accepts them (docs/design.md §3.4): every object has non-empty properties (but the arguments of a tool that takes none: {}) and is closed
// (additionalProperties: false, which OpenAI and Anthropic accept and which mcp-go hosts keep), every array has items,
// a type is always one name (never a list: Gemini and VS Code refuse or mangle them), free-form JSON is an untyped
// schema with a description (the form OpenAI, Gemini and Anthropic all take), and no subschema is the bare boolean
// `true` (the TypeScript SDK rejects a whole tools/list that holds one). An output schema is a plain {type: object,
// properties, required}: it describes the tool's answer; an error result carries no structured content, so it need
// not match. They use only type, properties, required, additionalProperties, items, enum and description, which
// draft-07 and 2020-12 read the same way, and compile under ajv's strict mode (TestSchemasPortable, TestSchemasAjv).
// Maps marshal with sorted keys, so tools/list is byte-identical across runs.

type schema = map[string]any

// kind is the type of a tool argument.
type kind int

const (
	kString  kind = iota // a JSON string
	kInteger             // a non-negative integer, written without fraction or exponent
	kBoolean             // true or false
	kTime                // an RFC 3339 timestamp, as a string
	kJSON                // any JSON value, kept as its exact raw text
	kPatch               // an array of RFC 6902 operations, kept as its exact raw text
	kParams              // jq variables: an object of any JSON values (or null for none), kept as its exact raw text
	kResolve             // promote's resolutions: an object from JSON Pointer to "branch" or "into" (resolve.go)
)

// param is one argument of a tool: its input schema and its decoding come from this one description.
type param struct {
	name     string
	kind     kind
	desc     string
	required bool
	min, max uint64 // for integers; max 0 means none
	enum     []string
}

func (p param) schema() schema {
	s := schema{}
	if p.desc != "" {
		s["description"] = p.desc
	}
	switch p.kind {
	case kString:
		s["type"] = "string"
		if len(p.enum) > 0 {
			s["enum"] = p.enum
		}
	case kTime:
		s["type"] = "string"
	case kInteger:
		// No minimum or maximum: several clients strip them; the decoder checks the range and says it.
		s["type"] = "integer"
	case kBoolean:
		s["type"] = "boolean"
	case kJSON:
		// Any JSON value: untyped, described. The decoder keeps its exact text.
	case kParams, kResolve:
		// An object whose member names are the caller's variables (or paths) cannot be a closed object schema, and
		// an open object with no properties is refused by Gemini: untyped, described; the decoder checks it.
	case kPatch:
		s["type"] = "array"
		s["items"] = object([]string{"op", "path"},
			prop{"op", schema{"type": "string", "enum": []string{"add", "remove", "replace", "move", "copy", "test"}}},
			prop{"path", schema{"type": "string"}},
			prop{"from", schema{"type": "string", "description": "for move, copy"}},
			prop{"value", anyS("for add, replace, test")},
			prop{"old_value", anyS("must still be the value at path (as diff shows it)")},
		)
	default:
		panic(fmt.Sprintf("param %s: unknown kind %d", p.name, p.kind))
	}
	if (p.kind == kJSON || p.kind == kParams || p.kind == kResolve) && p.desc == "" {
		panic("param " + p.name + ": free-form JSON needs a description")
	}
	return s
}

// inputSchema is the closed object schema of a tool's arguments. A tool without arguments has an empty properties
// object: OpenAI refuses a function whose parameters have no properties member ("object schema missing
// properties"), and to Gemini's protocol buffers an absent map and an empty one are the same.
func inputSchema(params []param) schema {
	s := schema{"type": "object", "additionalProperties": false}
	if len(params) == 0 {
		s["properties"] = schema{}
		return s
	}
	props := schema{}
	var req []string
	for _, p := range params {
		props[p.name] = p.schema()
		if p.required {
			req = append(req, p.name)
		}
	}
	s["properties"] = props
	if len(req) > 0 {
		s["required"] = req
	}
	return s
}

// prop is one property of an output object.
type prop struct {
	name string
	s    schema
}

// object is a closed object schema with the given properties (at least one).
func object(required []string, props ...prop) schema {
	if len(props) == 0 {
		panic("an object schema needs properties")
	}
	m := schema{}
	for _, p := range props {
		if _, dup := m[p.name]; dup {
			panic("duplicate property " + p.name)
		}
		m[p.name] = p.s
	}
	s := schema{"type": "object", "properties": m, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// closedObject is a described closed object schema, for a nested object.
func closedObject(desc string, required []string, props ...prop) schema {
	s := object(required, props...)
	s["description"] = desc
	return s
}

func strS(desc string) schema  { return schema{"type": "string", "description": desc} }
func intS(desc string) schema  { return schema{"type": "integer", "description": desc} }
func boolS(desc string) schema { return schema{"type": "boolean", "description": desc} }

// anyS is any JSON value: an untyped schema with a description (not a type list, not the bare `true`).
func anyS(desc string) schema { return schema{"description": desc} }
func arrS(desc string, items schema) schema {
	return schema{"type": "array", "description": desc, "items": items}
}
func strArrS(desc, item string) schema { return arrS(desc, strS(item)) }

// outputSchema is the schema of a tool's structured content: a plain closed object with the fields the answer
// always has as required. It describes the answer only: an error result (isError) carries no structured content
// (its fields are in the text and in the result's _meta, errorMetaKey), so clients that validate structured content
// against the output schema, as the TypeScript SDK does, pass.
func outputSchema(required []string, props ...prop) schema {
	return object(required, props...)
}

// intersect is the names in both lists, in a's order.
func intersect(a, b []string) []string {
	var out []string
	for _, n := range a {
		if slices.Contains(b, n) {
			out = append(out, n)
		}
	}
	return out
}

// mustJSON marshals a schema.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

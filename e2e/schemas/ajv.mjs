// Compiles every input and output schema of a tools/list with ajv in strict mode, as JSON Schema 2020-12 and as
// draft-07 (clients validate with either). Run by mcp/tools_test.go TestSchemasAjv:
//   node e2e/schemas/ajv.mjs FILE
// where FILE is a JSON object whose values are tools/list arrays (mcp/testdata/tools_list.golden.json's shape).
// It prints one line per schema that does not compile, and exits 1 if there is any.
import { readFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020.js';
import Ajv07 from 'ajv';

const file = process.argv[2];
if (!file) {
  console.error('usage: node ajv.mjs FILE');
  process.exit(2);
}
const lists = JSON.parse(readFileSync(file, 'utf8'));
const validators = { '2020-12': Ajv2020, 'draft-07': Ajv07 };
let schemas = 0;
const failures = [];
for (const [list, tools] of Object.entries(lists)) {
  for (const tool of tools) {
    for (const which of ['inputSchema', 'outputSchema']) {
      if (tool[which] === undefined) continue;
      schemas++;
      for (const [draft, Ajv] of Object.entries(validators)) {
        // strict: true turns on strictSchema, strictTypes, strictTuples and strictRequired; a warning is an error.
        const ajv = new Ajv({ strict: true, allErrors: true, logger: false });
        try {
          ajv.compile(tool[which]);
        } catch (e) {
          failures.push(`${list} ${tool.name}.${which} (${draft}): ${e.message}`);
        }
      }
    }
  }
}
for (const f of failures) console.log(f);
console.log(`${schemas} schemas, ${failures.length} failures`);
process.exit(failures.length > 0 ? 1 : 0);

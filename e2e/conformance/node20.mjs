// Preloaded with `node --import ./conformance/node20.mjs` before @modelcontextprotocol/conformance on Node 20/21.
// The suite's bundle imports `globSync` from 'fs' (added in Node 22) at the top level, but only its `tier-check`
// command uses it, and strata does not run that command. On Node 20 the import alone is a SyntaxError, so a resolve
// hook (fs-hooks.mjs) points the bundle's `fs` import at fs-shim.mjs, which re-exports node:fs plus a globSync that
// throws if it is ever called. On Node 22+ fs.globSync exists and nothing is registered.
import fs from 'node:fs';
import { register } from 'node:module';

if (typeof fs.globSync !== 'function') {
  register('./fs-hooks.mjs', import.meta.url);
}

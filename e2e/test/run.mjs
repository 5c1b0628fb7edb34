// Runs the tests with JSON.rawJSON available, so that a test can send a payload's exact text (a 20-digit integer,
// 1.0) through the SDK's own JSON serialisation. Node 20 has it behind a V8 flag; newer Nodes have it by default.
import { spawnSync } from 'node:child_process';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const flags = typeof JSON.rawJSON === 'function' ? [] : ['--harmony-json-parse-with-source'];
const here = dirname(fileURLToPath(import.meta.url));
const r = spawnSync(process.execPath, [...flags, '--test', '--test-concurrency=1', `${here}/strata.test.mjs`], {
  stdio: 'inherit',
});
process.exit(r.status ?? 1);

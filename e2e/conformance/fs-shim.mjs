// node:fs with a globSync for Node < 22, for the conformance suite only (see node20.mjs).
import fs from 'node:fs';

export * from 'node:fs';
export default fs;

export function globSync() {
  throw new Error('fs.globSync needs Node 22 or later (strata e2e shim: only the conformance tier-check command uses it)');
}

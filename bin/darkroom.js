#!/usr/bin/env node
// Thin launcher: the CLI is compiled to dist/ by `npm run build` (run by `npm ci` via prepare).
import('../dist/cli/entry.js').catch((err) => {
  if (err && err.code === 'ERR_MODULE_NOT_FOUND') {
    process.stderr.write('darkroom: not built yet; run `npm run build` first\n');
    process.exit(2);
  }
  throw err;
});

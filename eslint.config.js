// @ts-check
/**
 * Lint, and the import rules of docs/ARCHITECTURE.md § Import rules as machine checks:
 * a folder imports only the folders listed for it; only ledger/ runs SQL; only clock.ts
 * reads the time or defers; below cli/ nothing prints, exits or hooks process events.
 */
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

/** Every part but the simulator and the entries: what the library and the commands are built on. */
const ABOVE_RUN = [
  'clock',
  'spec',
  'log',
  'config',
  'ledger',
  'api',
  'scheduler',
  'inputs',
  'outputs',
  'stages',
  'progress',
  'report',
  'review',
  'run',
  'metadata',
];

/** Each folder of src/ and the folders it may import (besides itself); errors.ts every part may import. */
const MAY_IMPORT = {
  spec: [],
  // Every part imports errors.ts; it imports only types of the parts whose facts its errors carry (below).
  errors: ['api', 'ledger', 'run'],
  // How text from outside is shown (names, captions, messages): imported by every part.
  display: [],
  // mkdir -p without Node's loop on procfs, for every part that makes folders.
  fsdirs: [],
  log: ['clock', 'spec'],
  config: ['clock', 'spec'],
  ledger: ['clock', 'spec'],
  api: ['clock', 'spec'],
  sim: ['clock', 'spec'],
  // ExifTool: the inputs' metadata on the outputs, knowing nothing of the ledger.
  metadata: ['clock', 'spec'],
  scheduler: ['clock', 'spec', 'log', 'config', 'api', 'ledger'],
  outputs: ['clock', 'spec', 'log', 'config', 'ledger', 'metadata'],
  inputs: ['clock', 'spec', 'log', 'config', 'ledger', 'outputs'],
  stages: ['clock', 'spec', 'log', 'config', 'ledger', 'api', 'scheduler', 'inputs', 'outputs'],
  progress: ['clock', 'spec', 'ledger'],
  report: ['clock', 'spec', 'log', 'config', 'ledger'],
  // The review page's server: the ledger's photos and decisions, previews of their files.
  review: ['clock', 'spec', 'log', 'config', 'ledger'],
  run: ['clock', 'spec', 'log', 'config', 'ledger', 'api', 'scheduler', 'inputs', 'outputs', 'stages', 'progress', 'metadata'],
  // The library: what the public entry hands out, built on every part but the simulator.
  lib: [...ABOVE_RUN],
  // Each command as a function that returns what to print and its exit code (cli/ prints and exits).
  commands: [...ABOVE_RUN, 'lib'],
  // The public entries (package.json `exports`): `darkroom` and `darkroom/sim`.
  index: ['lib', 'run', 'commands'],
  simulator: ['sim'],
  // The CLI: the commands' functions, the simulator's public entry, the clock it installs.
  cli: ['commands', 'simulator', 'clock', 'errors', 'display'],
};
for (const [part, allowed] of Object.entries(MAY_IMPORT)) if (!['errors', 'fsdirs', 'display'].includes(part)) allowed.push('errors');
for (const [part, allowed] of Object.entries(MAY_IMPORT))
  if (!['errors', 'spec', 'fsdirs', 'cli', 'display', 'clock'].includes(part)) allowed.push('display');
// fsdirs.ts: log, the ledger and every part above the ledger make folders.
for (const [part, allowed] of Object.entries(MAY_IMPORT))
  if (['log', 'ledger'].includes(part) || allowed.includes('ledger')) allowed.push('fsdirs');
const PARTS = [
  'clock',
  'spec',
  'errors',
  'display',
  'fsdirs',
  'log',
  'config',
  'ledger',
  'api',
  'sim',
  'metadata',
  'scheduler',
  'outputs',
  'inputs',
  'stages',
  'progress',
  'report',
  'review',
  'run',
  'lib',
  'commands',
  'index',
  'simulator',
  'cli',
];
const FILES = new Set(['clock', 'log', 'errors', 'display', 'fsdirs', 'index', 'simulator']);
const pathOf = (part) => (FILES.has(part) ? `./src/${part}.ts` : `./src/${part}`);

const zones = Object.entries(MAY_IMPORT).flatMap(([part, allowed]) =>
  PARTS.filter((p) => p !== part && !allowed.includes(p)).map((p) => ({
    target: pathOf(part),
    from: pathOf(p),
    message: `${part}/ may not import ${p} (docs/ARCHITECTURE.md § Import rules)`,
  })),
);
// clock.ts imports nothing of src/.
zones.push({
  target: './src/clock.ts',
  from: './src',
  except: ['./clock.ts'],
  message: 'clock.ts imports nothing of src/ (docs/ARCHITECTURE.md § Import rules)',
});

const TIME = [
  {
    selector: "CallExpression[callee.object.name='Date'][callee.property.name='now']",
    message: 'time only through src/clock.ts (docs/ARCHITECTURE.md § Time and simulation)',
  },
  {
    selector: 'CallExpression[callee.name=/^(setTimeout|setInterval|setImmediate)$/]',
    message: 'deferral only through src/clock.ts (docs/ARCHITECTURE.md § Time and simulation)',
  },
  {
    selector: "NewExpression[callee.name='Date'][arguments.length=0]",
    message: 'time only through src/clock.ts (docs/ARCHITECTURE.md § Time and simulation)',
  },
];
const EDGE = [
  {
    selector: "MemberExpression[object.name='process'][property.name=/^(stdout|stderr|stdin|exit|on|once|off|exitCode)$/]",
    message: 'below cli/ nothing prints, exits or hooks process events (docs/ARCHITECTURE.md § Import rules)',
  },
  { selector: "MemberExpression[object.name='console']", message: 'below cli/ nothing prints (docs/ARCHITECTURE.md § Import rules)' },
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'test-results/**', 'out/**', 'scratch/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    // `../api/x.js` names `../api/x.ts`: without TypeScript's resolution the path rules see nothing.
    settings: { 'import-x/resolver-next': [createTypeScriptImportResolver({ project: 'tsconfig.json' })] },
    rules: {
      // TypeScript checks names itself (typescript-eslint's advice: no-undef misreads globals' types).
      'no-undef': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', destructuredArrayIgnorePattern: '^_' },
      ],
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: {
      'import-x/no-restricted-paths': ['error', { zones }],
      'no-restricted-imports': [
        'error',
        { paths: [{ name: 'better-sqlite3', message: 'only src/ledger/ runs SQL (docs/ARCHITECTURE.md § Import rules)' }] },
      ],
      'no-restricted-syntax': ['error', ...TIME, ...EDGE],
    },
  },
  { files: ['src/ledger/**/*.ts'], rules: { 'no-restricted-imports': 'off' } },
  {
    files: ['src/errors.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['./*', '../*'],
              allowTypeImports: true,
              message: 'errors.ts imports types only: every part imports it (docs/ARCHITECTURE.md § Import rules)',
            },
          ],
        },
      ],
    },
  },
  // Tests match terminal output: escape codes and runs of spaces are what they look for.
  // Tests parse the simulator's JSON freely (`any`), and the .mjs children run in plain Node.
  { files: ['test/**/*.ts'], rules: { 'no-control-regex': 'off', 'no-regex-spaces': 'off', '@typescript-eslint/no-explicit-any': 'off' } },
  { files: ['**/*.mjs', '**/*.js'], languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly' } } },
  { files: ['src/clock.ts'], rules: { 'no-restricted-syntax': ['error', ...EDGE] } },
  { files: ['src/cli/**/*.ts'], rules: { 'no-restricted-syntax': ['error', ...TIME] } },
);

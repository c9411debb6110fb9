// @ts-check
/**
 * Lint, and the import rules of docs/ARCHITECTURE.md § Import rules as machine checks:
 * a folder imports only the folders listed for it; no import circle among src/ files, type-only
 * imports included (eslint.cycles.js); only ledger/ and keystore/ run SQL; only clock.ts reads the time or
 * defers; below cli/ nothing prints, exits or hooks process events.
 */
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import { noImportCycle } from './eslint.cycles.js';

/** Every part but the simulator and the entries: what the library and the commands are built on. */
const ABOVE_RUN = [
  'clock',
  'spec',
  'log',
  'config',
  'ledger',
  'keystore',
  'api',
  'scheduler',
  'inputs',
  'outputs',
  'progress',
  'report',
  'review',
  'run',
  'metadata',
];

/** Each folder of src/ and the folders it may import (besides itself); errors.ts every part may import. */
const MAY_IMPORT = {
  spec: [],
  // Every part imports errors.ts, so it imports nothing of src/ (the facts its errors carry are declared in it).
  errors: [],
  // How text from outside is shown (names, captions, messages): imported by every part.
  display: [],
  // mkdir -p without Node's loop on procfs, for every part that makes folders.
  fsdirs: [],
  log: ['clock', 'spec'],
  config: ['clock', 'spec'],
  ledger: ['clock', 'spec'],
  // Each API key's machine-wide store: a SQLite file opened as the ledger's are.
  keystore: ['clock', 'spec', 'ledger'],
  api: ['clock', 'spec'],
  sim: ['clock', 'spec'],
  // ExifTool: the inputs' metadata on the outputs, knowing nothing of the ledger.
  metadata: ['clock', 'spec'],
  scheduler: ['clock', 'spec', 'log', 'config', 'api', 'ledger', 'keystore'],
  outputs: ['clock', 'spec', 'log', 'config', 'ledger', 'metadata'],
  inputs: ['clock', 'spec', 'log', 'config', 'ledger', 'outputs'],
  progress: ['clock', 'spec', 'ledger'],
  report: ['clock', 'spec', 'log', 'config', 'ledger'],
  // The review page's server: the ledger's photos and decisions, previews of their files.
  review: ['clock', 'spec', 'log', 'config', 'ledger'],
  run: ['clock', 'spec', 'log', 'config', 'ledger', 'keystore', 'api', 'scheduler', 'inputs', 'outputs', 'progress', 'metadata'],
  // The library: what the public entry hands out, built on every part but the simulator.
  lib: [...ABOVE_RUN],
  // Each command as a function that returns what to print and its exit code (cli/commands/; cli/ prints and exits).
  commands: [...ABOVE_RUN, 'lib'],
  // The public entries (package.json `exports`): `darkroom` and `darkroom/sim`.
  index: ['lib', 'run'],
  simulator: ['sim'],
  // The CLI (the files of src/cli/): the commands' functions beside it, the simulator's public entry, the clock it installs.
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
  'keystore',
  'api',
  'sim',
  'metadata',
  'scheduler',
  'outputs',
  'inputs',
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
/** The commands live beside the CLI that calls them (src/cli/commands/); the CLI itself is the files of src/cli/. */
const PATHS = { commands: './src/cli/commands', cli: './src/cli/*.ts' };
const pathOf = (part) => PATHS[part] ?? (FILES.has(part) ? `./src/${part}.ts` : `./src/${part}`);

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
    plugins: { darkroom: { rules: { 'no-import-cycle': noImportCycle } } },
    rules: {
      'import-x/no-restricted-paths': ['error', { zones }],
      'darkroom/no-import-cycle': 'error',
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'better-sqlite3', message: 'only src/ledger/ and src/keystore/ run SQL (docs/ARCHITECTURE.md § Import rules)' }],
        },
      ],
      'no-restricted-syntax': ['error', ...TIME, ...EDGE],
    },
  },
  { files: ['src/ledger/**/*.ts', 'src/keystore/**/*.ts'], rules: { 'no-restricted-imports': 'off' } },
  {
    files: ['src/errors.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['./*', '../*'],
              message: 'errors.ts imports nothing of src/: every part imports it (docs/ARCHITECTURE.md § Import rules)',
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
  { files: ['src/cli/*.ts'], rules: { 'no-restricted-syntax': ['error', ...TIME] } },
);

/**
 * The package as a studio installs it: `npm pack`, the tarball installed into an empty
 * project that has only TypeScript and @types/node, a strict consumer type-checked against
 * the shipped .d.ts and run against `darkroom/sim`, every TypeScript example of README and
 * docs/ type-checked too, and the `darkroom` bin run from the install.
 *
 * better-sqlite3 is installed with --ignore-scripts and given the repo's own compiled
 * addon (node_modules/better-sqlite3/build): its install script compiles SQLite from source
 * here (no prebuilt binary for this platform is reachable offline), ~2 minutes of a busy
 * 2-core machine, which would be most of this test's time and prove nothing about darkroom.
 * Same version, same Node: the addon is the one `npm ci` built. sharp needs no script: its
 * prebuilt binaries are optional dependencies, installed as packages.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FIXTURE = fileURLToPath(new URL('./fixture/', import.meta.url));
const versionOf = (name: string) =>
  (JSON.parse(readFileSync(path.join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;

let work: string;
let project: string;

/** npm quietly: no audit, no funding notes, no update check. */
async function npm(args: string[], cwd: string): Promise<{ stdout: string; stderr: string }> {
  return run('npm', [...args, '--no-audit', '--no-fund', '--no-update-notifier'], { cwd, maxBuffer: 16 * 1024 * 1024 });
}

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'darkroom-pack-'));
  project = path.join(work, 'project');
  mkdirSync(project);
  // The build `npm test` made (pretest), as every CLI test runs it: --ignore-scripts, no second build.
  expect(existsSync(path.join(ROOT, 'dist', 'index.d.ts'))).toBe(true);
  await npm(['pack', '--ignore-scripts', '--pack-destination', work], ROOT);
  const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'))!;
  writeFileSync(
    path.join(project, 'package.json'),
    JSON.stringify({
      name: 'studio-tool',
      private: true,
      type: 'module',
      devDependencies: { typescript: versionOf('typescript'), '@types/node': versionOf('@types/node') },
    }),
  );
  const install = ['install', '--ignore-scripts', path.join(work, tarball)];
  // From the npm cache; a package the cache lacks is fetched from the registry once.
  await npm([...install, '--offline'], project).catch(() => npm([...install, '--prefer-offline'], project));
  cpSync(path.join(ROOT, 'node_modules', 'better-sqlite3', 'build'), path.join(project, 'node_modules', 'better-sqlite3', 'build'), {
    recursive: true,
  });
}, 240_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the packed tarball', () => {
  it('carries built JS, .d.ts types and the migrations, and no source or tests', () => {
    const pkg = path.join(project, 'node_modules', 'darkroom');
    for (const f of [
      'dist/index.js',
      'dist/index.d.ts',
      'dist/simulator.js',
      'dist/simulator.d.ts',
      'dist/cli/entry.js',
      'bin/darkroom.js',
      'migrations/001_initial.sql',
      'README.md',
    ]) {
      expect(existsSync(path.join(pkg, f)), f).toBe(true);
    }
    expect(existsSync(path.join(pkg, 'src'))).toBe(false);
    expect(existsSync(path.join(pkg, 'test'))).toBe(false);
    // Without src/ beside them, source maps are of use only if they carry the sources.
    const map = JSON.parse(readFileSync(path.join(pkg, 'dist', 'index.js.map'), 'utf8')) as {
      sources: string[];
      sourcesContent?: string[];
    };
    expect(map.sourcesContent?.length).toBe(map.sources.length);
    expect(map.sourcesContent?.[0]).toContain('export async function run(');
    // Only the runtime dependencies came with it: none of darkroom's devDependencies.
    expect(existsSync(path.join(project, 'node_modules', 'vitest'))).toBe(false);
    expect(existsSync(path.join(project, 'node_modules', 'eslint'))).toBe(false);
  });

  it('its darkroom bin runs', async () => {
    const { stdout } = await run(path.join(project, 'node_modules', '.bin', 'darkroom'), ['--version'], { cwd: project });
    expect(stdout.trim()).toBe((JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version);
  });
});

/**
 * Every ```ts block in README.md and docs/, as the reader copies it: each one a file of the
 * consumer project, so an example that no longer compiles against the shipped types fails here.
 */
function docExamples(): { name: string; code: string }[] {
  const pages = ['README.md', ...docPages(path.join(ROOT, 'docs'))];
  const out: { name: string; code: string }[] = [];
  for (const page of pages) {
    const text = readFileSync(path.join(ROOT, page), 'utf8');
    let i = 0;
    for (const m of text.matchAll(/```ts\n([\s\S]*?)```/g))
      out.push({ name: `doc-${page.replace(/[^a-z0-9]+/gi, '-')}-${i++}.ts`, code: m[1]! });
  }
  return out;
}

function docPages(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? docPages(path.join(dir, e.name)) : e.name.endsWith('.md') ? [path.relative(ROOT, path.join(dir, e.name))] : [],
  );
}

describe('a strict TypeScript program built on it', () => {
  it('type-checks against the shipped types (every export), as does every TypeScript example in the docs', async () => {
    cpSync(path.join(FIXTURE, 'consumer.ts'), path.join(project, 'consumer.ts'));
    const examples = docExamples();
    expect(examples.length).toBeGreaterThan(0);
    for (const e of examples) writeFileSync(path.join(project, e.name), e.code);
    writeFileSync(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noUncheckedIndexedAccess: true,
          types: ['node'],
          outDir: 'build',
          skipLibCheck: false,
        },
        files: ['consumer.ts', ...examples.map((e) => e.name)],
      }),
    );
    const tsc = path.join(project, 'node_modules', '.bin', 'tsc');
    const r = await run(tsc, ['-p', 'tsconfig.json'], { cwd: project }).catch((e: { stdout: string; stderr: string }) => e);
    expect(`${r.stdout}${r.stderr}`).toBe('');
    expect(existsSync(path.join(project, 'build', 'consumer.js'))).toBe(true);
  }, 120_000);

  it('runs 12 photos against darkroom/sim: events, an abort that settles and resumes with one create per photo, LOCKED beside a run, nothing on stdout, no signal handler', async () => {
    const dir = path.join(work, 'studio');
    mkdirSync(path.join(dir, 'in'), { recursive: true });
    for (let i = 0; i < 12; i++) {
      await sharp({ create: { width: 48 + i, height: 32, channels: 3, background: { r: 20 * i, g: 90, b: 160 } } })
        .jpeg()
        .toFile(path.join(dir, 'in', `frame-${String(i).padStart(2, '0')}.jpg`));
    }
    // The same job as a file, for loadJob: its paths relative to its folder.
    const yamlFile = path.join(dir, 'jobs.yaml');
    writeFileSync(yamlFile, 'input:\n  dir: ./in\noutput:\n  dir: ./out\nsteps:\n  - capability: enhance\n');
    const resultFile = path.join(work, 'result.json');
    // The job names its service and key itself: none from the environment of whoever runs the tests.
    const { DARKROOM_BASE_URL: _url, DARKROOM_API_KEY: _key, ...outer } = process.env;
    const env = { ...outer, DARKROOM_STATE_DIR: path.join(work, 'state') };
    await run(process.execPath, [path.join(project, 'build', 'consumer.js'), dir, yamlFile, resultFile], { cwd: project, env });
    const r = JSON.parse(readFileSync(resultFile, 'utf8'));

    expect(r.planned).toEqual({ photos: 12, calls: 36, hours: expect.any(Number), credits: 12 });
    // The abort: the run resolved with what it had done, the rest pending.
    expect(r.first).toMatchObject({ interrupted: true, exitCode: 130, total: 12 });
    expect(r.first.done).toBeGreaterThanOrEqual(3);
    expect(r.first.pending).toBeGreaterThan(0);
    expect(r.locked).toBe('LOCKED');
    expect(r.eventTypes).toEqual(['done', 'summary']);
    // The next run finished the job; the simulator saw one create per photo over both runs.
    expect(r.second).toMatchObject({ total: 12, done: 12, failed: 0, held: 0, pending: 0, interrupted: false, exitCode: 0 });
    expect(r.doneEvents).toHaveLength(12 - r.first.done);
    for (const e of r.doneEvents) {
      expect(e.outputs).toEqual([e.input]);
      expect(existsSync(path.join(dir, 'out', e.input))).toBe(true);
    }
    expect(r.creates).toBe(12);
    expect(r.createsPerSource).toEqual(new Array(12).fill(1));
    expect(r.status).toEqual({ total: 12, done: 12, failed: 0, held: 0, pending: 0 });
    expect(r.retried).toEqual({ recreated: 0, repolled: 0, downloads: 0, note: null });
    expect(r.errors).toEqual({ missing: 'NO_LEDGER', invalid: 'CONFIG', preAborted: 'ABORTED', badKey: 'ACCOUNT 0' });
    expect(r.accountExit).toBe(3);
    // Nothing of the process was touched.
    expect(r.written).toEqual({ stdout: 0, stderr: 0 });
    expect(r.listeners.after).toEqual(r.listeners.before);
    console.log(`pack test: the aborted run settled ${r.first.done} done, ${r.first.pending} pending, ${r.settleMs} ms after the abort`);
  }, 120_000);
});

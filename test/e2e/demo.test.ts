import { spawn } from 'node:child_process';
import { cpSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { makeTempDir } from '../helpers/job.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('npm run demo', () => {
  const dir = makeTempDir('darkroom-demo-');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes one result per sample photo, from jobs.example.yaml, with no key or network', async () => {
    // A copy, so the test leaves the checkout's out/ alone.
    cpSync(path.join(ROOT, 'jobs.example.yaml'), path.join(dir, 'jobs.example.yaml'));
    cpSync(path.join(ROOT, 'examples', 'photos'), path.join(dir, 'examples', 'photos'), { recursive: true });
    const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'cli', 'demo.js'), path.join(dir, 'jobs.example.yaml')], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', DARKROOM_STATE_DIR: path.join(dir, 'state') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    const code = await new Promise<number | null>((r) => child.on('close', r));
    expect(code).toBe(0);
    const samples = readdirSync(path.join(dir, 'examples', 'photos'), { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
    const outputs = readdirSync(path.join(dir, 'out'), { recursive: true, withFileTypes: true }).filter(
      (e) => e.isFile() && /\.(jpg|png|webp)$/.test(e.name),
    );
    expect(samples.length).toBeGreaterThanOrEqual(6);
    expect(outputs).toHaveLength(samples.length);
    expect(stdout).toMatch(new RegExp(`${samples.length} total · ${samples.length} done`));
    expect(stdout).toMatch(/0 key leaks/);

    // The first report shows the archive's metadata at work: each sample's date and caption, carried.
    const report = await runCli(['report', path.join(dir, 'jobs.example.yaml'), '--out', path.join(dir, 'report.html')], {
      DARKROOM_STATE_DIR: path.join(dir, 'state'),
    });
    expect(report.code, report.stderr).toBe(0);
    const html = readFileSync(path.join(dir, 'report.html'), 'utf8');
    for (const caption of ['At the beach, summer 1954', 'The harbour at dawn', 'Sunday picnic by the river', 'The café on the square'])
      expect(html).toContain(caption);
    expect(html).toMatch(/1954-07-18|1954:07:18/);
  }, 120_000);
});

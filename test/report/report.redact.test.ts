import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { maskKey } from '../../src/api/index.js';
import { reportCommand } from '../../src/cli/commands/report.js';
import { Ledger } from '../../src/ledger/index.js';
import { discovered } from '../helpers/discovered.js';

describe('darkroom report and the key (L5)', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'darkroom-report-redact-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('masks the key should any ledger text ever carry it, and writes nothing else of it', async () => {
    const key = 'sk-test-0123456789abcdef';
    const ledgerFile = path.join(dir, 'darkroom.db');
    const l = Ledger.open(ledgerFile);
    discovered(l, [{ relPath: 'a.jpg', srcPath: path.join(dir, 'a.jpg') }]);
    l.items.move(1, 'queued', 'failed', { reason: `upstream echoed header x-key ${key} in an error` });
    l.close();
    writeFileSync(
      path.join(dir, 'jobs.yaml'),
      'service: { apiKeyEnv: MY_KEY }\ninput: { dir: ./in }\noutput: { dir: ./out }\nsteps: [{ capability: enhance }]\nledger: ./darkroom.db\n',
    );
    const { target } = await reportCommand({ jobs: path.join(dir, 'jobs.yaml'), out: path.join(dir, 'r.html') }, { MY_KEY: key });
    const html = readFileSync(target.path!, 'utf8');
    expect(html).not.toContain(key);
    expect(html).toContain(`x-key ${maskKey(key)} in an error`);
    expect(html.toLowerCase()).not.toContain('x-api-key');
  });

  it('without a job file reads --ledger and writes report.html where asked', async () => {
    const { target, summary } = await reportCommand({ ledger: path.join(dir, 'darkroom.db'), out: path.join(dir, 'sub', 'x.html') }, {});
    expect(target).toEqual({ kind: 'file', path: path.join(dir, 'sub', 'x.html'), shown: path.join(dir, 'sub', 'x.html') });
    expect(summary).toMatch(/1 total · 0 done · 1 failed · 0 held · 0 pending/);
    expect(readFileSync(target.path!, 'utf8')).toContain('<svg class="chart" id="throughput-chart"');
  });

  it('a missing ledger is the usual LedgerMissingError', async () => {
    await expect(reportCommand({ ledger: path.join(dir, 'nope.db'), out: path.join(dir, 'n.html') }, {})).rejects.toMatchObject({
      code: 'NO_LEDGER',
    });
  });
});

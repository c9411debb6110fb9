import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { manifestLine } from '../../src/lib/manifest.js';
import { makeTempDir } from '../helpers/job.js';

/** Manifest lines as sha256sum -c reads them, odd names included (Linux allows any byte but / and NUL). */
describe('manifestLine', () => {
  it('writes lines sha256sum -c accepts, for plain names, spaces, a backslash and a line break', () => {
    const dir = makeTempDir('darkroom-manifest-');
    try {
      const names = ['plain.jpg', 'with space.jpg', 'back\\slash.jpg', 'two\nlines.jpg', 'café “quoted”.png', '50% off.jpg'];
      let text = '';
      for (const [i, name] of names.entries()) {
        const bytes = Buffer.from(`photo ${i}`);
        writeFileSync(path.join(dir, name), bytes);
        text += manifestLine(createHash('sha256').update(bytes).digest('hex'), name);
      }
      writeFileSync(path.join(dir, 'm.txt'), text);
      const out = execFileSync('sha256sum', ['-c', 'm.txt'], { cwd: dir, encoding: 'utf8' });
      expect(out.trim().split('\n')).toHaveLength(names.length);
      expect(out).not.toMatch(/FAILED/);
      expect(manifestLine('ab', 'a/b.jpg')).toBe('ab  a/b.jpg\n');
      expect(manifestLine('ab', 'a\\b')).toBe('\\ab  a\\\\b\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { clock } from '../clock.js';

/**
 * What identifies an input: a file by the SHA-256 of its bytes, so the same
 * photo under two names is one photo, a renamed file is the photo it was, and a changed
 * file is a new one; a URL by the SHA-256 of the URL itself (its bytes are the service's
 * to fetch, not ours). Files whose bytes cannot say what they are (empty, unreadable) are
 * identified by their name, so that each is reported on its own.
 */

/** Streamed: a 500 MB TIFF scan never sits in memory whole. */
export function hashFile(file: string): Promise<string> {
  return clock.io(
    new Promise<string>((resolve, reject) => {
      const h = createHash('sha256');
      const s = createReadStream(file, { highWaterMark: 1 << 20 });
      s.on('data', (chunk) => h.update(chunk));
      s.on('error', reject);
      s.on('end', () => resolve(h.digest('hex')));
    }),
  );
}

export function urlIdentity(url: string): string {
  return `url:${createHash('sha256').update(url).digest('hex')}`;
}

export function nameIdentity(kind: 'empty' | 'unreadable', name: string): string {
  return `${kind}:${name}`;
}

/** Whether an identity is a file's content hash (and can be checked against the bytes). */
export function isContentHash(id: string | null): id is string {
  return id !== null && /^[0-9a-f]{64}$/.test(id);
}

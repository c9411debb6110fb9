import { open } from 'node:fs/promises';
import { clock } from '../clock.js';
import type { Layout } from '../metadata/standIn.js';
import { tempPathIn } from './atomic.js';
import { Checksums, fsStep, fsStepAsync, nodeOutputFs, type FileFacts, type OutputFs } from './outputfs.js';

/**
 * An output made of parts (metadata/standIn.ts: ExifTool's metadata and ranges of the
 * service's file) written to a new temp file in `dir` (`target`'s folder), checksummed as it goes and
 * fsynced: memory stays at one buffer whatever the output's size, and the file is read
 * once, never again to be checksummed. Returns the temp file and its facts; on any error
 * the temp file is gone.
 */

/** Copied in pieces of this size. */
const PIECE = 4 * 1024 * 1024;

export async function writeLayout(
  dir: string,
  target: string,
  layout: Layout,
  fs: OutputFs = nodeOutputFs,
): Promise<{ file: string; facts: FileFacts }> {
  const file = tempPathIn(dir);
  const fd = fsStep('create a file in', dir, () => fs.create(file));
  const sums = new Checksums();
  try {
    await clock.io(
      (async () => {
        let buf: Buffer | undefined;
        for (const part of layout) {
          if (Buffer.isBuffer(part)) {
            await fsStepAsync('write', target, () => fs.writeAsync(fd, part));
            sums.update(part);
            continue;
          }
          buf ??= Buffer.allocUnsafe(PIECE);
          const src = await open(part.file, 'r');
          try {
            for (let at = part.start; at < part.end;) {
              const { bytesRead } = await src.read(buf, 0, Math.min(PIECE, part.end - at), at);
              if (bytesRead === 0) throw new Error(`${part.file} ended at ${at} bytes, before ${part.end}`);
              const piece = buf.subarray(0, bytesRead);
              await fsStepAsync('write', target, () => fs.writeAsync(fd, piece));
              sums.update(piece);
              at += bytesRead;
            }
          } finally {
            await src.close();
          }
        }
        await fsStepAsync('fsync', target, () => fs.fsyncAsync(fd));
      })(),
    );
  } catch (err) {
    fs.close(fd);
    fs.remove(file);
    throw err;
  }
  fs.close(fd);
  return { file, facts: sums.facts() };
}

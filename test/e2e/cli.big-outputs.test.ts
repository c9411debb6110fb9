import { closeSync, mkdtempSync, openSync, readdirSync, readSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bigService, bigSim, BULK_TYPE, bulkData, runBig, writeBigPhotos, type BigRun, type BigService } from '../../bench/bigOutputs.js';
import { standInOf } from '../../src/metadata/standIn.js';
import type { RunningSim } from '../../src/sim/server.js';
import { Exif } from '../helpers/metadata.js';

/**
 * Outputs of any size get their metadata in flat memory: a job of 4 photos whose service
 * returns two large PNGs (a valid picture, then large private ancillary chunks), with the
 * default metadata (`all`). darkroom and every process it starts stay under 600 MB resident
 * (VmHWM from /proc), every output decodes to the served pixels, keeps every chunk the
 * service sent and carries the AI disclosure, the provenance and the input's caption.
 *
 * `npm test` runs it with outputs of 48 MiB; `npm run test:big` with 1 GiB
 * (DARKROOM_BIG_MIB=1024), several GiB on disk and a few minutes.
 */

const MiB = 1024 * 1024;
const SIZE_MIB = Number(process.env.DARKROOM_BIG_MIB ?? 48);
const LIMIT_MB = 600;
const exif = new Exif();

let sim: RunningSim;
let svc: BigService;
let root: string;
let run: BigRun;

beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'darkroom-big-'));
  // Two outputs written, their raw temp files beside them while they are made, and a margin.
  const free = statfsSync(root).bavail * statfsSync(root).bsize;
  if (free < 5 * SIZE_MIB * MiB) throw new Error(`${Math.round(free / MiB)} MiB free in ${root}: this test needs ${5 * SIZE_MIB} MiB`);
  sim = await bigSim();
  svc = await bigService(sim, [SIZE_MIB * MiB, SIZE_MIB * MiB]);
  await writeBigPhotos(path.join(root, 'photos'), 4);
  run = await runBig(root, path.join(root, 'photos'), svc.apiUrl, 'all');
  console.log(
    `outputs of ${SIZE_MIB} MiB: wall ${run.wallS.toFixed(1)} s, darkroom CPU ${run.darkroomCpuS.toFixed(1)} s, wrote ${run.darkroomWrittenMb.toFixed(0)} MB, peak ${run.darkroomPeakMb.toFixed(0)} MB; ` +
      run.children.map((c) => `${c.command.split(' ')[0]} ${c.pid} peak ${c.peakMb.toFixed(0)} MB`).join(', '),
  );
}, 1_800_000);

afterAll(async () => {
  await svc?.close();
  await sim?.close();
  await exif.end();
  if (root) rmSync(root, { recursive: true, force: true });
});

/** The PNG chunks of a file, read header by header (the data only of the chunks asked for). */
function* chunks(file: string, wantData: (type: string) => boolean): Generator<{ type: string; len: number; data: Buffer | null }> {
  const fd = openSync(file, 'r');
  try {
    const size = statSync(file).size;
    const h = Buffer.alloc(8);
    for (let at = 8; at < size;) {
      readSync(fd, h, 0, 8, at);
      const len = h.readUInt32BE(0);
      const type = h.toString('latin1', 4, 8);
      let data: Buffer | null = null;
      if (wantData(type)) {
        data = Buffer.alloc(len);
        readSync(fd, data, 0, len, at + 8);
      }
      yield { type, len, data };
      at += 12 + len;
    }
  } finally {
    closeSync(fd);
  }
}

describe(`two outputs of ${SIZE_MIB} MiB with the default metadata`, () => {
  it('finish with exit 0, darkroom and each process it starts under 600 MB resident', () => {
    expect(run.exitCode, run.stderr).toBe(0);
    expect([...svc.served.values()]).toEqual([expect.any(Number), expect.any(Number)]);
    for (const n of svc.served.values()) expect(n).toBeGreaterThanOrEqual(SIZE_MIB * MiB);
    expect(run.darkroomPeakMb).toBeGreaterThan(0);
    expect(run.darkroomPeakMb).toBeLessThan(LIMIT_MB);
    // ExifTool ran (its perl, and the watcher perl that becomes it), never holding an output.
    expect(run.children.some((c) => /perl .*exiftool/.test(c.command))).toBe(true);
    for (const c of run.children) expect(c.peakMb, c.command).toBeLessThan(LIMIT_MB);
    // ExifTool never holds the image data: its peak is its own (about 60 MB, whatever the
    // output's size), where rewriting one output whole took it about 2.7 times the file.
    for (const c of run.children) expect(c.peakMb, c.command).toBeLessThan(100);
    // The metadata spliced in as each body streamed (outputs/splice.ts): the image data written
    // once, where writing the body and then its splice wrote it twice.
    const served = [...svc.served.values()].reduce((a, b) => a + b, 0) / MiB;
    expect(run.darkroomWrittenMb).toBeGreaterThan(served);
    expect(run.darkroomWrittenMb).toBeLessThan(served * 1.1 + 16);
  });

  it('each decodes to the served pixels, keeps every chunk the service sent, and carries the disclosure, the provenance and the caption', async () => {
    const out = path.join(run.dir, 'out');
    const files = readdirSync(out).filter((f) => f.endsWith('.png'));
    expect(files.sort()).toEqual(['scan-0.png', 'scan-1.png', 'scan-2.png', 'scan-3.png']);
    const big = files.filter((f) => statSync(path.join(out, f)).size >= SIZE_MIB * MiB);
    expect(big).toHaveLength(2);
    for (const f of files) {
      const file = path.join(out, f);
      const i = Number(/scan-(\d)/.exec(f)![1]);
      // Passthrough: the service served the input's pixels.
      expect(await sharp(file, { limitInputPixels: false }).raw().toBuffer(), f).toEqual(
        await sharp(path.join(root, 'photos', f))
          .raw()
          .toBuffer(),
      );
      if (big.includes(f)) {
        let n = 0;
        let idat = 0;
        for (const c of chunks(file, (t) => t === BULK_TYPE)) {
          if (c.type === 'IDAT') idat++;
          if (c.type !== BULK_TYPE) continue;
          expect(c.data!.equals(bulkData(svc.block, n)), `${f}: chunk ${n} as served`).toBe(true);
          n++;
        }
        expect(idat).toBeGreaterThan(0);
        expect(n * (8 * MiB + 12)).toBeGreaterThanOrEqual(SIZE_MIB * MiB - 64 * 1024);
      }
      // The metadata, read from the file's own chunks less its bulk (ExifTool reads a PNG chunk by chunk).
      const si = await standInOf(file, 'png');
      if (typeof si === 'string') throw new Error(si);
      const head = path.join(root, `head-${f}`);
      writeFileSync(head, si.bytes);
      const t = await exif.read(head);
      expect(t['XMP-iptcExt:DigitalSourceType'], f).toBe(
        'http://cv.iptc.org/newscodes/digitalsourcetype/compositeWithTrainedAlgorithmicMedia',
      );
      expect((t['XMP-xmpMM:DerivedFrom'] as Record<string, string>).FilePath, f).toBe(f);
      expect(t['XMP-xmpMM:History'], f).toBeDefined();
      expect(t['XMP-dc:Description'], f).toBe(`Scan ${i} of the family box`);
    }
  }, 900_000);
});

import sharp from 'sharp';
import { VirtualClock, installClock } from '../../src/clock.js';
import { SimModel, type SimOptions, type SimResponse } from '../../src/sim/model.js';

export const KEY = 'sk_test_primary_key_0001';
export const KEY2 = 'sk_test_second_key_0002';
export const ORIGIN = 'http://127.0.0.1:5678';
export const START = Date.UTC(2026, 0, 1);

export interface Harness {
  clock: VirtualClock;
  restore: () => void;
}

export function virtualTime(): Harness {
  const clock = new VirtualClock(START);
  const restore = installClock(clock);
  return { clock, restore };
}

export function newModel(opts: Partial<SimOptions> = {}): SimModel {
  return new SimModel({ keys: [KEY, KEY2], resultOrigin: ORIGIN, ...opts });
}

export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: { code: number; message: string; data: any; requestId: string };
}

export function decode(res: SimResponse): Answer {
  return { status: res.status, headers: res.headers, body: JSON.parse(res.body.toString('utf8')) };
}

export async function call(
  model: SimModel,
  method: string,
  path: string,
  opts: { key?: string | null; json?: unknown; headers?: Record<string, string>; body?: Buffer } = {},
): Promise<Answer> {
  const headers: Record<string, string | undefined> = { ...opts.headers };
  const key = opts.key === undefined ? KEY : opts.key;
  if (key !== null) headers['x-api-key'] = key;
  let body = opts.body ?? Buffer.alloc(0);
  if (opts.json !== undefined) {
    body = Buffer.from(JSON.stringify(opts.json));
    headers['content-type'] = 'application/json';
  }
  return decode(await model.handleApi({ method, path, headers, body }));
}

export function multipart(
  field: string,
  bytes: Buffer,
  filename = 'photo.bin',
  boundary = 'XbOuNdArY123',
): {
  body: Buffer;
  contentType: string;
} {
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\n` +
      `Content-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return { body: Buffer.concat([head, bytes, tail]), contentType: `multipart/form-data; boundary=${boundary}` };
}

export async function upload(model: SimModel, bytes: Buffer, key = KEY): Promise<string> {
  const { body, contentType } = multipart('image', bytes);
  const a = await call(model, 'POST', '/api/v1/image/upload', { key, body, headers: { 'content-type': contentType } });
  if (a.status !== 200) throw new Error(`upload failed: ${JSON.stringify(a.body)}`);
  return a.body.data.imageUrl as string;
}

/** A photo-like test image: a flat background with a differently coloured square in the middle. */
export function testImage(width = 64, height = 48, format: 'jpeg' | 'png' | 'webp' = 'png'): Promise<Buffer> {
  const square = Math.floor(Math.min(width, height) / 2);
  return sharp({ create: { width, height, channels: 3, background: { r: 240, g: 240, b: 240 } } })
    .composite([
      {
        input: { create: { width: square, height: square, channels: 3, background: { r: 30, g: 90, b: 160 } } },
        left: Math.floor((width - square) / 2),
        top: Math.floor((height - square) / 2),
      },
    ])
    .toFormat(format)
    .toBuffer();
}

/** Path of a result URL on the result origin. */
export function pathOfUrl(url: string): string {
  const u = new URL(url);
  return u.pathname + u.search;
}

/** The task id and businessType a client would poll, from any of the three creation shapes. */
export function pollTarget(capabilityBusinessType: string, data: any): { businessType: string; taskId: string } {
  if (data.tasks) return { businessType: capabilityBusinessType, taskId: data.tasks[0].taskId };
  if (data.asyncTaskQueueVO) return { businessType: capabilityBusinessType, taskId: String(data.asyncTaskQueueVO.asyncTaskId) };
  return { businessType: data.businessType ?? capabilityBusinessType, taskId: data.taskId };
}

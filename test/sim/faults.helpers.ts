import type { SimModel, SimResponse } from '../../src/sim/model.js';
import { KEY, multipart } from './helpers.js';

/** One API call, answered raw: a fault may leave the body unparseable or carry a transport signal. */
export function raw(
  model: SimModel,
  method: string,
  path: string,
  opts: { key?: string; json?: unknown; headers?: Record<string, string>; body?: Buffer } = {},
): Promise<SimResponse> {
  const headers: Record<string, string | undefined> = { 'x-api-key': opts.key ?? KEY, ...opts.headers };
  let body = opts.body ?? Buffer.alloc(0);
  if (opts.json !== undefined) {
    body = Buffer.from(JSON.stringify(opts.json));
    headers['content-type'] = 'application/json';
  }
  return model.handleApi({ method, path, headers, body });
}

export function parse(res: SimResponse): any {
  return JSON.parse(res.body.toString('utf8'));
}

export async function uploadRaw(model: SimModel, bytes: Buffer): Promise<string> {
  const { body, contentType } = multipart('image', bytes);
  const res = await raw(model, 'POST', '/api/v1/image/upload', { body, headers: { 'content-type': contentType } });
  if (res.status !== 200) throw new Error(`upload failed: ${res.status} ${res.body.toString('utf8')}`);
  return parse(res).data.imageUrl as string;
}

export function getResult(model: SimModel, url: string, method = 'GET'): Promise<SimResponse> {
  const u = new URL(url);
  return model.handleResult({ method, path: u.pathname + u.search, headers: {}, body: Buffer.alloc(0) });
}

/** Every fault count of an audit that injected nothing. */
export const NO_FAULTS = {
  burst503: 0,
  spurious429: 0,
  droppedCreate: 0,
  slowAnswer: 0,
  malformedJson: 0,
  notSubscribed200: 0,
  expiredResultUrl: 0,
  truncatedDownload: 0,
  vanishedTask: 0,
  forgottenUpload: 0,
  redirect: 0,
};

/**
 * Which endpoint a request names: the API's routes (matchRoute), the result origin's paths
 * (uploads and results), and the path and `?v=` version read from a raw request path.
 */
import { CAPABILITIES, CAPABILITY_NAMES, type Capability } from '../spec/capabilities.js';
import type { RedirectCalls } from './faults.js';

export type Route =
  | { kind: 'credits' }
  | { kind: 'usage' }
  | { kind: 'upload' }
  | { kind: 'create'; capability: Capability }
  | { kind: 'poll'; businessType: string; taskId: string }
  | { kind: 'unknown' };

const CREATE_PATHS = new Map<string, Capability>(CAPABILITY_NAMES.map((c) => [CAPABILITIES[c].path, c]));
const POLL_RE = /^\/api\/v1\/tasks\/([^/]+)\/([^/]+)$/;
/** The result origin's own paths: an upload's image, a task's result. */
export const UPLOAD_PATH_RE = /^\/uploads\/([A-Za-z0-9_-]+)\.(jpg|png|webp)$/;
export const RESULT_PATH_RE = /^\/results\/([A-Za-z0-9_-]+)\.(jpg|png|webp)$/;

export function matchRoute(method: string, path: string): Route {
  if (method === 'GET' && path === '/api/v1/credits') return { kind: 'credits' };
  if (method === 'GET' && path === '/api/v1/usage') return { kind: 'usage' };
  if (method === 'POST' && path === '/api/v1/image/upload') return { kind: 'upload' };
  if (method === 'POST') {
    const capability = CREATE_PATHS.get(path);
    if (capability) return { kind: 'create', capability };
  }
  if (method === 'GET') {
    const m = POLL_RE.exec(path);
    if (m) {
      try {
        return { kind: 'poll', businessType: decodeURIComponent(m[1]!), taskId: decodeURIComponent(m[2]!) };
      } catch {
        return { kind: 'unknown' };
      }
    }
  }
  return { kind: 'unknown' };
}

/** Which kind of call a `redirect` fault's `calls` names. */
export function redirectCall(route: Route): Exclude<RedirectCalls, 'all'> | 'other' {
  switch (route.kind) {
    case 'credits':
    case 'usage':
      return 'account';
    case 'unknown':
      return 'other';
    default:
      return route.kind;
  }
}

/** The path without its query; a trailing slash is forgiven, as most routers do. */
export function pathOf(raw: string): string {
  const q = raw.search(/[?#]/);
  const p = q < 0 ? raw : raw.slice(0, q);
  return p.length > 1 && p.endsWith('/') ? p.slice(0, -1) : p;
}

/** `v` of a result URL's query: 1 when absent, undefined when not a positive whole number. */
export function versionOf(raw: string): number | undefined {
  const q = raw.indexOf('?');
  if (q < 0) return 1;
  const v = new URLSearchParams(raw.slice(q + 1)).get('v');
  if (v === null) return 1;
  return /^[1-9][0-9]{0,8}$/.test(v) ? Number(v) : undefined;
}

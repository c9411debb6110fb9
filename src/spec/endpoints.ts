/**
 * The spec's endpoints other than the capabilities' (those are in capabilities.ts), as the
 * client names them in its call log. `{…}` parts are filled per call.
 */
export const ENDPOINTS = {
  credits: '/api/v1/credits',
  usage: '/api/v1/usage',
  upload: '/api/v1/image/upload',
  task: '/api/v1/tasks/{businessType}/{taskId}',
} as const;

/** The version segment every endpoint's path begins with (spec, Versioning 1). */
const API_PATH = '/api/v1';

/**
 * A base URL as the endpoints' paths are joined to it: without trailing slashes, and without
 * the API's own `/api/v1` (or `/api/v1/`) when it was pasted with it — every path above
 * already begins with it, and `…/api/v1/api/v1/…` is no endpoint of the service. A prefix of
 * a proxy's own (`https://gw.example/darkroom`) is kept.
 */
export function apiBaseUrl(url: string): string {
  const trimmed = url.replace(/\/+$/, '');
  return trimmed.endsWith(API_PATH) ? trimmed.slice(0, -API_PATH.length) : trimmed;
}

import type { RunResult } from '../../run/context.js';

/**
 * The lines that explain why a run stopped for the account (exit 3) and what to do. The
 * service's own message is in the log; these say it in the operator's terms, with the
 * requestId to quote to support.
 */
export function accountStopLines(result: RunResult, keyEnvs: readonly string[]): string[] {
  const stop = result.accountStop;
  if (!stop) return [];
  const e = stop.error;
  const rid = e.requestId ? `, requestId ${e.requestId}` : '';
  const env = keyEnvs.join(' / ');
  if (e.httpStatus === 401) {
    return [
      `stopped: the key is invalid or inactive (HTTP 401${rid}); nothing was retried. Set a valid key in ${env}, then run again: it continues where this one stopped.`,
    ];
  }
  if (e.businessCode === 24403) {
    return [
      `stopped: the account is not subscribed, or its subscription has expired (code 24403 in an HTTP ${e.httpStatus ?? '?'}${rid}). Renew it on the developer platform, then run again: it continues where this one stopped.`,
    ];
  }
  if (e.businessCode === 20601) {
    const c = result.credits;
    const need = c ? `the photos left need ${c.needed} more create(s) (at least ${c.needed} credit(s))` : 'more credits are needed';
    const have =
      c?.remaining === null || c === undefined ? 'the balance could not be read' : `the account has ${c.remaining} credit(s) remaining`;
    return [
      `stopped: out of credits (code 20601${rid}): ${need}; ${have}. Tasks already running were finished and downloaded. Add credits, then run again: it continues where this one stopped.`,
    ];
  }
  return [`stopped: ${e.message}`];
}

import type { LedgerStatus } from '../ledger/index.js';

/** The human form of a status: counts first, then every item that needs a person's attention. */
export function formatStatus(s: LedgerStatus, ledgerFile: string, limits?: { callsPerMinute: number; callsPerHour: number }): string {
  const lines: string[] = [];
  lines.push(`ledger   ${ledgerFile}`);
  lines.push(`photos   ${s.total} total · ${s.done} done · ${s.failed} failed${s.skipped ? ` (${s.skipped} skipped)` : ''} · ${s.held} held · ${s.pending} pending`);
  const busy = Object.entries(s.states).filter(([k, n]) => n > 0 && !['done', 'failed', 'held', 'skipped'].includes(k));
  if (busy.length > 0) lines.push(`in work  ${busy.map(([k, n]) => `${k} ${n}`).join(' · ')}`);
  const keys = Object.entries(s.calls.perKey);
  if (keys.length === 0) lines.push(`calls    ${s.calls.total} in all, none in the last hour`);
  for (const [fp, c] of keys) {
    const lim = limits ? ` (limits ${limits.callsPerMinute}/min, ${limits.callsPerHour}/h)` : '';
    lines.push(`calls    key ${fp}: ${c.lastMinute} in the last minute, ${c.lastHour} in the last hour${lim}; ${s.calls.total} in all`);
  }
  for (const kind of ['held', 'failed', 'skipped'] as const) {
    const list = s.problems.filter((p) => p.state === kind);
    if (list.length === 0) continue;
    lines.push('', `${kind}:`);
    for (const p of list) {
      const ids = [p.sentRequestId ? `X-Request-Id ${p.sentRequestId}` : '', p.requestId ? `requestId ${p.requestId}` : '']
        .filter(Boolean)
        .join(', ');
      lines.push(`  ${p.path}  step ${p.step + 1}: ${p.reason ?? 'no reason recorded'}${ids ? ` [${ids}]` : ''}`);
    }
  }
  return lines.join('\n');
}

export function statusJson(s: LedgerStatus): string {
  return JSON.stringify({
    total: s.total,
    done: s.done,
    failed: s.failed,
    held: s.held,
    pending: s.pending,
    skipped: s.skipped,
    states: s.states,
    calls: s.calls,
    problems: s.problems,
  });
}

import type { Credits, Usage } from '../../api/index.js';
import { accountTarget, peekCallWindows, withAccountClient, type AccountArgs, type AccountIo } from '../../lib/account.js';

export interface AccountCommandArgs extends AccountArgs {
  readonly json?: boolean | undefined;
}

export interface CreditsEntry extends Credits {
  /** The key's fingerprint (`k_…`), never the key. */
  readonly key: string;
  /** The variable the key was read from. */
  readonly env: string;
}

/**
 * `darkroom credits`: GET /api/v1/credits once per key of the job (one call each, counted
 * in the key's windows like any other). Credits belong to the account; keys of one account
 * show the same figures.
 */
export async function creditsCommand(args: AccountCommandArgs, io: AccountIo): Promise<string> {
  const target = accountTarget(args, io.env);
  const entries: CreditsEntry[] = [];
  for (const k of target.keys) {
    const c = await withAccountClient(target, k, io, (client) => client.credits());
    entries.push({
      key: k.fingerprint,
      env: k.env,
      totalCredit: c.totalCredit,
      usedCredit: c.usedCredit,
      remainingCredit: c.remainingCredit,
    });
  }
  if (args.json) return JSON.stringify({ keys: entries, calls: entries.length });
  const lines = entries.map(
    (e) => `credits  key ${e.key} (${e.env}): ${e.remainingCredit} remaining · ${e.usedCredit} used · ${e.totalCredit} in all`,
  );
  lines.push(`note     ${entries.length} call(s) to GET /api/v1/credits, counted in the key's minute and hour windows`);
  return lines.join('\n');
}

export interface UsageEntry extends Usage {
  readonly key: string;
  readonly env: string;
  /** What the ledger counts for this key (null without a ledger): calls darkroom sent in the last minute and hour, this one included. */
  readonly ledger: { readonly lastMinute: number; readonly lastHour: number } | null;
}

/**
 * `darkroom usage`: GET /api/v1/usage once per key. The service counts this call before
 * it answers (spec), so the remaining figures already include it. Beside them, what the
 * ledger has recorded for the key, when there is a ledger.
 */
export async function usageCommand(args: AccountCommandArgs, io: AccountIo): Promise<string> {
  const target = accountTarget(args, io.env);
  const entries: UsageEntry[] = [];
  for (const k of target.keys) {
    const u = await withAccountClient(target, k, io, (client) => client.usage());
    const windows = target.ledgerFile ? peekCallWindows(target.ledgerFile) : null;
    entries.push({
      ...u,
      key: k.fingerprint,
      env: k.env,
      ledger: windows ? (windows[k.fingerprint] ?? { lastMinute: 0, lastHour: 0 }) : null,
    });
  }
  if (args.json) return JSON.stringify({ keys: entries, calls: entries.length });
  const lines: string[] = [];
  for (const e of entries) {
    lines.push(`usage    key ${e.key} (${e.env}; the service shows it as ${e.apiKey}) · account ${e.userId}`);
    lines.push(
      `         ${e.minuteRemaining} calls left this minute · ${e.hourRemaining} left this hour (service-wide: ${e.globalMinuteRemaining} / ${e.globalHourRemaining})`,
    );
    if (e.ledger)
      lines.push(
        `         the ledger counts ${e.ledger.lastMinute} calls from this key in the last minute, ${e.ledger.lastHour} in the last hour`,
      );
  }
  lines.push(
    `note     this was ${entries.length} call(s) to GET /api/v1/usage: it counts against the key's windows, and the figures above include it`,
  );
  return lines.join('\n');
}

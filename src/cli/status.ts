import path from 'node:path';
import { loadConfig } from '../config/index.js';
import { Ledger } from '../ledger/index.js';
import { formatStatus, statusJson } from './format.js';

export interface StatusArgs {
  readonly jobs?: string | undefined;
  readonly ledger?: string | undefined;
  readonly json?: boolean | undefined;
}

/** `darkroom status`: read from the ledger alone, safe while a run writes (WAL). */
export function statusCommand(args: StatusArgs, env: NodeJS.ProcessEnv): string {
  let file: string;
  let limits: { callsPerMinute: number; callsPerHour: number } | undefined;
  if (args.jobs) {
    const config = loadConfig(args.jobs, { ledger: args.ledger, env });
    file = config.ledger;
    limits = config.limits;
  } else {
    file = path.resolve(args.ledger ?? 'darkroom.db');
  }
  const ledger = Ledger.open(file, { readonly: true });
  try {
    const s = ledger.status();
    return args.json ? statusJson(s) : formatStatus(s, file, limits);
  } finally {
    ledger.close();
  }
}

import path from 'node:path';
import { loadConfig } from '../../config/index.js';
import { startReviewServer } from '../../review/server.js';

export interface ReviewArgs {
  readonly jobs: string;
  readonly ledger?: string | undefined;
  readonly port?: number | undefined;
  readonly host?: string | undefined;
  /** Open the default browser at the address. */
  readonly open?: boolean | undefined;
}

export interface ReviewStarted {
  /** The first line of stdout: `review: http://127.0.0.1:PORT/?token=…`. */
  readonly line: string;
  /** What else to say, on stderr: how to stop, a warning for another host, a browser that would not open. */
  readonly notes: readonly string[];
  close(): Promise<void>;
}

/**
 * `darkroom review <jobs.yaml>`: the review page over the job's ledger (review/server.ts), until
 * `close()`; the CLI prints the address, waits for Ctrl-C, and exits 130.
 */
export async function reviewCommand(args: ReviewArgs, env: NodeJS.ProcessEnv): Promise<ReviewStarted> {
  const config = loadConfig(args.jobs, { ledger: args.ledger, env });
  const server = await startReviewServer({
    ledgerFile: config.ledger,
    allowNetworkFs: config.allowNetworkFs,
    host: args.host,
    port: args.port,
  });
  const notes = [
    `reviewing ${path.relative(process.cwd(), config.ledger) || config.ledger}: decisions go to the ledger as they are made; Ctrl-C to stop`,
  ];
  if (!['127.0.0.1', 'localhost', '::1'].includes(server.host)) {
    notes.push(
      `warning: listening on ${server.host}, not this machine alone: anyone who can reach it and has the address above can decide`,
    );
  }
  if (args.open) {
    try {
      const open = (await import('open')).default;
      await open(server.url);
    } catch (err) {
      notes.push(`could not open a browser (${String((err as Error)?.message ?? err).split('\n')[0]}): open the address above yourself`);
    }
  }
  return { line: `review: ${server.url}`, notes, close: () => server.close() };
}

/**
 * A reader that goes away (`darkroom status --watch | head -1`) closes the pipe under us:
 * the next write fails with EPIPE, which Node reports as an 'error' event that, unhandled,
 * ends the process with a stack trace. Here it ends quietly instead, as a program killed
 * by SIGPIPE would: on stdout (the reader wanted no more output) the process exits with
 * `code`; on stderr the lines are dropped and the work goes on (a run keeps its ledger and
 * its photos whether or not anyone reads its warnings).
 */
export function quietOnClosedPipes(
  io: { stdout: NodeJS.EventEmitter; stderr: NodeJS.EventEmitter },
  exit: (code: number) => void,
  code = 0,
): void {
  const closed = (e: unknown) => {
    const c = (e as { code?: string } | null)?.code;
    return c === 'EPIPE' || c === 'ERR_STREAM_DESTROYED';
  };
  io.stdout.on('error', (e: unknown) => {
    if (closed(e)) exit(code);
    else throw e;
  });
  io.stderr.on('error', (e: unknown) => {
    if (!closed(e)) throw e;
  });
}

/**
 * End the process with `code` once everything printed has been taken by its reader. To a pipe,
 * stdout and stderr write what the pipe can hold and queue the rest for when the reader has
 * read, and process.exit drops that queue: `darkroom plan --json | jq` over a million photos
 * got the first 64 KiB of its JSON. An empty write's callback comes after every write queued
 * before it (a closed pipe calls it too, with its error). The process still exits explicitly:
 * idle keep-alive sockets to the service would otherwise hold it open for seconds.
 */
export function exitWhenWritten(code: number): void {
  let left = 2;
  const written = () => {
    if (--left === 0) process.exit(code);
  };
  process.stdout.write('', written);
  process.stderr.write('', written);
}

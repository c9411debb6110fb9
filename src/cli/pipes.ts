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

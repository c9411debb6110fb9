import { createInterface } from 'node:readline/promises';

/** The question on stderr, the answer from stdin; only y or yes (any case) is a yes. */
export async function askOnTerminal(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    // End of input (Ctrl-D) closes the interface without an answer: that is a no.
    return await new Promise<boolean>((resolve) => {
      rl.once('close', () => resolve(false));
      rl.question(question).then(
        (answer) => resolve(/^\s*y(es)?\s*$/i.test(answer)),
        () => resolve(false),
      );
    });
  } finally {
    rl.close();
  }
}

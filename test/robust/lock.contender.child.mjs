// A contender for a ledger's run lock, for lock.races.test.ts: the built code, as `darkroom
// run` runs it (dist/), in a process of its own. Told by its parent over IPC to open the
// ledger, to take the lock (and recover, as a run does right after), and to let it go.
import { Ledger } from '../../dist/ledger/index.js';

let ledger;
let lock;
process.on('message', (m) => {
  try {
    if (m.open) {
      ledger = Ledger.open(m.open);
      process.send({ opened: true });
    } else if (m.go) {
      try {
        lock = ledger.acquireRunLock({ command: 'run' });
        ledger.recover();
        process.send({ won: true, pid: process.pid });
      } catch (err) {
        ledger.close();
        ledger = undefined;
        process.send({ won: false, pid: process.pid, code: err.code ?? null, message: String(err.message ?? err) });
      }
    } else if (m.release) {
      lock?.release();
      ledger?.close();
      lock = ledger = undefined;
      process.send({ released: true });
    } else if (m.exit) {
      process.exit(0);
    }
  } catch (err) {
    process.send({ error: String(err?.stack ?? err) });
  }
});
process.send({ ready: true });

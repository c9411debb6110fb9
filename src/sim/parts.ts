/**
 * The simulator's parts, built once per model from its options and handed to the endpoint
 * handlers (creates.ts, polls.ts). Every random draw comes from a seeded stream: 1 for the
 * tasks' futures, 2 for ids, 16 onwards for the faults (faultInjector.ts).
 */
import { Account } from './account.js';
import { AuditRecorder } from './audit.js';
import { FaultInjector } from './faultInjector.js';
import { ImageInput } from './imageInput.js';
import { Limits } from './limits.js';
import type { ResolvedSimOptions } from './options.js';
import { Rng } from './random.js';
import { ResultOrigin } from './resultOrigin.js';
import { TaskBook } from './taskBook.js';
import { UploadStore } from './uploads.js';

export interface SimParts {
  readonly cfg: ResolvedSimOptions;
  /** Request ids the service makes up, upload ids and task ids. */
  readonly idRng: Rng;
  readonly limits: Limits;
  readonly account: Account;
  readonly recorder: AuditRecorder;
  readonly faults: FaultInjector;
  readonly uploads: UploadStore;
  readonly tasks: TaskBook;
  readonly images: ImageInput;
  readonly origin: ResultOrigin;
}

export function buildParts(cfg: ResolvedSimOptions): SimParts {
  const taskRng = new Rng(cfg.seed, 1);
  const idRng = new Rng(cfg.seed, 2);
  const limits = new Limits(cfg);
  const account = new Account(cfg, limits);
  const recorder = new AuditRecorder(limits.fingerprints());
  const faults = new FaultInjector(cfg.faults, cfg.seed);
  const uploads = new UploadStore(cfg.resultOrigin, idRng, faults, recorder);
  const tasks = new TaskBook(cfg, taskRng, idRng, limits, faults, recorder);
  const images = new ImageInput(cfg.resultOrigin, uploads, tasks);
  const origin = new ResultOrigin(cfg, tasks, uploads, faults, recorder);
  return { cfg, idRng, limits, account, recorder, faults, uploads, tasks, images, origin };
}

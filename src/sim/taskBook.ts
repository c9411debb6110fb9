/**
 * Every task the service accepted: acceptance (its whole future drawn at once, tasks.ts),
 * lookup, vanishing (the vanishedTask fault), and the log the bench reads. Decisions:
 * - Task ids: image2image's are integers (polled as their decimal string), the others hex.
 * - rank is 1 + the tasks service-wide still REQUESTED at acceptance; purely informational.
 * - Tasks never expire; a vanished one is gone for polls, results and new creates.
 */
import { CAPABILITIES, type Capability } from '../spec/capabilities.js';
import { TASK_COST } from './account.js';
import type { AuditRecorder } from './audit.js';
import type { FaultInjector } from './faultInjector.js';
import type { ImageType } from '../spec/images.js';
import { drawLatency } from './latencyShapes.js';
import type { Lane, Limits } from './limits.js';
import type { ResolvedSimOptions } from './options.js';
import { resultTypeFor } from './processing.js';
import type { Rng } from './random.js';
import { pickOutcome, statusAt, type Task, type TaskInput } from './tasks.js';

/** image2image ids are integers in the spec; an offset keeps them clearly apart from counters. */
const IMAGE2IMAGE_ID_BASE = 7_000_000;

/** A create's image, resolved (imageInput.ts). */
export type ResolvedImage = { input: TaskInput; inputType: ImageType; sourceId: string };

export interface QueueInfo {
  rank: number;
  waitTime: number;
}

/** One accepted task, as the bench's clairvoyant bound reads it. */
export interface TaskLogEntry {
  keyFingerprint: string;
  sourceId: string;
  capability: Capability;
  creation: number;
  latencyMs: number;
  seenEndedAt: number | null;
}

type TaskConfig = Pick<ResolvedSimOptions, 'latency' | 'outcomes' | 'waitTimeNoiseSigma' | 'waitTimeBias' | 'processing'>;

export class TaskBook {
  private readonly tasks = new Map<string, Task>();
  /** When the first task was accepted: a drifting latency's clock (latencyShapes.ts). */
  private firstTaskAt: number | undefined;
  /** Tasks that vanished: gone for polls, results and new creates; still readable as inputs of tasks made before. */
  private readonly vanished = new Set<string>();
  /** `${sourceId}|${capability}` that already lost a task (each loses at most one). */
  private readonly vanishedSources = new Set<string>();
  private taskSeq = 0;

  constructor(
    private readonly cfg: TaskConfig,
    private readonly taskRng: Rng,
    private readonly idRng: Rng,
    private readonly limits: Limits,
    private readonly faults: FaultInjector,
    private readonly recorder: AuditRecorder,
  ) {}

  accept(capability: Capability, lane: Lane, image: ResolvedImage, params: Task['params'], now: number): { task: Task; queue: QueueInfo } {
    const n = ++this.taskSeq;
    // Always the same three draws per task, so outcomes depend only on how many tasks came before.
    this.firstTaskAt ??= now;
    const latencyMs = drawLatency(this.taskRng, this.cfg.latency[capability], now - this.firstTaskAt);
    const outcome = pickOutcome(this.taskRng.uniform(), this.cfg.outcomes);
    const noise = this.taskRng.normal();
    const sigma = this.cfg.waitTimeNoiseSigma;
    const waitTime = sigma === 'none' ? 0 : Math.max(0, Math.round(latencyMs * this.cfg.waitTimeBias * Math.exp(sigma * noise)));

    let rank = 1;
    for (const t of this.limits.active()) if (t.startsAt > now) rank++;

    const taskId =
      capability === 'image2image' ? String(IMAGE2IMAGE_ID_BASE + n) : `${n.toString(16).padStart(6, '0')}${this.idRng.hex(18)}`;
    const task: Task = {
      taskId,
      capability,
      businessType: CAPABILITIES[capability].businessType,
      keyFingerprint: lane.fingerprint,
      creation: now,
      latencyMs,
      startsAt: now + Math.floor(latencyMs * 0.1),
      completesAt: now + latencyMs,
      outcome,
      cost: TASK_COST,
      input: image.input,
      inputType: image.inputType,
      resultType: this.cfg.processing === 'passthrough' ? image.inputType : resultTypeFor(capability),
      sourceId: image.sourceId,
      params,
    };
    this.tasks.set(taskId, task);
    lane.active.push(task);
    this.recorder.created(lane.fingerprint, task.sourceId, lane.active.length);
    return { task, queue: { rank, waitTime } };
  }

  /** A task that has not vanished. */
  live(taskId: string): Task | undefined {
    return this.vanished.has(taskId) ? undefined : this.tasks.get(taskId);
  }

  /** Any task, vanished or not: an earlier task's result is still a later task's input. */
  get(taskId: string): Task | undefined {
    return this.tasks.get(taskId);
  }

  /**
   * Whether the task vanishes at this poll (vanishedTask, at most once per source image and
   * capability). Gone for good: its slot is freed at once and its credit, if still held, released.
   */
  vanishesAt(task: Task, now: number): boolean {
    const source = `${task.sourceId}|${task.capability}`;
    if (this.vanishedSources.has(source) || !this.faults.vanishedTask(now - task.creation)) return false;
    this.vanished.add(task.taskId);
    this.vanishedSources.add(source);
    this.limits.drop(task);
    this.recorder.fault('vanishedTask');
    return true;
  }

  /** Every task accepted, in order of acceptance. */
  log(): TaskLogEntry[] {
    return [...this.tasks.values()].map((t) => ({
      keyFingerprint: t.keyFingerprint,
      sourceId: t.sourceId,
      capability: t.capability,
      creation: t.creation,
      latencyMs: t.latencyMs,
      seenEndedAt: t.seenEndedAt ?? null,
    }));
  }

  /** Tasks by status at `now`; vanished ones are counted among the faults instead. */
  byStatus(now: number): Record<string, number> {
    const byStatus: Record<string, number> = {};
    for (const t of this.tasks.values()) {
      if (this.vanished.has(t.taskId)) continue;
      const s = statusAt(t, now);
      byStatus[s] = (byStatus[s] ?? 0) + 1;
    }
    return byStatus;
  }
}

/**
 * Tasks and their lifecycle. A task's whole future — latency and outcome — is drawn when it
 * is accepted, and its status at any moment is computed from the clock. Nothing is
 * scheduled, so the model needs no timers and a virtual clock can jump freely.
 */
import type { Capability } from '../spec/capabilities.js';
import type { ImageType } from '../spec/images.js';
import type { ProcessParams } from './processing.js';

export type TerminalStatus = 'SUCCESS' | 'FAIL' | 'ERROR' | 'OTHER';
export type TaskStatus = 'REQUESTED' | 'PENDING' | TerminalStatus;

/** Where a task's input bytes come from; internal inputs are resolved without the network. */
export type TaskInput = { kind: 'upload'; uploadId: string } | { kind: 'result'; taskId: string } | { kind: 'bytes'; bytes: Buffer };

export interface Task {
  taskId: string;
  capability: Capability;
  businessType: string;
  keyFingerprint: string;
  /** Acceptance time, ms. */
  creation: number;
  latencyMs: number;
  /** End of the REQUESTED phase (the first ~10% of the latency). */
  startsAt: number;
  completesAt: number;
  /** The first poll that answered the task's end (the bench's lag: seenEndedAt − completesAt). */
  seenEndedAt?: number;
  outcome: TerminalStatus;
  cost: number;
  input: TaskInput;
  /** Format of the input bytes, known from magic bytes at acceptance. */
  inputType: ImageType;
  resultType: ImageType;
  sourceId: string;
  params: ProcessParams;
}

export function statusAt(task: Task, now: number): TaskStatus {
  if (now < task.startsAt) return 'REQUESTED';
  if (now < task.completesAt) return 'PENDING';
  return task.outcome;
}

export function isActiveAt(task: Task, now: number): boolean {
  return now < task.completesAt;
}

/** Draws a terminal outcome from the configured mix; whatever is left over is SUCCESS. */
export function pickOutcome(u: number, mix: { fail: number; error: number; other: number }): TerminalStatus {
  if (u < mix.fail) return 'FAIL';
  if (u < mix.fail + mix.error) return 'ERROR';
  if (u < mix.fail + mix.error + mix.other) return 'OTHER';
  return 'SUCCESS';
}

/**
 * The service's response bodies, read tolerantly: extra fields are ignored, ids may be
 * strings or integers, and a garbled hint (rank, waitTime) never spoils a create whose
 * taskId is readable, because that task exists and costs a credit.
 */
import { z } from 'zod';
import { ShapeError } from '../errors.js';

/** An integer, also when sent as a digit string (a big integer arrives that way, see json.ts). */
const intLike = z.union([
  z.number().int(),
  z
    .string()
    .regex(/^-?\d{1,15}$/)
    .transform(Number),
]);
const numLike = z
  .union([
    z.number(),
    z
      .string()
      .regex(/^-?\d+(\.\d+)?$/)
      .transform(Number),
  ])
  .pipe(z.number().finite());
/** An id: a non-empty string, or an integer kept exactly as its digits. */
const idLike = z.union([z.string().trim().min(1), z.number().int().nonnegative().transform(String)]);
const optionalNum = numLike.nullish().catch(null);
const optionalString = z.string().trim().min(1).nullish().catch(null);

export interface Envelope {
  code: number;
  message: string | null;
  data: unknown;
  requestId: string | null;
}

const envelopeSchema = z.object({
  code: intLike,
  message: z.string().nullish().catch(null),
  data: z.unknown().optional(),
  requestId: z.string().nullish().catch(null),
});

/** The envelope (also the error body), or null when the body is not one. */
export function parseEnvelope(body: unknown): Envelope | null {
  const r = envelopeSchema.safeParse(body);
  if (!r.success) return null;
  return {
    code: r.data.code,
    message: r.data.message ?? null,
    data: r.data.data,
    requestId: r.data.requestId ?? null,
  };
}

function fail(what: string, error?: z.ZodError): never {
  const detail = error ? `: ${error.issues.map((i) => `${i.path.join('.') || '(root)'} ${i.message}`).join('; ')}` : '';
  throw new ShapeError(`${what}${detail}`);
}

function parseWith<T>(schema: z.ZodType<T>, data: unknown, what: string): T {
  const r = schema.safeParse(data);
  if (!r.success) fail(what, r.error);
  return r.data;
}

// ---- creation --------------------------------------------------------------------

export interface CreateResult {
  taskId: string;
  /** As named by the response; null when it names none (use the capability's). */
  businessType: string | null;
  /**
   * The queue's wait estimate. Spec gap: the unit is not stated; sample values in the
   * thousands suggest milliseconds, so it is taken as ms. Use it as a hint only.
   */
  waitTimeMs: number | null;
  parentTaskId: string | null;
  rank: number | null;
  /** The service's requestId of the create response, for the ledger's outcome (L1). */
  requestId: string | null;
}

/** What the create response's `data` says; the client adds the envelope's requestId. */
export type CreatedTask = Omit<CreateResult, 'requestId'>;

const queueSchema = z
  .object({
    rank: optionalNum,
    waitTime: optionalNum,
    asyncTaskId: idLike.nullish().catch(null),
  })
  .nullish()
  .catch(null);

const createSchema = z.object({
  // Photo Enhance
  parentTaskId: idLike.nullish().catch(null),
  tasks: z.array(z.unknown()).nullish().catch(null),
  // the general description's flat shape
  taskId: idLike.nullish().catch(null),
  businessType: optionalString,
  // Image to Image (and possibly the flat shape)
  asyncTaskQueueVO: queueSchema,
});

const taskEntrySchema = z.object({ taskId: idLike, asyncTaskQueueVO: queueSchema });

/**
 * Normalize the three creation shapes (Photo Enhance's tasks[], Image to Image's
 * asyncTaskQueueVO.asyncTaskId, the flat taskId) and mixes of them. Precedence when
 * several ids appear: tasks[] (the specified Enhance shape), then flat taskId, then
 * asyncTaskId. No id at all is a ShapeError: the task may well exist, so the caller must
 * treat it as ambiguous, never as "not created".
 */
export function parseCreateResult(data: unknown): CreatedTask {
  const d = parseWith(createSchema, data, 'create response data is not an object');

  let taskId: string | null = null;
  let queue = d.asyncTaskQueueVO ?? null;
  if (d.tasks) {
    for (const entry of d.tasks) {
      const t = taskEntrySchema.safeParse(entry);
      if (t.success) {
        taskId = t.data.taskId;
        queue = t.data.asyncTaskQueueVO ?? queue;
        break;
      }
    }
  }
  taskId ??= d.taskId ?? d.asyncTaskQueueVO?.asyncTaskId ?? null;
  if (taskId === null) fail('create response data carries no taskId (tasks[].taskId, taskId or asyncTaskQueueVO.asyncTaskId)');

  const wait = queue?.waitTime ?? null;
  return {
    taskId,
    businessType: d.businessType ?? null,
    waitTimeMs: wait === null || wait < 0 ? null : wait,
    parentTaskId: d.parentTaskId ?? null,
    rank: queue?.rank ?? null,
  };
}

// ---- task status -----------------------------------------------------------------

export const TASK_STATUSES = ['REQUESTED', 'PENDING', 'SUCCESS', 'FAIL', 'ERROR', 'OTHER'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** SUCCESS, FAIL, ERROR and OTHER end polling (the spec treats OTHER as terminal). */
export function isTerminalStatus(s: TaskStatus): boolean {
  return s === 'SUCCESS' || s === 'FAIL' || s === 'ERROR' || s === 'OTHER';
}

export interface TaskInfo {
  taskId: string;
  /**
   * An unknown status string maps to OTHER: the spec defines OTHER as "an internal state
   * with no public equivalent" and treats it as terminal, which is what an unannounced
   * state is to darkroom; polling it forever would only burn calls.
   */
  status: TaskStatus;
  /** The status string as sent, for logs. */
  rawStatus: string;
  creationMs: number | null;
  /** `generateUrl`, or its published alias `generateImage`. */
  generateUrl: string | null;
}

const taskSchema = z.object({
  taskId: idLike.nullish().catch(null),
  status: z.string().trim().min(1),
  creation: optionalNum,
  generateUrl: optionalString,
  generateImage: optionalString,
});

function normalizeStatus(raw: string): TaskStatus {
  const up = raw.trim().toUpperCase();
  return (TASK_STATUSES as readonly string[]).includes(up) ? (up as TaskStatus) : 'OTHER';
}

/**
 * `creation` is specified as 13-digit milliseconds; a 10-digit value can only be seconds
 * (it would otherwise be January 1970), so it is scaled.
 */
function creationMs(v: number | null): number | null {
  if (v === null || v <= 0) return null;
  return v < 1e11 ? v * 1000 : v;
}

export function parseTaskInfo(data: unknown, requestedTaskId: string): TaskInfo {
  const d = parseWith(taskSchema, data, 'task response data');
  return {
    taskId: d.taskId ?? requestedTaskId,
    status: normalizeStatus(d.status),
    rawStatus: d.status,
    creationMs: creationMs(d.creation ?? null),
    generateUrl: d.generateUrl ?? d.generateImage ?? null,
  };
}

// ---- account ---------------------------------------------------------------------

export interface Credits {
  totalCredit: number;
  usedCredit: number;
  remainingCredit: number;
}

const creditsSchema = z.object({ totalCredit: intLike, usedCredit: intLike, remainingCredit: intLike });

export function parseCredits(data: unknown): Credits {
  return parseWith(creditsSchema, data, 'credits response data');
}

export interface Usage {
  /** The service's masked form of the key. */
  apiKey: string;
  userId: string;
  minuteRemaining: number;
  hourRemaining: number;
  globalMinuteRemaining: number;
  globalHourRemaining: number;
}

const usageSchema = z.object({
  apiKey: z.string(),
  userId: idLike,
  minuteRemaining: intLike,
  hourRemaining: intLike,
  globalMinuteRemaining: intLike,
  globalHourRemaining: intLike,
});

export function parseUsage(data: unknown): Usage {
  return parseWith(usageSchema, data, 'usage response data');
}

export interface UploadResult {
  imageUrl: string;
}

const uploadSchema = z.object({ imageUrl: z.string().trim().min(1) });

export function parseUpload(data: unknown): UploadResult {
  return parseWith(uploadSchema, data, 'upload response data');
}

import type { ItemState } from './transitions.js';

export interface ItemRow {
  id: number;
  rel_path: string;
  src_path: string;
  size_bytes: number | null;
  content_hash: string | null;
  state: ItemState;
  step_index: number;
  attempt: number;
  key_fp: string | null;
  image_url: string | null;
  input_url: string | null;
  task_id: string | null;
  business_type: string | null;
  task_started_ms: number | null;
  result_url: string | null;
  output_path: string | null;
  reason: string | null;
  request_id: string | null;
  due_ms: number;
  retries: number;
  /** Why a held item is held (migration 002); null unless held. */
  hold_kind: 'ambiguous' | 'timeout' | null;
  /** The step list the photo follows or was finished under (migration 008, ledger/stepLists.ts); null until stamped. */
  steps_sig: string | null;
  /** Times the service forgot the photo's upload and it was uploaded again (migration 008). */
  forgotten_uploads: number;
  created_ms: number;
  updated_ms: number;
}

export type ItemPatch = Partial<Omit<ItemRow, 'id' | 'state' | 'created_ms' | 'updated_ms' | 'rel_path'>>;

export interface SubmissionRow {
  id: number;
  item_id: number;
  step_index: number;
  capability: string;
  key_fp: string;
  request_id: string;
  state: 'sending' | 'accepted' | 'rejected' | 'ambiguous';
  task_id: string | null;
  business_type: string | null;
  response_request_id: string | null;
  http_status: number | null;
  code: number | null;
  error: string | null;
  sent_ms: number;
  resolved_ms: number | null;
}

export interface CallRow {
  at_ms: number;
  key_fp: string;
  method: string;
  endpoint: string;
  http_status: number | null;
  code: number | null;
  request_id: string | null;
  sent_request_id: string;
  duration_ms: number;
  error: string | null;
}

/**
 * What a photo sent back to its first step forgets of the step it was on: its task, result,
 * reason and retry state (a content change, ledger/discovery.ts; a redo under new steps,
 * ledger/stepLists.ts). Its key and input URL are the caller's to decide.
 */
export const FIRST_STEP = {
  step_index: 0,
  attempt: 0,
  task_id: null,
  business_type: null,
  task_started_ms: null,
  result_url: null,
  reason: null,
  request_id: null,
  due_ms: 0,
  retries: 0,
} as const satisfies Partial<ItemRow>;

/** A photo as the report and the review page show it: which, where, how far, why, and its output. */
export interface PhotoFacts {
  readonly id: number;
  /** The input's path under input.dir (a URL input's output name). */
  readonly path: string;
  readonly srcPath: string;
  readonly state: string;
  readonly step: number;
  readonly reason: string | null;
  readonly outputPath: string | null;
}

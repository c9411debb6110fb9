import type { CallRecord, CallTicket } from '../api/client.js';
import type { CallKind } from '../ledger/index.js';

export type ReserveKind = Exclude<CallKind, 'foreign'>;

/** Where a reservation reports its call (KeyBudget: it records them in the key's store). */
export interface ReservationBook {
  sending(t: Reservation, atMs: number, sentRequestId: string): void;
  answered(t: Reservation, rec: CallRecord): void;
}

/** One call's reservation (CallTicket): the client reports its sending and its answer. */
export class Reservation implements CallTicket {
  sentRequestId: string | undefined;
  settled = false;
  /** Calls beyond the first made under this reservation (a stage should make one). */
  readonly extra = new Map<string, { id: number; atMs: number }>();

  constructor(
    private readonly budget: ReservationBook,
    readonly callId: number,
    public atMs: number,
    readonly kind: ReserveKind,
    readonly slotId: number | undefined,
  ) {}

  get sent(): boolean {
    return this.sentRequestId !== undefined;
  }

  sending(atMs: number, _endpoint: string, sentRequestId: string): void {
    this.budget.sending(this, atMs, sentRequestId);
  }

  answered(rec: CallRecord): void {
    this.budget.answered(this, rec);
  }
}

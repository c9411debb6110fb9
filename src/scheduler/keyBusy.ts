/** What binds when no call may leave now. */
export type Binding = 'minute' | 'hour' | 'pause' | 'pace';

/** An account command found no room within the wait it accepts. */
export class KeyBusyError extends Error {
  override readonly name = 'KeyBusyError';
  readonly code = 'DARKROOM_KEY_BUSY';
  constructor(
    readonly nextAtMs: number,
    readonly binding: Binding,
    waitMs: number,
  ) {
    const when = `${new Date(nextAtMs).toTimeString().slice(0, 8)} (in ${humanWait(waitMs)})`;
    super(
      binding === 'pause'
        ? `the service asked this key to pause: the next call is possible at ${when}; try again then`
        : `the key's ${binding === 'pace' ? 'hour' : binding} window is full (other darkroom processes, or other clients of the key, are using it): the next call is possible at ${when}; try again then`,
    );
  }
}

export function humanWait(ms: number): string {
  const s = Math.ceil(ms / 1000);
  if (s < 120) return `${s} s`;
  const m = Math.ceil(s / 60);
  return m < 120 ? `${m} min` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

/**
 * Where a run's photos come from while it works (docs/ARCHITECTURE.md § Flow): its discovery
 * records them in the ledger a batch at a time beside the lanes, and says here when more came
 * and when no more will. The lanes take photos from the ledger as they are recorded, and end
 * only once the supply is done and nothing is left that they could move. A run that follows
 * its folder (`--follow`, run/follow.ts) goes on supplying after the walk, and is done only
 * once it is stopped.
 */
export class PhotoSupply {
  #done = false;
  #walking = true;
  #found = 0;
  readonly #wakers: (() => void)[] = [];
  readonly #waiting = new Set<number>();

  /** No more photos will be recorded by this run's producer. */
  get done(): boolean {
    return this.#done;
  }

  /** The discovery still walks the folder (its count is shown); false once the walk ended, followed or not. */
  get walking(): boolean {
    return this.#walking;
  }

  /** Names found so far by the walk (files and URL lines), for the display while it goes on. */
  get found(): number {
    return this.#found;
  }

  /**
   * Photos whose file was not where the ledger last saw it (renamed, moved or deleted since
   * the last run) while the walk goes on: no lane uploads them until the discovery has
   * recorded more (their new name, or that they are gone), or the walk has ended.
   */
  get waiting(): ReadonlySet<number> {
    return this.#waiting;
  }

  /** Photo `itemId` waits for the discovery (see `waiting`). */
  waitFor(itemId: number): void {
    this.#waiting.add(itemId);
  }

  /** `fn` is called whenever photos were recorded, and when the supply ends. */
  onMore(fn: () => void): void {
    this.#wakers.push(fn);
  }

  /** A batch was recorded (`found`: names the walk found so far, when it was the walk's): whoever waits for work looks again. */
  more(found?: number): void {
    if (found !== undefined) this.#found = found;
    this.wake();
  }

  /** The walk ended; a followed folder goes on supplying (end() comes when it stops). */
  walked(): void {
    this.#walking = false;
    this.wake();
  }

  /** The producer ended (its walk done and not followed, or stopped): the lanes may end once their work is. */
  end(): void {
    this.#walking = false;
    this.#done = true;
    this.wake();
  }

  private wake(): void {
    this.#waiting.clear();
    for (const w of this.#wakers) w();
  }
}

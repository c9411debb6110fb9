import path from 'node:path';
import { shownText } from '../display.js';
import type { Decision, Ledger, ReviewCursor, ReviewPhoto } from '../ledger/index.js';

/**
 * The review page's counts: its lists' sizes (not reviewed, accepted, rejected, failed, held,
 * all done) over every folder and in each, without the page holding the photos. Made from the
 * ledger a part at a time (`build`: the first part before the page is served, the rest between
 * requests, so a million photos do not hold up the first view), then kept up to date from the
 * photos changed since (a state move, a decision): each photo's list and folder are kept in two
 * typed arrays indexed by its id, five bytes a photo (5 MB at a million), so that a change is
 * counted out of where it was and into where it is, whether the part that holds it was counted
 * yet or not.
 */
/** Photos counted in one part of the build: a few tens of milliseconds of the server's time. */
const PART = 20_000;

/** The lists, in the order of `counts` below; 0 is a photo in no list (at work). */
const LISTS = ['unreviewed', 'accepted', 'rejected', 'failed', 'held'] as const;
type List = (typeof LISTS)[number];

/** Per list, and `all` (every done photo). */
export type ListCounts = Record<List | 'all', number>;

export interface FolderCounts {
  /** The folder's number, as the page asks for it (its name is shown escaped, so it cannot be the key). */
  readonly i: number;
  /** Its name as shown ('' at the top). */
  readonly f: string;
  readonly c: ListCounts;
}

function listOf(state: string, decision: Decision | null): number {
  if (state === 'done') return decision === 'accept' ? 2 : decision === 'reject' ? 3 : 1;
  if (state === 'failed' || state === 'skipped') return 4;
  return state === 'held' ? 5 : 0;
}

function folderOf(photoPath: string): string {
  const folder = path.posix.dirname(photoPath);
  return folder === '.' ? '' : folder;
}

export class ReviewCounter {
  private list = new Uint8Array(1024);
  private folder = new Uint32Array(1024);
  private readonly folders: string[] = [];
  private readonly folderIds = new Map<string, number>();
  /** Per folder, per list (1…5). */
  private readonly counts: number[][] = [];
  private cursor: ReviewCursor;
  /** The last id counted by the build; null once every photo was. */
  private builtTo: number | null = 0;
  /** Moves with every change of a count, and when the build ends: the page asks for the counts again when it moved. */
  version = 0;

  constructor(
    private readonly ledger: Ledger,
    private readonly part = PART,
  ) {
    // Changes after this are read again by update(); a photo counted twice is counted once (set).
    this.cursor = ledger.reviews.cursor();
  }

  /** Counts the next part of the photos (`part` of them); false once every photo was counted. */
  buildPart(): boolean {
    if (this.builtTo === null) return false;
    const rows = this.ledger.reviews.listedAfter(this.builtTo, this.part);
    for (const p of rows) this.set(p.id, p.path, listOf(p.state, p.decision));
    this.builtTo = rows.length < this.part ? null : rows.at(-1)!.id;
    if (this.builtTo === null) this.version++;
    return this.builtTo !== null;
  }

  /** Whether every photo was counted: the counts are the lists' (before, they are none). */
  get ready(): boolean {
    return this.builtTo === null;
  }

  /** Brought up to date with the ledger; the photos changed since the last time. */
  update(): ReviewPhoto[] {
    const { cursor, photos } = this.ledger.reviews.photos(this.cursor);
    this.cursor = cursor;
    for (const p of photos) this.set(p.id, p.path, listOf(p.state, p.decision));
    if (photos.length > 0) this.version++;
    return photos;
  }

  /** Where the counts stand: the page asks for what changed after it. */
  at(): ReviewCursor {
    return this.cursor;
  }

  /** The folder's name by its number (undefined: no such folder). */
  folderName(i: number): string | undefined {
    return this.folders[i];
  }

  /** The number of the folder a photo is in. */
  folderIndex(photoPath: string): number {
    return this.folderId(folderOf(photoPath));
  }

  /** Every folder with its counts, by name as shown; and the counts over all of them. */
  summary(): { counts: ListCounts; folders: FolderCounts[] } {
    const total = [0, 0, 0, 0, 0, 0];
    const folders: FolderCounts[] = [];
    for (const [i, name] of this.folders.entries()) {
      const c = this.counts[i]!;
      for (let l = 1; l <= 5; l++) total[l]! += c[l]!;
      folders.push({ i, f: shownText(name), c: named(c) });
    }
    folders.sort((a, b) => (a.f < b.f ? -1 : a.f > b.f ? 1 : a.i - b.i));
    return { counts: named(total), folders };
  }

  private folderId(name: string): number {
    let i = this.folderIds.get(name);
    if (i === undefined) {
      i = this.folders.length;
      this.folders.push(name);
      this.folderIds.set(name, i);
      this.counts.push([0, 0, 0, 0, 0, 0]);
    }
    return i;
  }

  private set(id: number, photoPath: string, list: number): void {
    if (id >= this.list.length) {
      const size = Math.max(id + 1, this.list.length * 2);
      const grownList = new Uint8Array(size);
      grownList.set(this.list);
      const grownFolder = new Uint32Array(size);
      grownFolder.set(this.folder);
      this.list = grownList;
      this.folder = grownFolder;
    }
    const was = this.list[id]!;
    if (was !== 0) this.counts[this.folder[id]!]![was]!--;
    const folder = list === 0 ? 0 : this.folderIndex(photoPath);
    if (list !== 0) this.counts[folder]![list]!++;
    this.list[id] = list;
    this.folder[id] = folder;
  }
}

function named(c: readonly number[]): ListCounts {
  const out = { all: c[1]! + c[2]! + c[3]! } as ListCounts;
  for (const [k, name] of LISTS.entries()) out[name] = c[k + 1]!;
  return out;
}

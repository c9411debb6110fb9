import type Database from 'better-sqlite3';
import { clock } from '../clock.js';
import type { Items } from './items.js';
import { FIRST_STEP, type PhotoFacts } from './rows.js';
import { hasTable, inTransaction, stmt } from './statements.js';
import { ReviewError } from '../errors.js';

/**
 * A person's review of the outputs (migrations/011_reviews.sql): each done photo accepted,
 * rejected or not yet reviewed, about one output, the one whose SHA-256 it was shown; and the
 * photos `retry --rejected` sent back, with their rejected outputs kept aside.
 *
 * The review page writes here beside a running `run`, without the run's lock (§ L6 is about
 * item states; a decision moves none): each decision is one IMMEDIATE transaction of a few
 * rows, which waits its turn for SQLite's write lock (busy timeout) as every ledger write does,
 * so neither side loses a write. A decision stands only while the photo's output is the one it
 * was about: a photo redone (retry --rejected, a changed file, --redo-steps) is back to "not
 * reviewed" without anything being deleted.
 */

export type Decision = 'accept' | 'reject';
export type ReviewAction = Decision | 'clear';

/** A done photo's decision about its current output. */
export interface StandingDecision {
  readonly decision: Decision;
  readonly reason: string | null;
  readonly atMs: number;
}

/** Where a done photo stands with its review. */
export type ReviewState = 'accepted' | 'rejected' | 'unreviewed';

export interface ReviewCounts {
  readonly accepted: number;
  readonly rejected: number;
  /** Done photos with no decision about their current output. */
  readonly unreviewed: number;
}

/** A photo as the review page lists it (done, failed, skipped or held): the report's facts of it, and its review. */
export interface ReviewPhoto extends PhotoFacts {
  /** The output's SHA-256 as written: what a decision is about. */
  readonly sha256: string | null;
  /** When the photo was taken and its caption, as carried to the output (migration 009). */
  readonly taken: string | null;
  readonly caption: string | null;
  readonly decision: Decision | null;
  readonly decisionReason: string | null;
  readonly decidedMs: number | null;
}

/** A decision recorded, as the page and the library get it back. */
export interface Recorded {
  readonly id: number;
  readonly decision: Decision | null;
  readonly reason: string | null;
  readonly atMs: number;
}

/** A photo `retry --rejected` may send back: done, its standing decision a rejection. */
export interface RejectedPhoto {
  readonly id: number;
  readonly path: string;
  readonly reason: string | null;
  readonly sha256: string | null;
  /** Every output of the photo (each of its names has one), with its checksum as written. */
  readonly outputs: readonly { readonly path: string; readonly sha256: string | null }[];
}

/** A rejected output kept aside: where it is now, and the name it had. */
export interface KeptOutput {
  readonly path: string;
  readonly fromPath: string;
  readonly sha256: string | null;
}

/** Where the list of photos and decisions stood: the page asks for what changed after it. */
export interface ReviewCursor {
  /** The newest transition's id. */
  readonly t: number;
  /** The newest review_log id. */
  readonly d: number;
}

/** The states the review page lists (done to review; failed, skipped and held to see). */
const LISTED = "('done', 'failed', 'skipped', 'held')";

const PHOTO_COLUMNS = `i.id, i.rel_path AS path, i.src_path AS srcPath, i.state, i.step_index AS step, i.reason,
  i.output_path AS outputPath, f.sha256, f.meta_taken AS taken, f.meta_caption AS caption,
  r.decision, r.reason AS decisionReason, r.at_ms AS decidedMs`;

/** The page's lists: each photo is in one (a done photo by its standing decision), or in none while it is at work. */
export type ReviewFilter = 'unreviewed' | 'accepted' | 'rejected' | 'failed' | 'held' | 'all' | 'listed';

/**
 * Each list as SQL over `items i` and its STANDING decision `r`. The done photos' lists walk
 * the path index (`+i.state`: not the state index, which would sort every done photo to find
 * the first few); the failed and held, few, are found by state.
 */
const REVIEW_FILTERS: Readonly<Record<ReviewFilter, string>> = {
  unreviewed: "+i.state = 'done' AND r.decision IS NULL",
  accepted: "+i.state = 'done' AND r.decision = 'accept'",
  rejected: "+i.state = 'done' AND r.decision = 'reject'",
  failed: "i.state IN ('failed', 'skipped')",
  held: "i.state = 'held'",
  all: "+i.state = 'done'",
  listed: `+i.state IN ${LISTED}`,
};

export interface ReviewWindow {
  readonly filter: ReviewFilter;
  /** The folder (its own photos), '' for the top one, null for every folder. */
  readonly folder: string | null;
  readonly after?: string | undefined;
  readonly before?: string | undefined;
  readonly limit: number;
}

/** A done photo's standing decision: the review row about its current output (the first name's). */
const STANDING = `LEFT JOIN output_files f ON f.path = i.output_path
  LEFT JOIN reviews r ON r.item_id = i.id AND i.state = 'done' AND r.output_sha256 IS f.sha256`;

/** Whether the ledger has the review tables: a ledger opened read-only is not migrated, and may predate them. */
function hasReviews(db: Database.Database): boolean {
  return hasTable(db, 'reviews');
}

/**
 * Accepted, rejected and not reviewed, over the done photos (zeros but `unreviewed` on a ledger
 * older than the review). The ledger keeps the first two (migrations/015_review_counts.sql); a
 * ledger opened read-only may predate that, and its decisions are counted from the rows.
 */
export function readReviewCounts(db: Database.Database, done?: number): ReviewCounts {
  const doneNow = done ?? stmt<[], { n: number }>(db, "SELECT COUNT(*) AS n FROM items WHERE state = 'done'").get()!.n;
  if (!hasReviews(db)) return { accepted: 0, rejected: 0, unreviewed: doneNow };
  const r = keptStanding(db) ?? readStandingCounts(db);
  return { accepted: r.accepted, rejected: r.rejected, unreviewed: doneNow - r.accepted - r.rejected };
}

/** The standing decisions as the ledger's triggers count them, or undefined on a ledger older than those. */
function keptStanding(db: Database.Database): { accepted: number; rejected: number } | undefined {
  if (!hasTable(db, 'review_counts')) return undefined;
  const n = new Map(
    stmt<[], { decision: Decision; n: number }>(db, 'SELECT decision, n FROM review_counts')
      .all()
      .map((r) => [r.decision, r.n]),
  );
  return { accepted: n.get('accept') ?? 0, rejected: n.get('reject') ?? 0 };
}

/**
 * The decisions that stand (STANDING, from the decisions' side), counted from the rows: what
 * migration 015's triggers keep, on a ledger older than them. Read through the reviews
 * alone, each its photo's and output's row by key, whatever the number of photos done. CROSS
 * JOIN keeps that order: left to itself SQLite walks every done photo by the state index and
 * looks for its review (a million photos, a tenth reviewed: 0.76 s, against 0.48 s).
 */
export function readStandingCounts(db: Database.Database): { accepted: number; rejected: number } {
  const r = stmt<[], { accepted: number | null; rejected: number | null }>(
    db,
    `SELECT SUM(r.decision = 'accept') AS accepted, SUM(r.decision = 'reject') AS rejected
     FROM reviews r CROSS JOIN items i ON i.id = r.item_id AND i.state = 'done' LEFT JOIN output_files f ON f.path = i.output_path
     WHERE r.output_sha256 IS f.sha256`,
  ).get()!;
  return { accepted: r.accepted ?? 0, rejected: r.rejected ?? 0 };
}

/** Each photo's standing decision by id, for the report and provenance.csv (none on a ledger older than the review). */
export function readDecisions(db: Database.Database): Map<number, StandingDecision> {
  const out = new Map<number, StandingDecision>();
  if (!hasReviews(db)) return out;
  const rows = stmt<[], StandingDecision & { id: number }>(
    db,
    `SELECT i.id, r.decision, r.reason, r.at_ms AS atMs FROM items i ${STANDING} WHERE i.state = 'done' AND r.decision IS NOT NULL`,
  ).all();
  for (const r of rows) out.set(r.id, { decision: r.decision, reason: r.reason, atMs: r.atMs });
  return out;
}

/**
 * The review's reads and writes. A writer's ledger (migrated) has the tables; of the reads,
 * only `counts`, `decisions`, `rejected` and `redoModeOf` are asked of a ledger opened
 * read-only, and they allow for an older one.
 */
export class Reviews {
  private tables: boolean | undefined;

  constructor(
    private readonly db: Database.Database,
    private readonly items: Items,
  ) {}

  counts(): ReviewCounts {
    return readReviewCounts(this.db);
  }

  /** Each done photo's standing decision, by id (readDecisions). */
  decisions(): Map<number, StandingDecision> {
    return readDecisions(this.db);
  }

  /** Where the photos and decisions stand now. */
  cursor(): ReviewCursor {
    const t = stmt<[], { id: number | null }>(this.db, 'SELECT MAX(id) AS id FROM transitions').get()?.id ?? 0;
    const d = stmt<[], { id: number | null }>(this.db, 'SELECT MAX(id) AS id FROM review_log').get()?.id ?? 0;
    return { t, d };
  }

  /**
   * The photos the page lists, ordered by path: all of them, or those changed (a state move, a
   * decision) after `since`; with the cursor to ask from next time, read in one transaction.
   */
  photos(since?: ReviewCursor): { cursor: ReviewCursor; photos: ReviewPhoto[] } {
    return this.db.transaction(() => {
      const cursor = this.cursor();
      if (since === undefined) {
        const photos = stmt<[], ReviewPhoto>(
          this.db,
          `SELECT ${PHOTO_COLUMNS} FROM items i ${STANDING} WHERE i.state IN ${LISTED} ORDER BY i.rel_path`,
        ).all();
        return { cursor, photos };
      }
      return { cursor, photos: this.changedSince(since) };
    })();
  }

  /** The photos changed (a state move, a decision) after `since`, whatever their state, by path. */
  changedSince(since: ReviewCursor): ReviewPhoto[] {
    return stmt<[number, number], ReviewPhoto>(
      this.db,
      `SELECT ${PHOTO_COLUMNS} FROM items i ${STANDING}
       WHERE i.id IN (SELECT item_id FROM transitions WHERE id > ? UNION SELECT item_id FROM review_log WHERE id > ?)
       ORDER BY i.rel_path`,
    ).all(since.t, since.d);
  }

  /**
   * A window of the photos the page lists, in path order: those of `filter`, in `folder` (its
   * own photos, not its subfolders'; null: every folder), after `after` or before `before`
   * (the `limit` nearest to it, still in path order). Each query walks one index from where
   * the window starts (by path, or by state for the few failed and held): a window costs the
   * same whatever the size of the archive.
   */
  window(q: ReviewWindow): ReviewPhoto[] {
    const where: string[] = [REVIEW_FILTERS[q.filter]];
    const params: (string | number)[] = [];
    if (q.folder !== null) {
      if (q.folder === '') where.push("instr(i.rel_path, '/') = 0");
      else {
        // The folder's subtree by the path index ('/' + 1 is '0'), less its subfolders.
        where.push("i.rel_path > ? AND i.rel_path < ? AND instr(substr(i.rel_path, ?), '/') = 0");
        params.push(`${q.folder}/`, `${q.folder}0`, q.folder.length + 2);
      }
    }
    const backwards = q.before !== undefined;
    if (backwards) {
      where.push('i.rel_path < ?');
      params.push(q.before!);
    } else if (q.after !== undefined) {
      where.push('i.rel_path > ?');
      params.push(q.after);
    }
    params.push(q.limit);
    const rows = stmt<(string | number)[], ReviewPhoto>(
      this.db,
      `SELECT ${PHOTO_COLUMNS} FROM items i ${STANDING} WHERE ${where.join(' AND ')}
       ORDER BY i.rel_path ${backwards ? 'DESC' : ''} LIMIT ?`,
    ).all(...params);
    return backwards ? rows.reverse() : rows;
  }

  /**
   * The photos the page lists after id `afterId`, at most `limit`, by id (id, path, state,
   * standing decision): the page's counts are made from them, a part at a time.
   */
  listedAfter(afterId: number, limit: number): { id: number; path: string; state: string; decision: Decision | null }[] {
    return stmt<[number, number], { id: number; path: string; state: string; decision: Decision | null }>(
      this.db,
      `SELECT i.id, i.rel_path AS path, i.state, r.decision FROM items i ${STANDING}
       WHERE i.id > ? AND i.state IN ${LISTED} ORDER BY i.id LIMIT ?`,
    ).all(afterId, limit);
  }

  /** One photo as the page lists it, whatever its state; undefined when there is no such photo. */
  photo(id: number): ReviewPhoto | undefined {
    return stmt<[number], ReviewPhoto>(this.db, `SELECT ${PHOTO_COLUMNS} FROM items i ${STANDING} WHERE i.id = ?`).get(id);
  }

  /** A photo by its path under input.dir (the name the library's caller knows), else undefined. */
  idOf(photoPath: string): number | undefined {
    return (
      stmt<[string], { id: number }>(this.db, 'SELECT id FROM items WHERE rel_path = ?').get(photoPath)?.id ??
      stmt<[string], { id: number }>(this.db, 'SELECT item_id AS id FROM inputs WHERE name = ? ORDER BY id DESC LIMIT 1').get(photoPath)?.id
    );
  }

  /**
   * Record a person's decision about the output they were shown (`seenSha256`, null for an
   * output written before checksums were kept), in one IMMEDIATE transaction: committed before
   * this returns, so the page shows it only once it is in the ledger. Refused (ReviewError)
   * when the photo is not done or its output is no longer the one shown.
   */
  record(id: number, action: ReviewAction, seenSha256: string | null, reason: string | null = null): Recorded {
    const note = action === 'reject' && reason !== null && reason.trim() !== '' ? reason.trim().slice(0, 500) : null;
    return inTransaction(this.db, () => {
      const now = clock.now();
      const p = this.photo(id);
      if (p === undefined) throw new ReviewError(`no photo with id ${id} in this ledger`);
      if (p.state !== 'done') throw new ReviewError(`${p.path} is ${p.state}, not done: only a done photo's output can be reviewed`);
      if ((p.sha256 ?? null) !== seenSha256) {
        throw new ReviewError(`the output of ${p.path} changed since it was shown (it was redone): look at it again`, 'stale');
      }
      stmt(this.db, 'INSERT INTO review_log (item_id, action, output_sha256, reason, at_ms) VALUES (?, ?, ?, ?, ?)').run(
        id,
        action,
        p.sha256,
        note,
        now,
      );
      if (action === 'clear') {
        stmt(this.db, 'DELETE FROM reviews WHERE item_id = ?').run(id);
        return { id, decision: null, reason: null, atMs: now };
      }
      stmt(
        this.db,
        `INSERT INTO reviews (item_id, decision, output_sha256, output_path, reason, at_ms) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (item_id) DO UPDATE SET decision = excluded.decision, output_sha256 = excluded.output_sha256,
           output_path = excluded.output_path, reason = excluded.reason, at_ms = excluded.at_ms`,
      ).run(id, action, p.sha256, p.outputPath, note, now);
      return { id, decision: action, reason: note, atMs: now };
    });
  }

  /** Done photos whose standing decision is a rejection, with every output they have, by path. */
  rejected(): RejectedPhoto[] {
    if (!hasReviews(this.db)) return [];
    const rows = stmt<[], { id: number; path: string; reason: string | null; sha256: string | null }>(
      this.db,
      `SELECT i.id, i.rel_path AS path, r.reason, f.sha256 FROM items i ${STANDING}
       WHERE i.state = 'done' AND r.decision = 'reject' ORDER BY i.rel_path`,
    ).all();
    return rows.map((r) => ({ ...r, outputs: this.outputsOf(r.id) }));
  }

  /** Every output file of a photo (one per name), the item's own first. */
  outputsOf(id: number): { path: string; sha256: string | null }[] {
    return stmt<[number], { path: string; sha256: string | null }>(
      this.db,
      `SELECT f.path, f.sha256 FROM output_files f JOIN items i ON i.id = f.item_id
       WHERE f.item_id = ? AND f.kind = 'output' ORDER BY (f.path = i.output_path) DESC, f.path`,
    ).all(id);
  }

  /**
   * `retry --rejected`: the photo goes back to its first step under the job's steps, to be
   * uploaded again, its rejected outputs recorded where they were
   * kept, the redo logged with the mode asked for (null: the job's). One transaction; false,
   * with nothing written, when the photo is no longer done and rejected about `sha256` (a
   * decision changed on the page meanwhile).
   */
  sendBack(id: number, sha256: string | null, mode: string | null, kept: readonly KeptOutput[], note: string): boolean {
    return inTransaction(this.db, () => {
      const p = this.photo(id);
      if (p === undefined || p.state !== 'done' || p.decision !== 'reject' || (p.sha256 ?? null) !== sha256) return false;
      const now = clock.now();
      for (const k of kept) {
        stmt(
          this.db,
          `INSERT INTO rejected_outputs (path, item_id, from_path, sha256, reason, kept_ms) VALUES (?, ?, ?, ?, ?, ?)
           ON CONFLICT (path) DO NOTHING`,
        ).run(k.path, id, k.fromPath, k.sha256, p.decisionReason, now);
        // No longer an output of the photo: the redone one takes the name.
        stmt(this.db, 'DELETE FROM output_files WHERE path = ?').run(k.fromPath);
        stmt(this.db, 'UPDATE inputs SET output_path = NULL, written_ms = NULL WHERE output_path = ?').run(k.fromPath);
      }
      stmt(this.db, "INSERT INTO review_log (item_id, action, output_sha256, reason, mode, at_ms) VALUES (?, 'redo', ?, ?, ?, ?)").run(
        id,
        sha256,
        p.decisionReason,
        mode,
        now,
      );
      stmt(this.db, 'DELETE FROM reviews WHERE item_id = ?').run(id);
      // Uploaded afresh, by whichever key the next run has: a review can come days after the
      // night, when the service has long forgotten the upload and the key may have changed.
      // A URL input has nothing to upload: it goes straight to its create.
      const item = this.items.get(id)!;
      if (item.content_hash?.startsWith('url:') === true && item.image_url !== null)
        this.items.move(id, 'done', 'uploaded', { ...FIRST_STEP, key_fp: null, input_url: item.image_url, due_ms: now }, note);
      else this.items.move(id, 'done', 'queued', { ...FIRST_STEP, key_fp: null, image_url: null, input_url: null }, note);
      return true;
    });
  }

  /** Every rejected output kept aside, oldest first. */
  allKept(): (KeptOutput & { itemId: number })[] {
    return stmt<[], KeptOutput & { itemId: number }>(
      this.db,
      'SELECT path, from_path AS fromPath, sha256, item_id AS itemId FROM rejected_outputs ORDER BY kept_ms, path',
    ).all();
  }

  /** The mode the photo's creates use instead of the job's, when `retry --rejected --mode` asked for one. */
  redoModeOf(id: number): string | null {
    // Asked for every create and every output written, and of read-only ledgers (the manifest): whether the table is there is asked once.
    this.tables ??= hasReviews(this.db);
    if (!this.tables) return null;
    return (
      stmt<[number], { mode: string | null }>(
        this.db,
        "SELECT mode FROM review_log WHERE item_id = ? AND action = 'redo' ORDER BY id DESC LIMIT 1",
      ).get(id)?.mode ?? null
    );
  }
}

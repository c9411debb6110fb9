import type { ReportBucket } from '../ledger/index.js';
import { escapeHtml, formatBucket, formatClock, formatTime } from './format.js';

export interface ChartOptions {
  readonly width?: number;
  readonly height?: number;
}

/** Photos done per bucket as an inline SVG bar chart (no script, no external font). */
export function throughputSvg(buckets: readonly ReportBucket[], bucketMs: number, opts: ChartOptions = {}): string {
  const W = opts.width ?? 760;
  const H = opts.height ?? 210;
  const m = { left: 44, right: 12, top: 14, bottom: 34 };
  const pw = W - m.left - m.right;
  const ph = H - m.top - m.bottom;
  const max = Math.max(0, ...buckets.map((b) => b.done));
  const top = niceCeil(max);
  const label = `Photos done per ${formatBucket(bucketMs)}`;
  const parts: string[] = [];
  parts.push(
    `<svg class="chart" id="throughput-chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${escapeHtml(label)}">`,
    `<title>${escapeHtml(label)}</title>`,
  );
  // y grid: 0, half, top
  const ticks = top === 0 ? [0] : Number.isInteger(top / 2) && top > 1 ? [0, top / 2, top] : [0, top];
  for (const v of ticks) {
    const y = m.top + ph - (top === 0 ? 0 : (v / top) * ph);
    parts.push(
      `<line x1="${m.left}" x2="${W - m.right}" y1="${y.toFixed(1)}" y2="${y.toFixed(1)}" class="grid"/>`,
      `<text x="${m.left - 6}" y="${(y + 4).toFixed(1)}" text-anchor="end" class="tick">${v}</text>`,
    );
  }
  if (buckets.length === 0 || max === 0) {
    parts.push(`<text x="${m.left + pw / 2}" y="${m.top + ph / 2}" text-anchor="middle" class="empty">no photo done yet</text>`);
  } else {
    const slot = pw / buckets.length;
    const bw = Math.max(1, slot * (buckets.length > 60 ? 0.9 : 0.78));
    buckets.forEach((b, i) => {
      const h = (b.done / top) * ph;
      const x = m.left + i * slot + (slot - bw) / 2;
      const y = m.top + ph - h;
      parts.push(
        `<rect class="col" x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${bw.toFixed(1)}" height="${Math.max(0, h).toFixed(1)}">` +
          `<title>${escapeHtml(`${formatTime(b.startMs, false)} – ${formatClock(b.startMs + bucketMs)}: ${b.done} done`)}</title></rect>`,
      );
    });
    const every = Math.max(1, Math.ceil(buckets.length / 7));
    const secs = bucketMs < 60_000;
    buckets.forEach((b, i) => {
      if (i % every !== 0) return;
      const x = m.left + i * slot;
      parts.push(
        `<line x1="${x.toFixed(1)}" x2="${x.toFixed(1)}" y1="${m.top + ph}" y2="${m.top + ph + 4}" class="axis"/>`,
        `<text x="${x.toFixed(1)}" y="${m.top + ph + 17}" text-anchor="start" class="tick">${formatClock(b.startMs, secs)}</text>`,
      );
    });
  }
  parts.push(`<line x1="${m.left}" x2="${W - m.right}" y1="${m.top + ph}" y2="${m.top + ph}" class="axis"/>`);
  parts.push('</svg>');
  return parts.join('');
}

/** 0 → 0; otherwise the next of 1, 2, 5 × 10^k at or above n. */
function niceCeil(n: number): number {
  if (n <= 0) return 0;
  const p = 10 ** Math.floor(Math.log10(n));
  for (const f of [1, 2, 5, 10]) if (f * p >= n) return f * p;
  return 10 * p;
}

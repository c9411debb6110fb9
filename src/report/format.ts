/** Text helpers for the HTML report: escaping, times, durations, numbers. */

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** `2026-01-01 03:04:05 UTC+01:00`, in the local time zone of the machine writing the report. */
export function formatTime(ms: number, withSeconds = true): string {
  const d = new Date(ms);
  const off = -d.getTimezoneOffset();
  const tz = `UTC${off >= 0 ? '+' : '-'}${pad(Math.floor(Math.abs(off) / 60))}:${pad(Math.abs(off) % 60)}`;
  const time = `${pad(d.getHours())}:${pad(d.getMinutes())}${withSeconds ? `:${pad(d.getSeconds())}` : ''}`;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${time} ${tz}`;
}

/** `HH:MM` (local), for chart axes. */
export function formatClock(ms: number, withSeconds = false): string {
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}${withSeconds ? `:${pad(d.getSeconds())}` : ''}`;
}

/** `850 ms`, `12.4 s`, `3 min 20 s`, `2 h 05 min`, `1 d 3 h`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return '–';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${pad(s % 60)} s` : ''}`;
  const m = Math.round(s / 60);
  if (m < 24 * 60) return `${Math.floor(m / 60)} h ${pad(m % 60)} min`;
  const h = Math.round(m / 60);
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

export function formatNumber(n: number, digits = 0): string {
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** A bucket size in words: `10 s`, `10 min`, `1 h`. */
export function formatBucket(ms: number): string {
  if (ms < 60_000) return `${ms / 1000} s`;
  if (ms < 3_600_000) return `${ms / 60_000} min`;
  if (ms < 86_400_000) return `${ms / 3_600_000} h`;
  return `${ms / 86_400_000} d`;
}

/** `850 B`, `12.3 KB`, `4.1 MB` (powers of 1024, as file managers show them). */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

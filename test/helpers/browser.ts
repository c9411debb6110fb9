import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import sparticuz from '@sparticuz/chromium';
import { chromium, type Browser } from 'playwright-core';

const VERSION = '143';

/**
 * The one way tests get a browser: the Chromium that `npm ci` brings (@sparticuz/chromium
 * 143.x: the binary ships inside the package, brotli-packed), driven by playwright-core.
 * Never a system browser: the README's `npm ci && npm test` must pass on a machine that has
 * none, and a silent fallback to /usr/bin/chromium would hide exactly that failure.
 * (153.x needs Node 22.)
 */
export async function launchBrowser(): Promise<Browser> {
  const dir = await unpackedChromium();
  const executablePath = path.join(dir, 'chromium');
  const fonts = path.join(dir, 'fonts');
  try {
    return await chromium.launch({
      executablePath,
      args: sparticuz.args,
      headless: true,
      env: { ...process.env, ...(existsSync(fonts) ? { FONTCONFIG_PATH: fonts } : {}) },
    });
  } catch (err) {
    throw new Error(`the Chromium of @sparticuz/chromium (${executablePath}) did not start: ${(err as Error).message.split('\n')[0]}`);
  }
}

/**
 * The package unpacks into os.tmpdir() itself (`/tmp/chromium`, `/tmp/fonts`, swiftshader's
 * libraries loose in /tmp), trusts whatever is there, and writes in place. So two test files
 * unpacking at once would start a half-written binary, an interrupted unpack would stay broken
 * for good, and a root run's 0700 binary would refuse the next user's. Here each user gets a
 * folder of their own, filled in a fresh temp folder and renamed into place only when whole.
 */
async function unpackedChromium(): Promise<string> {
  const uid = safeUid();
  const final = path.join(tmpdir(), `darkroom-chromium-${VERSION}-${uid}`);
  if (existsSync(path.join(final, 'chromium'))) return final;
  mkdirSync(tmpdir(), { recursive: true });
  const work = mkdtempSync(path.join(tmpdir(), `darkroom-chromium-${VERSION}-${uid}.partial-`));
  // executablePath() reads os.tmpdir() (TMPDIR) synchronously for every file before its first await.
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = work;
  let pending: Promise<string>;
  try {
    pending = sparticuz.executablePath();
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
  try {
    const exe = await pending;
    if (path.dirname(exe) !== work) throw new Error(`@sparticuz/chromium unpacked to ${exe}, expected it in ${work}`);
    // Its fonts.conf names /tmp/fonts; without a font found, every line of text lays out 0 px high.
    writeFileSync(path.join(work, 'fonts', 'fonts.conf'), fontsConf(final));
    try {
      renameSync(work, final);
    } catch (err) {
      // Another process finished first: its copy is whole, use it.
      if (!existsSync(path.join(final, 'chromium'))) throw err;
      rmSync(work, { recursive: true, force: true });
    }
    return final;
  } catch (err) {
    rmSync(work, { recursive: true, force: true });
    throw err;
  }
}

function safeUid(): string {
  try {
    return String(userInfo().uid);
  } catch {
    return 'user';
  }
}

/** The package's fonts first (Open Sans), then the system's if it has any. */
function fontsConf(final: string): string {
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  return [
    '<?xml version="1.0"?>',
    '<!DOCTYPE fontconfig SYSTEM "fonts.dtd">',
    '<fontconfig>',
    `  <dir>${esc(path.join(final, 'fonts', 'fonts'))}</dir>`,
    '  <dir>/usr/share/fonts</dir>',
    `  <cachedir>${esc(path.join(final, 'fonts-cache'))}</cachedir>`,
    '</fontconfig>',
    '',
  ].join('\n');
}

/**
 * Docs that cannot rot: every relative link of README and docs/ leads to a file (and a
 * heading, when it names one), every `darkroom` command and flag the user pages name is in
 * the CLI's own --help, and the job-file page names every key of the config schema. (The
 * TypeScript examples are type-checked against the shipped package by
 * test/package/pack.test.ts.) Each check is a pure function of the page text, so the
 * negative cases below show it failing on a broken link, an unknown flag and a missing key.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { beforeAll, describe, expect, it } from 'vitest';
import { jobSchema } from '../../src/config/schema.js';
import { ERROR_EXIT, EXIT, EXIT_MEANING } from '../../src/errors.js';
import { CAPABILITIES, CAPABILITY_NAMES } from '../../src/spec/capabilities.js';
import { runCli } from '../helpers/cli.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? markdownFiles(p) : e.name.endsWith('.md') ? [p] : [];
  });
}
const PAGES = [path.join(ROOT, 'README.md'), ...markdownFiles(path.join(ROOT, 'docs'))];
/** Pages about developing darkroom itself: their flags are the bench's and the crash test's (npm scripts), not the CLI's. */
const DEVELOPER_PAGES = new Set(['docs/performance.md', 'docs/development.md', 'docs/decisions.md']);
const rel = (p: string) => path.relative(ROOT, p).split(path.sep).join('/');

/** The text outside fenced code blocks, where a markdown link is a link. */
const prose = (text: string) => text.replace(/^```[\s\S]*?^```/gm, '');

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

function anchorsOf(file: string): Set<string> {
  const text = readFileSync(file, 'utf8');
  return new Set([...prose(text).matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)));
}

/** The relative links of a page that lead nowhere: `target (why)`. */
export function brokenLinks(file: string, text: string): string[] {
  const broken: string[] = [];
  for (const m of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = m[1]!;
    if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
    const [p, anchor] = target.split('#') as [string, string | undefined];
    const to = p === '' ? file : path.resolve(path.dirname(file), decodeURIComponent(p));
    if (!existsSync(to)) {
      broken.push(`${target} (no such file)`);
      continue;
    }
    if (anchor !== undefined && statSync(to).isFile() && to.endsWith('.md') && !anchorsOf(to).has(anchor)) {
      broken.push(`${target} (no such heading)`);
    }
  }
  return broken;
}

/** Each `darkroom <command> … --flag` a page shows, in code spans and code blocks. */
export function commandsNamed(text: string): { command: string; flags: string[]; where: string }[] {
  const snippets = [
    ...[...text.matchAll(/^```(?!ts)[^\n]*\n([\s\S]*?)^```/gm)].flatMap((m) => m[1]!.split('\n')),
    ...[...prose(text).matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!),
  ];
  const named: { command: string; flags: string[]; where: string }[] = [];
  for (const s of snippets) {
    // One snippet may chain commands (`darkroom status … && darkroom retry …`).
    for (const part of s.split(/(?=\bdarkroom [a-z])/)) {
      const m = /^darkroom ([a-z][a-z-]*)(?=\s|$)(.*)$/.exec(part.trim());
      if (m === null) continue;
      const flags = [...m[2]!.matchAll(/(?:^|[\s[])(--[a-z][a-z0-9-]*)/g)].map((f) => f[1]!);
      named.push({ command: m[1]!, flags, where: part.trim() });
    }
  }
  return named;
}

/** Every `--flag` in a code span or block of a page, whichever command it belongs to. */
export function flagsNamed(text: string): string[] {
  const code = [
    ...[...text.matchAll(/^```(?!ts)[^\n]*\n([\s\S]*?)^```/gm)].map((m) => m[1]!),
    ...[...prose(text).matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!),
  ].join('\n');
  return [...new Set([...code.matchAll(/(?:^|[\s[`(])(--[a-z][a-z0-9-]*)/gm)].map((f) => f[1]!))];
}

/** Every key path of the job file's schema: `service.baseUrl`, `steps[].capability`, … */
export function schemaKeys(): string[] {
  const out: string[] = [];
  const walk = (s: unknown, at: string) => {
    if (s === null || typeof s !== 'object') return;
    const o = s as { anyOf?: unknown[]; oneOf?: unknown[]; allOf?: unknown[]; properties?: Record<string, unknown>; items?: unknown };
    for (const alt of [...(o.anyOf ?? []), ...(o.oneOf ?? []), ...(o.allOf ?? [])]) walk(alt, at);
    for (const [k, v] of Object.entries(o.properties ?? {})) {
      const p = at === '' ? k : `${at}.${k}`;
      if (!out.includes(p)) out.push(p);
      walk(v, p);
    }
    if (o.items !== undefined) walk(o.items, `${at}[]`);
  };
  walk(z.toJSONSchema(jobSchema, { io: 'input', unrepresentable: 'any' }), '');
  return out;
}

/** The keys a job-file page does not name: a key counts as named in backticks, or (a top-level one) as `key:` in its YAML. */
export function keysMissing(page: string, keys: readonly string[]): string[] {
  return keys.filter(
    (k) => !page.includes(`\`${k}\``) && !(k.includes('.') || k.includes('[') ? false : new RegExp(`^${k}:`, 'm').test(page)),
  );
}

/** --help of the CLI and of each command it lists. */
const help = new Map<string, string>();

beforeAll(async () => {
  const top = await runCli(['--help']);
  expect(top.code).toBe(0);
  help.set('', top.stdout);
  const commands = [...top.stdout.matchAll(/^ {2}darkroom ([a-z-]+)/gm)].map((m) => m[1]!);
  expect(commands).toContain('run');
  const each = await Promise.all(commands.map((c) => runCli([c, '--help'])));
  commands.forEach((c, i) => help.set(c, each[i]!.stdout));
}, 120_000);

const flagsOf = (command: string) => new Set([...(help.get(command) ?? '').matchAll(/(?:^|\s)(--[a-z][a-z0-9-]*)/gm)].map((m) => m[1]!));
const allFlags = () => new Set([...help.keys()].flatMap((c) => [...flagsOf(c)]));

/** What a page names that the CLI does not have. */
function unknownToCli(text: string): string[] {
  const problems: string[] = [];
  for (const { command, flags, where } of commandsNamed(text)) {
    if (!help.has(command)) {
      problems.push(`darkroom ${command} (no such command): ${where}`);
      continue;
    }
    const known = flagsOf(command);
    for (const f of flags) if (!known.has(f)) problems.push(`darkroom ${command} ${f} (not in its --help): ${where}`);
  }
  const every = allFlags();
  for (const f of flagsNamed(text)) if (!every.has(f)) problems.push(`${f} (no command has it)`);
  return problems;
}

describe('README and docs/', () => {
  it('are all there: README and one page per subject', () => {
    for (const p of [
      'guide/job-file.md',
      'guide/commands.md',
      'guide/troubleshooting.md',
      'library.md',
      'simulator.md',
      'performance.md',
      'spec-gaps.md',
      'glossary.md',
      'ARCHITECTURE.md',
      'errors.md',
      'decisions.md',
    ]) {
      expect(existsSync(path.join(ROOT, 'docs', p)), p).toBe(true);
    }
    expect(readFileSync(path.join(ROOT, 'README.md'), 'utf8').split('\n').length).toBeLessThan(250);
  });

  it.each(PAGES.map((p) => [rel(p), p]))('%s: every relative link resolves', (_name, file) => {
    expect(brokenLinks(file, readFileSync(file, 'utf8'))).toEqual([]);
  });

  it.each(PAGES.filter((p) => !DEVELOPER_PAGES.has(rel(p))).map((p) => [rel(p), p]))(
    '%s: every command and flag it names is in --help',
    (_name, file) => {
      expect(unknownToCli(readFileSync(file, 'utf8'))).toEqual([]);
    },
  );

  it('the job-file page names every key of the config schema', () => {
    const keys = schemaKeys();
    expect(keys).toEqual(expect.arrayContaining(['service.baseUrl', 'steps[].capability', 'output.metadata', 'log.level']));
    expect(keysMissing(readFileSync(path.join(ROOT, 'docs/guide/job-file.md'), 'utf8'), keys)).toEqual([]);
  });
});

/** The capability table of a page, as the rows of src/spec/capabilities.ts would print. */
export function capabilityRows(page: string): string[] {
  const at = page.indexOf('| capability | endpoint |');
  expect(at).toBeGreaterThan(0);
  return page
    .slice(at)
    .split('\n')
    .slice(2)
    .filter((l) => l.startsWith('| `'))
    .map((l) => l.trim());
}

function capabilityRow(c: (typeof CAPABILITY_NAMES)[number]): string {
  const i = CAPABILITIES[c];
  const yes = (b: boolean, text = 'yes') => (b ? text : '—');
  return [
    `\`${c}\``,
    `\`${i.path}\``,
    yes(i.acceptsMode),
    yes(i.acceptsResolution),
    yes(i.takesStyle, 'yes (`style` required)'),
    i.resultFormat === null ? "the service's format" : i.resultFormat.toUpperCase(),
    i.credits === null ? '—' : String(i.credits),
    `\`${i.businessType}\`${i.inEnumeration ? '' : ' (not in the spec)'}`,
  ].reduce((row, cell) => `${row} ${cell} |`, '|');
}

/** The rows of the markdown table whose header starts with `header`, as arrays of cells. */
export function tableRows(page: string, header: string): string[][] {
  const at = page.indexOf(header);
  expect(at, header).toBeGreaterThanOrEqual(0);
  const rows: string[][] = [];
  for (const line of page.slice(at).split('\n').slice(2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim()),
    );
  }
  return rows;
}

/** What docs/errors.md says that src/errors.ts does not: a code missing, extra, or with another exit code. */
export function errorsPageProblems(page: string): string[] {
  const problems: string[] = [];
  const exits = tableRows(page, '| exit | means |');
  const want = (Object.keys(EXIT) as (keyof typeof EXIT)[]).map((k) => [String(EXIT[k]), EXIT_MEANING[k]]);
  if (JSON.stringify(exits) !== JSON.stringify(want)) problems.push(`exit codes: ${JSON.stringify(exits)} ≠ ${JSON.stringify(want)}`);
  const codes = new Map(tableRows(page, '| code | means | exit |').map((r) => [r[0]!.replace(/`/g, ''), r[2]]));
  for (const [code, exit] of Object.entries(ERROR_EXIT)) {
    if (!codes.has(code)) problems.push(`${code}: not in the page`);
    else if (codes.get(code) !== String(exit)) problems.push(`${code}: exit ${codes.get(code)} in the page, ${exit} in the code`);
  }
  for (const code of codes.keys()) if (!(code in ERROR_EXIT)) problems.push(`${code}: in the page, not in the code`);
  return problems;
}

describe('the errors page', () => {
  it('lists every exit code and every error code of src/errors.ts, each with its exit code', () => {
    expect(errorsPageProblems(readFileSync(path.join(ROOT, 'docs/errors.md'), 'utf8'))).toEqual([]);
  });
});

describe('the job-file page', () => {
  it('has the capability table of src/spec/capabilities.ts, row for row', () => {
    const page = readFileSync(path.join(ROOT, 'docs/guide/job-file.md'), 'utf8');
    expect(capabilityRows(page)).toEqual(CAPABILITY_NAMES.map(capabilityRow));
  });
});

describe('the checks themselves fail on what they are for', () => {
  const page = path.join(ROOT, 'docs', 'guide', 'commands.md');

  it('a broken link, to a missing file or a missing heading', () => {
    expect(brokenLinks(page, 'See [the job file](job-file.md) and [every key](job-file.md#every-key-with-its-default).')).toEqual([]);
    expect(brokenLinks(page, 'See [the job file](job-fil.md).')).toEqual(['job-fil.md (no such file)']);
    expect(brokenLinks(page, 'See [keys](job-file.md#every-key-with-no-default).')).toEqual([
      'job-file.md#every-key-with-no-default (no such heading)',
    ]);
    expect(brokenLinks(page, '```\n[not a link](nowhere.md)\n```\n')).toEqual([]);
  });

  it('an unknown command or flag', () => {
    expect(unknownToCli('Run `darkroom run jobs.yaml --json` or `darkroom status --watch`.')).toEqual([]);
    expect(unknownToCli('Run `darkroom run jobs.yaml --max-photo 5`.')).toEqual([
      'darkroom run --max-photo (not in its --help): darkroom run jobs.yaml --max-photo 5',
      '--max-photo (no command has it)',
    ]);
    expect(unknownToCli('```sh\ndarkroom sharpen jobs.yaml\n```\n')).toEqual([
      'darkroom sharpen (no such command): darkroom sharpen jobs.yaml',
    ]);
    // A flag of another command is still not this command's.
    expect(unknownToCli('`darkroom credits --held`')).toEqual(['darkroom credits --held (not in its --help): darkroom credits --held']);
  });

  it('a capability row that differs from the code', () => {
    const page = readFileSync(path.join(ROOT, 'docs/guide/job-file.md'), 'utf8');
    const edited = page.replace('| `unblur` | `/api/v1/unblur/generate` | yes |', '| `unblur` | `/api/v1/unblur/generate` | — |');
    expect(edited).not.toBe(page);
    expect(capabilityRows(edited)).not.toEqual(CAPABILITY_NAMES.map(capabilityRow));
  });

  it('an error code missing from the errors page, or with another exit code', () => {
    const page = readFileSync(path.join(ROOT, 'docs/errors.md'), 'utf8');
    expect(errorsPageProblems(page.replace(/^\| `KEY_BUSY` .*\n/m, ''))).toEqual(['KEY_BUSY: not in the page']);
    expect(errorsPageProblems(page.replace(/(\| `LEDGER_FULL` \|[^|]*\|) 1 \|/, '$1 2 |'))).toEqual([
      'LEDGER_FULL: exit 2 in the page, 1 in the code',
    ]);
    expect(errorsPageProblems(page.replace('| 130 | interrupted |', '| 131 | interrupted |'))).toHaveLength(1);
  });

  it('a missing key', () => {
    const keys = ['service', 'service.baseUrl', 'ledger'];
    expect(keysMissing('service:\n  baseUrl: x\n| `service.baseUrl` |\n| `ledger` |', keys)).toEqual([]);
    expect(keysMissing('service:\n| `ledger` |', keys)).toEqual(['service.baseUrl']);
  });
});

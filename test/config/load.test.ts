import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, requireBaseUrl, requireInputDir, resolveKeys } from '../../src/config/index.js';
import { configErrorOf, jobsFileWriter } from '../helpers/config.js';

const write = jobsFileWriter();

const base = `service: { baseUrl: "https://api.example.com", apiKeyEnv: MY_KEY }
input: { dir: ./photos }
output: { dir: ./restored }
steps: [{ capability: restore }]
`;

const errorOf = configErrorOf;

describe('loadConfig', () => {
  it('resolves relative paths against the YAML folder and fills defaults', () => {
    const file = write(base);
    const c = loadConfig(file, { env: {} });
    const dir = path.dirname(file);
    expect(c.input.dir).toBe(path.join(dir, 'photos'));
    expect(c.output.dir).toBe(path.join(dir, 'restored'));
    expect(c.ledger).toBe(path.join(dir, 'darkroom.db'));
    expect(c.limits).toMatchObject({ callsPerMinute: 100, callsPerHour: 1000, activeTasks: 3 });
    expect(c.onAmbiguous).toBe('hold');
    expect(c.keyEnvs).toEqual(['MY_KEY']);
  });

  it('reads `ledger:` as a path, or as { path, allowNetworkFs } (both forms, so older jobs stay valid)', () => {
    const plain = write(`${base}ledger: ./out/x.db\n`);
    const c = loadConfig(plain, { env: {} });
    expect(c.ledger).toBe(path.join(path.dirname(plain), 'out', 'x.db'));
    expect(c.allowNetworkFs).toBe(false);
    expect(c.log.file).toBe(path.join(path.dirname(plain), 'out', 'x.log'));
    const obj = write(`${base}ledger: { path: ./out/y.db, allowNetworkFs: true }\n`);
    const o = loadConfig(obj, { env: {} });
    expect(o.ledger).toBe(path.join(path.dirname(obj), 'out', 'y.db'));
    expect(o.allowNetworkFs).toBe(true);
    expect(o.log.file).toBe(path.join(path.dirname(obj), 'out', 'y.log'));
    // The object's path defaults as the string does; --ledger still wins over it.
    const bare = write(`${base}ledger: { allowNetworkFs: true }\n`);
    expect(loadConfig(bare, { env: {} }).ledger).toBe(path.join(path.dirname(bare), 'darkroom.db'));
    expect(loadConfig(obj, { env: {}, ledger: '/tmp/z.db' })).toMatchObject({ ledger: '/tmp/z.db', allowNetworkFs: true });
    // A misspelt key inside it is an error, not ignored.
    expect(errorOf(() => loadConfig(write(`${base}ledger: { path: ./a.db, allowNetworkFS: true }\n`), { env: {} })).message).toMatch(
      /ledger/,
    );
  });

  it('lets DARKROOM_BASE_URL override the file and --base-url override both', () => {
    const file = write(base);
    expect(loadConfig(file, { env: {} }).baseUrl).toBe('https://api.example.com');
    expect(loadConfig(file, { env: { DARKROOM_BASE_URL: 'http://127.0.0.1:9/' } }).baseUrl).toBe('http://127.0.0.1:9');
    expect(loadConfig(file, { env: { DARKROOM_BASE_URL: 'http://127.0.0.1:9' }, baseUrl: 'http://127.0.0.1:10' }).baseUrl).toBe(
      'http://127.0.0.1:10',
    );
  });

  it('names the file, the key path and what was expected for an unknown capability', () => {
    const file = write(base.replace('capability: restore', 'capability: sharpen'));
    const e = errorOf(() => loadConfig(file, { env: {} }));
    expect(e.keyPath).toBe('steps.0.capability');
    expect(e.message).toContain(file);
    expect(e.message).toContain('enhance');
    expect(e.message).toContain('"sharpen"');
    expect(e.message.split('\n')).toHaveLength(1);
    expect(e.exitCode).toBe(2);
  });

  it('refuses a mode where the spec accepts none, naming the step and option', () => {
    const file = write(base.replace('capability: restore', 'capability: restore, mode: portrait'));
    const e = errorOf(() => loadConfig(file, { env: {} }));
    expect(e.keyPath).toBe('steps.0.mode');
    expect(e.message).toMatch(/accepts no mode/);
  });

  it('refuses unknown keys so typos do not pass silently', () => {
    const file = write(base + 'stpes: []\n');
    const e = errorOf(() => loadConfig(file, { env: {} }));
    expect(e.keyPath).toBe('stpes');
  });

  it('reports YAML syntax errors with a line', () => {
    const file = write('service: [unclosed\n');
    const e = errorOf(() => loadConfig(file, { env: {} }));
    expect(e.message).toMatch(/not valid YAML/);
  });

  it('reads the key only from the named environment variable, and says so when unset', () => {
    const file = write(base);
    const c = loadConfig(file, { env: {} });
    expect(resolveKeys(c, { MY_KEY: 'secret-1234' })[0]!.key).toBe('secret-1234');
    const e = errorOf(() => resolveKeys(c, { DARKROOM_API_KEY: 'not-this-one' }));
    expect(e.keyPath).toBe('service.apiKeyEnv');
    expect(e.message).toContain('MY_KEY is not set');
  });

  it('reports a missing input folder', () => {
    const file = write(base.replace('./photos', './nowhere'));
    const c = loadConfig(file, { env: {} });
    const e = errorOf(() => requireInputDir(c));
    expect(e.keyPath).toBe('input.dir');
    expect(e.message).toContain('nowhere');
  });

  it('reports a missing base URL only when a run needs one', () => {
    const file = write(base.replace('baseUrl: "https://api.example.com", ', ''));
    const c = loadConfig(file, { env: {} });
    expect(errorOf(() => requireBaseUrl(c)).keyPath).toBe('service.baseUrl');
  });

  it('takes several keys, one lane each', () => {
    const file = write(base.replace('apiKeyEnv: MY_KEY', 'keys: [{ apiKeyEnv: K1 }, { apiKeyEnv: K2 }]'));
    const c = loadConfig(file, { env: {} });
    const keys = resolveKeys(c, { K1: 'aaaaaa', K2: 'bbbbbb' });
    expect(keys.map((k) => k.env)).toEqual(['K1', 'K2']);
    expect(keys[0]!.fingerprint).not.toBe(keys[1]!.fingerprint);
    expect(errorOf(() => resolveKeys(c, { K1: 'aaaaaa' })).keyPath).toBe('service.keys.1.apiKeyEnv');
  });
});

describe('a key where the job wants a variable name', () => {
  it('takes names as variables are written, and refuses a key-like value without showing it', () => {
    for (const name of ['DARKROOM_API_KEY', 'DARKROOM_API_KEY_2024_01', 'my_key', 'http_proxy', 'studio_key_2']) {
      expect(loadConfig(write(base.replace('MY_KEY', name)), { env: {} }).keyEnvs).toEqual([name]);
    }
    const key = 'rk_test_51H8xQ2eZvKYlo2C0a1b2c3d4';
    const e = errorOf(() => loadConfig(write(base.replace('MY_KEY', key)), { env: {} }));
    expect(e.message).toMatch(/service\.apiKeyEnv: this field takes the NAME of the environment variable that holds the key/);
    expect(e.message).not.toContain(key.slice(3));
    // Anywhere else too: a value like a key is left out of the line that names the mistake.
    const elsewhere = errorOf(() => loadConfig(write(`${base}limits: { maxCredits: "${key}" }\n`), { env: {} }));
    expect(elsewhere.message).toMatch(/limits\.maxCredits: .*a value like a key, not shown/);
    expect(elsewhere.message).not.toContain(key.slice(3));
  });
});

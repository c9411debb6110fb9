import { describe, expect, it } from 'vitest';
import { parseUrlList } from '../../src/inputs/urls.js';
import { cleanName, nameFromUrl } from '../../src/outputs/safeName.js';
import { ConfigError } from '../../src/errors.js';

function errorOf(text: string): ConfigError {
  try {
    parseUrlList(text, 'list.txt');
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('parseUrlList', () => {
  it('reads one URL a line, skipping blank lines and comments, naming each after its URL', () => {
    const list = parseUrlList(
      '\uFEFF# scans of the 1950s box\nhttps://archive.example.org/scans/0001.jpg\n\n  http://cdn.example.org/a/b/Grand%20Mother.PNG?sig=x,y  \r\nhttps://example.org/\n',
      'list.txt',
    );
    expect(list).toEqual([
      { url: 'https://archive.example.org/scans/0001.jpg', name: '0001', line: 2 },
      { url: 'http://cdn.example.org/a/b/Grand%20Mother.PNG?sig=x,y', name: 'Grand Mother', line: 4 },
      { url: 'https://example.org/', name: 'example.org', line: 5 },
    ]);
  });

  it('reads CSV with a url column and an output-name column, quoted fields included', () => {
    const list = parseUrlList(
      'id,URL,Name,notes\n1,https://x.test/1.jpg,grandparents/wedding,"big, old"\n2,"https://x.test/2.jpg?a=1,2","Smith, John.jpg",\n3,https://x.test/3.tif,,\n',
      'list.csv',
    );
    expect(list).toEqual([
      { url: 'https://x.test/1.jpg', name: 'grandparents/wedding', line: 2 },
      { url: 'https://x.test/2.jpg?a=1,2', name: 'Smith, John', line: 3 },
      { url: 'https://x.test/3.tif', name: '3', line: 4 },
    ]);
  });

  it('reads tab-separated columns too, and a CSV with a url column only', () => {
    expect(parseUrlList('url\toutput\nhttps://x.test/a.jpg\tfirst\n', 'l.tsv')).toEqual([
      { url: 'https://x.test/a.jpg', name: 'first', line: 2 },
    ]);
    expect(parseUrlList('url\nhttps://x.test/a.jpg\n', 'l.csv')).toEqual([{ url: 'https://x.test/a.jpg', name: 'a', line: 2 }]);
  });

  it('stops on a bad line, naming the file and the line (exit code 2)', () => {
    const e = errorOf('https://x.test/ok.jpg\nftp://x.test/no.jpg\n');
    expect(e.message).toBe('list.txt: line 2: expected an http(s) image URL, got "ftp://x.test/no.jpg"');
    expect(e.exitCode).toBe(2);
    expect(errorOf('url,name\nnot a url,x\n').keyPath).toBe('line 2');
    expect(errorOf('url,name\n"https://x.test/a.jpg,x\n').message).toMatch(/line 2: a quoted field is not closed/);
    expect(errorOf('# c\n/relative/path.jpg\n').keyPath).toBe('line 2');
  });
});

describe('output names from URL lists', () => {
  it('are safe on every file system and never leave the output folder', () => {
    expect(cleanName('../../etc/passwd')).toBe('etc/passwd');
    expect(cleanName('a\\b:c*d?.jpg')).toBe('a/b_c_d_');
    expect(cleanName('  trailing dots...  ')).toBe('trailing dots');
    expect(cleanName('/')).toBe('');
    expect(cleanName('фото/Ölgemälde.tiff')).toBe('фото/Ölgemälde');
    expect(nameFromUrl('https://x.test/%E2%9C%93.webp')).toBe('✓');
    expect(nameFromUrl('https://x.test/%ZZ.jpg')).toBe('%ZZ');
  });
});

describe('parseUrlList with csv-parse (issue 13)', () => {
  it('finds a ";" delimiter from the header, as spreadsheets in many locales write it', () => {
    expect(parseUrlList('Nr;URL;Name\n1;https://x.test/a.jpg?x=1,2;Müller, Anna\n2;"https://x.test/b.jpg";"b;c"\n', 'l.csv')).toEqual([
      { url: 'https://x.test/a.jpg?x=1,2', name: 'Müller, Anna', line: 2 },
      { url: 'https://x.test/b.jpg', name: 'b;c', line: 3 },
    ]);
  });

  it('reads a quoted field over several lines, and numbers the lines after it right', () => {
    const list = parseUrlList(
      'url,name,notes\nhttps://x.test/1.jpg,one,"first line\nsecond line"\nhttps://x.test/2.jpg,"two\nparts",\n\n# a comment\nhttps://x.test/3.jpg,three,\n',
      'l.csv',
    );
    expect(list).toEqual([
      { url: 'https://x.test/1.jpg', name: 'one', line: 2 },
      { url: 'https://x.test/2.jpg', name: 'two parts', line: 4 },
      { url: 'https://x.test/3.jpg', name: 'three', line: 8 },
    ]);
    expect(errorOf('url,name\nhttps://x.test/1.jpg,"a\nb"\nnope,x\n').keyPath).toBe('line 4');
  });

  it('skips a byte-order mark before a CSV header, and comments before the header', () => {
    expect(parseUrlList('\uFEFF# exported 2026-11-24\nurl;name\r\nhttps://x.test/a.jpg;first\r\n', 'l.csv')).toEqual([
      { url: 'https://x.test/a.jpg', name: 'first', line: 3 },
    ]);
    expect(parseUrlList('\uFEFFurl\thttps\nhttps://x.test/a.jpg\tx\n', 'l.tsv')).toEqual([
      { url: 'https://x.test/a.jpg', name: 'a', line: 2 },
    ]);
  });
});

describe('cleanName: a proper file-name sanitiser (issue 13)', () => {
  it('never gives a Windows device name, whatever the case or extension', () => {
    expect(cleanName('CON')).toBe('CON_');
    expect(cleanName('con.jpg')).toBe('con_');
    expect(cleanName('nul.old.png')).toBe('nul_.old');
    expect(cleanName('LPT1/com9/Aux')).toBe('LPT1_/com9_/Aux_');
    expect(cleanName('COM¹')).toBe('COM¹_');
    expect(nameFromUrl('https://x.test/scans/PRN.jpg')).toBe('PRN_');
    // Names that merely start like one are left alone.
    expect(cleanName('console/Connie.jpg')).toBe('console/Connie');
    expect(cleanName('COM10')).toBe('COM10');
  });

  it('cuts a long name between graphemes, never inside an emoji, within 255 bytes', () => {
    const family = '👨‍👩‍👧‍👦'; // one grapheme, 11 UTF-16 units, 25 bytes
    const long = family.repeat(30);
    const cut = cleanName(long);
    expect(cut.length).toBeGreaterThan(0);
    expect(cut.length % family.length).toBe(0); // whole families only
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(200);
    const flags = cleanName(`${'a'.repeat(119)}🇩🇪🇫🇷`);
    expect(flags).toBe('a'.repeat(119)); // the flag would have been split at 120 units
    const accents = cleanName('e\u0301'.repeat(100)); // é as e + combining accent
    expect(accents.length % 2).toBe(0);
    expect(accents.length).toBe(120);
    const fourByte = cleanName('𝔸'.repeat(100)); // 2 units, 4 bytes each
    expect(Buffer.byteLength(fourByte)).toBeLessThanOrEqual(200);
    expect(fourByte).toBe('𝔸'.repeat(50));
  });

  it('keeps names that were already safe as they were (a rerun must not re-create photos)', () => {
    for (const n of ['grandparents/wedding', 'Smith, John', 'фото/Ölgemälde', '✓', 'x'.repeat(120), 'a b c - 1950 (copy)']) {
      expect(cleanName(n)).toBe(n);
    }
    expect(cleanName('y'.repeat(130))).toBe('y'.repeat(120));
  });
});

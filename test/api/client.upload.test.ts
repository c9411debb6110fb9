import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/api/client.js';
import { CANARY_KEY, FakeTransport, ok } from './fakes.js';

describe('ApiClient.upload', () => {
  it('posts multipart/form-data with the bytes in field `image`', async () => {
    const transport = new FakeTransport(() => ok({ imageUrl: 'https://img.example/u/1.png' }));
    const client = new ApiClient({ baseUrl: 'https://api.example.com', apiKey: CANARY_KEY, transport });
    const bytes = new Uint8Array(1024);
    for (let i = 0; i < bytes.length; i++) bytes[i] = i % 256; // every byte value, CR and LF included

    const r = await client.upload(bytes, 'scan "1".png', 'image/png');
    expect(r).toEqual({ imageUrl: 'https://img.example/u/1.png' });

    const req = transport.last;
    expect(req.method).toBe('POST');
    expect(req.url).toBe('https://api.example.com/api/v1/image/upload');
    const ct = req.headers['content-type']!;
    const m = /^multipart\/form-data; boundary=(.+)$/.exec(ct);
    expect(m).not.toBeNull();
    const body = req.body as Buffer;
    expect(Buffer.isBuffer(body)).toBe(true);

    // Parse it back with the platform's own multipart reader.
    const form = await new Response(body, { headers: { 'content-type': ct } }).formData();
    const file = form.get('image') as File;
    expect(file).toBeInstanceOf(Blob);
    expect(file.name).toBe('scan "1".png');
    expect(file.type).toBe('image/png');
    expect(Buffer.from(await file.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);
    expect([...form.keys()]).toEqual(['image']);
  });

  it('sends the exact bytes of a view into a larger buffer', async () => {
    const transport = new FakeTransport(() => ok({ imageUrl: 'https://img.example/u/2.jpg' }));
    const client = new ApiClient({ baseUrl: 'https://api.example.com', apiKey: CANARY_KEY, transport });
    const backing = Buffer.from('XXXXjpegdataYYYY');
    await client.upload(backing.subarray(4, 12), 'a.jpg', 'image/jpeg');
    const ct = transport.last.headers['content-type']!;
    const form = await new Response(transport.last.body as Buffer, { headers: { 'content-type': ct } }).formData();
    expect(Buffer.from(await (form.get('image') as File).arrayBuffer()).toString()).toBe('jpegdata');
  });
});

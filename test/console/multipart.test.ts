import { MultipartReader } from '../../apps/api/src/console/multipart';

const BOUNDARY = '----formBoundary7MA4YWxkTrZu0gW';
const body = Buffer.from(
  [
    `--${BOUNDARY}`,
    'Content-Disposition: form-data; name="_csrf"',
    '',
    'token-123',
    `--${BOUNDARY}`,
    'Content-Disposition: form-data; name="confirmed"',
    '',
    'yes',
    `--${BOUNDARY}`,
    'Content-Disposition: form-data; name="file"; filename="people.csv"',
    'Content-Type: text/csv',
    '',
    // a line that looks like a boundary but is not one, and a CR LF inside the file
    `email,name\r\na@example.com,A\r\n--${BOUNDARY.slice(0, 10)}x,B\r\n`,
    `--${BOUNDARY}--`,
    '',
  ].join('\r\n'),
);

async function* chunked(size: number) {
  for (let i = 0; i < body.length; i += size) yield body.subarray(i, i + size);
}

const TYPE = `multipart/form-data; boundary=${BOUNDARY}`;

async function read(size: number) {
  const reader = new MultipartReader(chunked(size), TYPE);
  const parts: { name: string; filename?: string; text: string }[] = [];
  for (let part = await reader.next(); part; part = await reader.next()) parts.push({ ...part, text: await reader.text(1_000) });
  return parts;
}

describe('MultipartReader (the console upload)', () => {
  it.each([1, 7, 64, body.length])('reads the parts in order whatever the chunk size (%d bytes)', async (size) => {
    expect(await read(size)).toEqual([
      { name: '_csrf', filename: undefined, text: 'token-123' },
      { name: 'confirmed', filename: undefined, text: 'yes' },
      { name: 'file', filename: 'people.csv', text: `email,name\r\na@example.com,A\r\n--${BOUNDARY.slice(0, 10)}x,B\r\n` },
    ]);
  });

  it('refuses a Content-Type that is not multipart/form-data with a boundary', () => {
    for (const type of [undefined, 'application/x-www-form-urlencoded', 'multipart/form-data', 'multipart/form-data; charset=utf-8']) {
      expect(() => new MultipartReader(chunked(64), type)).toThrow(expect.objectContaining({ status: 400, message: expect.stringMatching(/^send the file with the list page form \(multipart\/form-data\)/) }));
    }
    // a quoted boundary is read as such
    const quoted = Buffer.from(['--quoted b', 'Content-Disposition: form-data; name="a"', '', 'x', '--quoted b--', ''].join('\r\n'));
    return expect(readAll(new MultipartReader((async function* () { yield quoted; })(), 'multipart/form-data; boundary="quoted b"'))).resolves.toEqual([{ name: 'a', filename: undefined, text: 'x' }]);
  });

  it.each([
    ['cut off inside the file', body.subarray(0, body.indexOf('a@example.com') + 5)],
    ['cut off before the closing boundary', body.subarray(0, body.length - 6)],
    ['a part header that never ends', Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="x"\r\n${'X-Pad: y\r\n'.repeat(3000)}`)],
    ['no boundary at all', Buffer.from('email,name\r\na@example.com,A\r\n')],
  ])('refuses a body %s with a 400', async (_, cut) => {
    const reader = new MultipartReader((async function* () { yield cut; })(), TYPE);
    await expect(readAll(reader)).rejects.toMatchObject({ status: 400, message: expect.stringMatching(/^the upload was cut off or is not well-formed multipart\/form-data \(.+\)$/) });
  });

  it('refuses a field over 256 bytes, or over what its reader takes, and a body of more than 16 parts', async () => {
    const form = (parts: [string, string][]) =>
      Buffer.from([...parts.flatMap(([name, value]) => [`--${BOUNDARY}`, `Content-Disposition: form-data; name="${name}"`, '', value]), `--${BOUNDARY}--`, ''].join('\r\n'));
    const reader = (parts: [string, string][]) => new MultipartReader((async function* () { yield form(parts); })(), TYPE);
    await expect(readAll(reader([['_csrf', 'x'.repeat(256)]]))).resolves.toEqual([{ name: '_csrf', filename: undefined, text: 'x'.repeat(256) }]);
    const tooLong = { status: 400, message: 'a form field of the upload is too long' };
    await expect(readAll(reader([['_csrf', 'x'.repeat(257)]]))).rejects.toMatchObject(tooLong);
    const small = reader([['confirmed', 'yes, certainly']]);
    await small.next();
    await expect(small.text(3)).rejects.toMatchObject(tooLong);
    const many = Array.from({ length: 17 }, (_, i): [string, string] => [`f${i}`, 'v']);
    await expect(readAll(reader(many))).rejects.toMatchObject({ status: 400, message: 'the upload has more than 16 parts' });
    await expect(readAll(reader(many.slice(1)))).resolves.toHaveLength(16);
  });
});

async function readAll(reader: MultipartReader) {
  const parts: { name: string; filename?: string; text: string }[] = [];
  for (let part = await reader.next(); part; part = await reader.next()) parts.push({ ...part, text: await reader.text(1_000) });
  return parts;
}

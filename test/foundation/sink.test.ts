import { generateKeyPairSync } from 'node:crypto';
import nodemailer from 'nodemailer';
import { freePort, runTs, waitForHttp, type Proc } from '../helpers/processes';
import { waitFor } from '../helpers/wait';

interface Caught {
  subject: string;
  headers: { name: string; value: string }[];
}

describe('npm run sink', () => {
  let sink: Proc;
  let smtpPort: number;
  let httpPort: number;

  beforeAll(async () => {
    [smtpPort, httpPort] = [await freePort(), await freePort()];
    sink = runTs('scripts/sink.ts', [], { SINK_SMTP_PORT: String(smtpPort), SINK_HTTP_PORT: String(httpPort) });
    await waitForHttp(sink, `http://127.0.0.1:${httpPort}/messages`);
  });

  afterAll(async () => {
    sink.child.kill('SIGTERM');
    await sink.exited;
  });

  it('shows the threading, unsubscribe and DKIM headers of each email on the terminal, its page and its JSON', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: smtpPort,
      secure: false,
      ignoreTLS: true,
      dkim: { domainName: 'acme.test', keySelector: 'ms2026', privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() },
    });
    await transport.sendMail({
      from: 'hello@acme.test',
      to: 'someone@example.com',
      subject: 'Re: the plan',
      text: 'Agreed.',
      messageId: '<reply-2@acme.test>',
      inReplyTo: '<first-1@example.com>',
      references: ['<first-1@example.com>'],
      headers: { 'List-Unsubscribe': '<https://acme.test/u/abc>, <mailto:unsub@acme.test>', 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
    });
    transport.close();

    const answer = await waitFor(
      async () => {
        const body = (await (await fetch(`http://127.0.0.1:${httpPort}/messages`)).json()) as { messages: Caught[] };
        return body.messages.find((m) => m.subject === 'Re: the plan');
      },
      { what: 'the email at the sink' },
    );
    const header = (name: string) => answer.headers.find((h) => h.name.toLowerCase() === name.toLowerCase())?.value;
    expect(header('In-Reply-To')).toBe('<first-1@example.com>');
    expect(header('References')).toBe('<first-1@example.com>');
    expect(header('List-Unsubscribe')).toBe('<https://acme.test/u/abc>, <mailto:unsub@acme.test>');
    expect(header('List-Unsubscribe-Post')).toBe('List-Unsubscribe=One-Click');
    // a folded header comes back on one line, whole
    const dkim = header('DKIM-Signature');
    expect(dkim).toMatch(/^v=1; a=rsa-sha256; .*d=acme\.test; .*s=ms2026; .*b=[A-Za-z0-9+/= ]+$/);
    expect(dkim).not.toMatch(/[\r\n]/);
    // every header is kept, the ordinary ones too
    expect(header('From')).toBe('hello@acme.test');

    await waitFor(() => sink.stdout().includes('  DKIM-Signature: v=1;'), { what: 'the terminal showing the headers' });
    const terminal = sink.stdout();
    expect(terminal).toContain('  In-Reply-To: <first-1@example.com>');
    expect(terminal).toContain('  List-Unsubscribe: <https://acme.test/u/abc>, <mailto:unsub@acme.test>');
    expect(terminal).toContain('  List-Unsubscribe-Post: List-Unsubscribe=One-Click');
    expect(terminal).toContain(`  DKIM-Signature: ${dkim}`);

    const html = await (await fetch(`http://127.0.0.1:${httpPort}/`)).text();
    expect(html).toContain('<th>In-Reply-To</th><td>&#60;first-1@example.com&#62;</td>');
    expect(html).toContain('<th>List-Unsubscribe-Post</th><td>List-Unsubscribe=One-Click</td>');
    expect(html).toMatch(/<th>DKIM-Signature<\/th><td>v=1; a=rsa-sha256;/);
    expect(html).toContain('All headers');
  }, 60_000);
});

/**
 * A counting SMTP sink for the benchmarks, run as its own process so it does not share a core with what is measured.
 * SMTP on SINK_SMTP_PORT; GET http://127.0.0.1:SINK_HTTP_PORT/count answers how many messages it accepted, POST /reset zeroes it.
 */
import http from 'node:http';
import { SMTPServer } from 'smtp-server';

let count = 0;
const smtp = new SMTPServer({
  disabledCommands: ['STARTTLS', 'AUTH'],
  authOptional: true,
  logger: false,
  onData(stream, _session, callback) {
    stream.on('data', () => undefined);
    stream.on('end', () => {
      count++;
      callback();
    });
  },
});
smtp.on('error', () => undefined);
smtp.listen(Number(process.env.SINK_SMTP_PORT), '127.0.0.1');

http
  .createServer((req, res) => {
    if (req.method === 'POST' && req.url === '/reset') count = 0;
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ count }));
  })
  .listen(Number(process.env.SINK_HTTP_PORT), '127.0.0.1');

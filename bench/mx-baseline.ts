/**
 * The `mx` phase's baseline (bench/mx.ts): the bare `smtp-server` package taking every message and writing it to
 * /dev/null, with nothing checked and nothing stored. Its own process, as the MX is.
 */
import fs from 'node:fs';
import { SMTPServer } from 'smtp-server';

const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['AUTH', 'STARTTLS'],
  disableReverseLookup: true,
  maxClients: 2000,
  logger: false,
  onData(stream, _session, callback) {
    const sink = fs.createWriteStream('/dev/null');
    stream.pipe(sink);
    stream.on('end', () => callback(null, 'OK'));
  },
});
server.listen(Number(process.env.BASELINE_PORT), '127.0.0.1');

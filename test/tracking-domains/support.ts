import https from 'node:https';
import tls from 'node:tls';

/** What a TLS client that trusts only `ca` sees when it asks `port` for `name` by SNI (the name checked, as browsers do). */
export function handshake(port: number, name: string, ca: string): Promise<{ ok: true; serial: string; names: string; validTo: string } | { ok: false; error: string }> {
  return new Promise((resolve) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername: name, ca, rejectUnauthorized: true }, () => {
      const cert = socket.getPeerCertificate();
      resolve({ ok: true, serial: cert.serialNumber, names: cert.subjectaltname ?? '', validTo: cert.valid_to });
      socket.end();
    });
    socket.on('error', (err) => resolve({ ok: false, error: err.message }));
  });
}

/** A GET of `url` (https://<name>:<port>/...) sent to 127.0.0.1, trusting only `ca`: a click on a tracked link. */
export function getOver(url: string, ca: string): Promise<{ status: number; location?: string }> {
  const { hostname, port, pathname } = new URL(url);
  return new Promise((resolve, reject) => {
    https
      .get({ host: '127.0.0.1', port, path: pathname, servername: hostname, headers: { Host: `${hostname}:${port}` }, ca }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location }));
      })
      .on('error', reject);
  });
}

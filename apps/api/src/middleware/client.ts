import type { IncomingMessage } from 'node:http';
import { clientKey } from '../../../core/src/ip';

/**
 * Which client a request is, for every per-client limit of the API (the hosted form's and the unsubscribe's post rates,
 * the public pages' body shares, the left bodies read at once, failed authentications, connections): Express's `req.ip`
 * (TRUST_PROXY decides whom X-Forwarded-For is believed from) once Express has seen the request, else the socket's
 * address, counted by core/ip clientKey (an IPv6 client by its /64). Never throws: a request whose socket is gone is ''.
 */
export function clientOf(req: IncomingMessage): string {
  if (!req.socket) return '';
  return clientKey((req as { ip?: string }).ip ?? req.socket.remoteAddress ?? '');
}

/** The client's own address as Express reads it (req.ip, under TRUST_PROXY), for the consent ledger; '' when unknown. */
export function addressOf(req: IncomingMessage): string {
  return (req as { ip?: string }).ip ?? req.socket?.remoteAddress ?? '';
}

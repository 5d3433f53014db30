import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Delivery {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  type: string;
  data: Record<string, unknown>;
  /** which of the receiver's secrets verified it with standardwebhooks' Webhook.verify */
  verifiedBy: string[];
  status: number;
}

/**
 * A real HTTP webhook receiver on a loopback port. Every request is checked with standardwebhooks' `Webhook.verify`
 * under each secret the receiver knows (`secrets`); `answer` picks the status of each request in turn (200 unless
 * told), and `hold` leaves requests unanswered (a receiver still thinking while the worker dies).
 */
export class Receiver {
  readonly deliveries: Delivery[] = [];
  secrets: string[] = [];
  answers: number[] = [];
  hold = false;
  private held: http.ServerResponse[] = [];
  private server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = {
        'webhook-id': String(req.headers['webhook-id'] ?? ''),
        'webhook-timestamp': String(req.headers['webhook-timestamp'] ?? ''),
        'webhook-signature': String(req.headers['webhook-signature'] ?? ''),
      };
      const verifiedBy = this.secrets.filter((secret) => {
        try {
          new Webhook(secret).verify(body, headers);
          return true;
        } catch {
          return false;
        }
      });
      const parsed = JSON.parse(body) as { type: string; data: Record<string, unknown> };
      const status = this.answers.shift() ?? 200;
      this.deliveries.push({
        id: headers['webhook-id'],
        timestamp: headers['webhook-timestamp'],
        signature: headers['webhook-signature'],
        body,
        type: parsed.type,
        data: parsed.data,
        verifiedBy,
        status,
      });
      if (this.hold) {
        this.held.push(res);
        return;
      }
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'thanks' : 'not now');
    });
  });

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks`;
  }

  /** Deliveries that were answered 2xx, of a type (and optionally matching data). */
  accepted(type: string, match: (data: Record<string, unknown>) => boolean = () => true): Delivery[] {
    return this.deliveries.filter((d) => d.status < 300 && d.type === type && match(d.data));
  }

  async stop(): Promise<void> {
    for (const res of this.held) res.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

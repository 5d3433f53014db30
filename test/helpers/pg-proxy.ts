import net from 'node:net';

/** Postgres going away under a client, through a TCP proxy the test can cut and restore. */
export class PgProxy {
  private server = net.createServer((client) => this.accept(client));
  private sockets = new Set<net.Socket>();
  private cut = false;
  port = 0;

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  /** DATABASE_URL through the proxy. */
  url(): string {
    const url = new URL(process.env.DATABASE_URL!);
    url.host = `127.0.0.1:${this.port}`;
    return url.toString();
  }

  private accept(client: net.Socket): void {
    if (this.cut) return void client.destroy();
    const upstream = net.connect(5432, '127.0.0.1');
    for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
      a.pipe(b);
      a.on('error', () => b.destroy());
      a.on('close', () => b.destroy());
      this.sockets.add(a);
      a.on('close', () => this.sockets.delete(a));
    }
  }

  /** Every connection dropped, new ones refused: Postgres is gone for the clients behind the proxy. */
  cutOff(): void {
    this.cut = true;
    for (const s of this.sockets) s.destroy();
  }

  restore(): void {
    this.cut = false;
  }

  stop(): Promise<void> {
    this.cutOff();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { db } from '../../apps/core/src/db';
import { createApp, type ApiApp } from '../../apps/api/src/app';
import { recording } from './openapi';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

/** An API app on the test database, started and stopped around the file's tests. */
export function useApi(): { readonly api: ApiApp } {
  const holder: { api?: ApiApp } = {};
  beforeAll(async () => {
    const api = createApp(db());
    // every answer of the public API is checked against the OpenAPI document when the file ends (per-file.ts)
    holder.api = { ...api, app: recording(api.app) };
    await holder.api.start();
  });
  afterAll(async () => {
    await holder.api?.stop();
  });
  return {
    get api() {
      if (!holder.api) throw new Error('useApi(): the app starts in beforeAll');
      return holder.api;
    },
  };
}

/** useApi's app served on a loopback port, for tests that speak HTTP on raw sockets. */
export function useListeningApi(): { readonly api: ApiApp; readonly server: http.Server; readonly port: number } {
  const ctx = useApi();
  let server: http.Server | undefined;
  beforeAll(async () => {
    server = http.createServer(ctx.api.app);
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    if (!server) return;
    server.closeAllConnections();
    await new Promise((resolve) => server!.close(resolve));
  });
  const listening = () => {
    if (!server) throw new Error('useListeningApi(): the server listens in beforeAll');
    return server;
  };
  return {
    get api() {
      return ctx.api;
    },
    get server() {
      return listening();
    },
    get port() {
      return (listening().address() as AddressInfo).port;
    },
  };
}

/** A supertest client that sends the key on every request. */
export function as(api: ApiApp, token: string) {
  const auth = (test: request.Test) => test.set('Authorization', `Bearer ${token}`);
  return {
    get: (path: string) => auth(request(api.app).get(path)),
    post: (path: string) => auth(request(api.app).post(path)),
    delete: (path: string) => auth(request(api.app).delete(path)),
    patch: (path: string) => auth(request(api.app).patch(path)),
  };
}

export const asAdmin = (api: ApiApp) => as(api, ADMIN_TOKEN);

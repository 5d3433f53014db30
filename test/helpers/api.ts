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

import request from 'supertest';
import { redactedUrl } from '../../apps/api/src/middleware/request';
import { config } from '../../apps/core/src/config';
import { useApi } from '../helpers/api';

/** The smaller findings of the fourth hardening round (docs/hardening.md). */
const ctx = useApi();

describe('the console refusing a stale form', () => {
  it('links back to a console page, never to the Referer it was sent, however much that looks like ours', async () => {
    const lookalikes = [`${config().publicUrl}.evil.example/admin`, `${config().publicUrl}@evil.example/`, 'javascript:alert(1)//', 'https://evil.example/'];
    for (const referer of lookalikes) {
      const res = await request(ctx.api.app).post('/admin/lists').set('Referer', referer).type('form').send({ _csrf: 'forged', name: 'x' });
      expect(res.status).toBe(403);
      expect(res.text).toContain('CSRF token missing or wrong');
      const links = [...res.text.matchAll(/href="([^"]*)"/g)].map((m) => m[1]!);
      expect(links.some((href) => href.includes('evil') || href.startsWith('javascript'))).toBe(false);
      expect(links).toContain('/admin/lists');
    }
  });
});

describe('the access log', () => {
  it("redacts the OAuth flow's state as it redacts its code", () => {
    expect(redactedUrl('/admin/oauth/callback?state=s3cr3t-state&code=c0de&scope=mail')).toBe('/admin/oauth/callback?state=[redacted]&code=[redacted]&scope=mail');
  });
});

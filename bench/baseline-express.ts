/** The accept baseline: a bare Express 5 app that parses the same JSON body and answers 202 with a body of the same shape. */
import crypto from 'node:crypto';
import express from 'express';

const app = express();
app.use(express.json({ limit: '1mb' }));
app.post('/api/v1/send', (req, res) => {
  const id = crypto.randomUUID();
  const to = String(req.body?.to ?? '');
  res.status(202).json({ ok: true, id, status: 'queued', messages: [{ id: crypto.randomUUID(), to, status: 'queued' }], skipped: [] });
});
app.listen(Number(process.env.PORT), '127.0.0.1');

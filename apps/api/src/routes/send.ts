import { Router } from 'express';
import type { Db } from '../../../core/src/db';

// Issue 3 (Sending): POST /send, GET /send/:id. Not built yet.
export function sendRouter(db: Db): Router {
  const router = Router();
  void db;
  return router;
}

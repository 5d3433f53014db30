import { Router } from 'express';
import type { Db } from '../../../core/src/db';

// Issue 5: POST and GET /prospects, POST /prospects/state. Not built yet.
export function prospectsRouter(db: Db): Router {
  const router = Router();
  void db;
  return router;
}

import { Router } from 'express';
import type { Db } from '../../../core/src/db';

// Issue 4: GET /lists. Not built yet.
export function listsRouter(db: Db): Router {
  const router = Router();
  void db;
  return router;
}

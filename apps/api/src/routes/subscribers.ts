import { Router } from 'express';
import type { Db } from '../../../core/src/db';

// Issue 4: POST and DELETE /subscribers. Not built yet.
export function subscribersRouter(db: Db): Router {
  const router = Router();
  void db;
  return router;
}

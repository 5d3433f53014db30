import { Router } from 'express';
import type { Db } from '../../../core/src/db';

// Issue 5: GET /campaigns. Not built yet.
export function campaignsRouter(db: Db): Router {
  const router = Router();
  void db;
  return router;
}

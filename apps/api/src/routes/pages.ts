import { Router } from 'express';
import type { Db } from '../../../core/src/db';

// Issue 4: HTML pages under PUBLIC_URL (confirmation /confirm/<token>, hosted form /f/<list key>). Not built yet.
export function pagesRouter(db: Db): Router {
  const router = Router();
  void db;
  return router;
}

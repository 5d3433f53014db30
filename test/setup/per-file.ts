import { Client } from 'pg';
import { closeDb } from '../../apps/core/src/db';
import { closeQueues } from '../../apps/core/src/queues';
import { closeRedis } from '../../apps/core/src/redis';
import { checkRecordedAnswers } from '../helpers/openapi';
import { databaseUrl, runId, templateDatabase } from './shared';

beforeAll(async () => {
  const admin = new Client({ connectionString: databaseUrl('postgres') });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${process.env.MS_TEST_DATABASE}" TEMPLATE "${templateDatabase(runId())}"`);
  } finally {
    await admin.end();
  }
});

afterAll(async () => {
  await closeQueues();
  await closeRedis();
  await closeDb();
  const admin = new Client({ connectionString: databaseUrl('postgres') });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${process.env.MS_TEST_DATABASE}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
  // last, so a failing check still leaves nothing behind
  await checkRecordedAnswers();
});

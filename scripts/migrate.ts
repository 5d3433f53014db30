/** `npm run migrate`: create the database when missing and apply prisma/migrations. */
import { config } from '../apps/core/src/config';
import { migrate } from '../apps/core/src/migrate';
import { redactUrl } from '../apps/core/src/startup';

migrate(config().directDatabaseUrl).then(
  ({ created, applied }) => {
    if (created) console.log(`created database ${redactUrl(config().directDatabaseUrl)}`);
    console.log(applied.length ? `applied ${applied.join(', ')}` : 'database is up to date');
  },
  (err: Error) => {
    console.error(`migrate: ${err.message}`);
    process.exit(1);
  },
);

/**
 * `npm run partitions:prepare [-- --batch N]`: the online upgrade to time partitions, run while the previous version
 * serves (docs/partitions.md, "Upgrading an existing installation"); `-- --abandon` undoes it.
 */
import { parseArgs } from 'node:util';
import { config } from '../apps/core/src/config';
import { abandon, prepare, progressLine } from '../apps/core/src/upgrade/prepare';

const { values } = parseArgs({ options: { batch: { type: 'string', default: '10000' }, abandon: { type: 'boolean', default: false } } });
const batch = Number(values.batch);
if (!Number.isInteger(batch) || batch < 1) {
  console.error('partitions:prepare: --batch is a whole number of rows, at least 1');
  process.exit(1);
}
const url = config().directDatabaseUrl;
let shown = 0;

(values.abandon
  ? abandon(url).then(() => console.log('partitions:prepare abandoned: the migration will copy offline'))
  : prepare(url, {
      batch,
      onProgress: (p) => {
        if (p.done || Date.now() - shown >= 2000) {
          shown = Date.now();
          console.log(progressLine(p));
        }
      },
    }).then(() => console.log('partitions:prepare finished: stop the service, then npm run migrate swaps the tables in'))
).catch((err: Error) => {
  console.error(`partitions:prepare: ${err.message}`);
  process.exit(1);
});

/**
 * `npm run corpus`: the bounce reader's figures on sisimai's corpus (test/fixtures/sisimai), per family of servers and
 * overall, as the Markdown table of docs/inbound.md. `--misses` lists each file whose outcome missed.
 */
import { corpusFigures, figuresTable } from './corpus-figures';

async function main() {
  const figures = await corpusFigures();
  console.log(figuresTable(figures));
  const o = figures.overall;
  console.log(`\nrfc3834 files read as auto-replies: ${o.rfc3834AutoReply}/${o.rfc3834}; arf files read as complaints: ${o.arfComplaint}/${o.arf}`);
  console.log(`other non-hard 5.x.x (mailbox failures, sisimai's filtered) suppressed at once: ${o.otherSoftSuppressed}/${o.otherSoft}`);
  if (process.argv.includes('--misses')) console.log(`\n${figures.misses.join('\n')}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

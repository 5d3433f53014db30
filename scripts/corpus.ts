/**
 * `npm run corpus`: the bounce reader's figures on sisimai's corpus (test/fixtures/sisimai), per family of servers and
 * overall, as the Markdown table of docs/inbound.md, then on our own corpus of wordings (test/fixtures/wordings).
 * `--misses` lists each report whose outcome missed.
 */
import { corpusFigures, figuresTable, pct, wordingFigures } from './corpus-figures';

async function main() {
  const figures = await corpusFigures();
  console.log(figuresTable(figures));
  const o = figures.overall;
  console.log(`\nrfc3834 files read as auto-replies: ${o.rfc3834AutoReply}/${o.rfc3834}; arf files read as complaints: ${o.arfComplaint}/${o.arf}`);
  console.log(`other non-hard 5.x.x (mailbox failures, sisimai's filtered) suppressed at once: ${o.otherSoftSuppressed}/${o.otherSoft}`);
  console.log(`live addresses (every failure sisimai does not call hard) suppressed at once: ${o.liveSuppressed}/${o.live} (${pct(o.liveSuppressed, o.live)})`);
  const own = await wordingFigures();
  console.log(
    `our wordings (test/fixtures/wordings): dead suppressed ${own.deadSuppressed}/${own.dead} (${pct(own.deadSuppressed, own.dead)}); ` +
      `live suppressed ${own.liveSuppressed}/${own.live}; read as auto-replies ${own.autoReplies}/${own.dead + own.live}`,
  );
  if (process.argv.includes('--misses')) console.log(`\n${[...figures.misses, ...own.misses].join('\n')}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

import type { Db } from '../apps/core/src/db';
import { messageChange } from '../apps/core/src/changes';
import { cliChange } from './admin-audit';
import { browseProspects } from '../apps/core/src/operator/prospects';
import { searchMessages } from '../apps/core/src/operator/search';
import { messageStory } from '../apps/core/src/operator/story';
import { getCampaign } from '../apps/core/src/outreach/campaigns';
import { cancelMessage, messageIdParam, retryMessage } from '../apps/core/src/sending/message-actions';
import { idParam, validate } from '../apps/core/src/validate';
import { deliveryRegistrations } from '../apps/core/src/email-kinds';

/**
 * The CLI's operator commands (docs/operator.md, "An operator's day"): the console's message search, a message's story,
 * retry and cancel, a campaign's prospects. Kept apart from admin.ts; the same domain functions as the console and
 * the admin API.
 */
export const MESSAGES_HELP = `  messages search [--q TEXT] [--status S] [--from DAY] [--to DAY] [--before CURSOR] [--limit N]
           (TEXT: an address, a domain, subject words, a message id or a <Message-ID>; --before: the "next" it printed)
  message show|retry|cancel ID      (its story; retry a deferred or failed message now; cancel a queued or deferred one)
  prospects CAMPAIGN_ID [--status S] [--step N] [--before ID] [--limit N]`;

export const messagesOptions = {
  before: { type: 'string' },
  step: { type: 'string' },
} as const;

type Flags = Partial<Record<string, string | boolean>>;

/** The answer of an operator command, or undefined when `command` is none of them. */
export async function messagesCommand(d: Db, command: string, arg: string | undefined, flags: Flags): Promise<unknown> {
  switch (command) {
    case 'messages search': {
      const found = await searchMessages(d, { q: flags.q, status: flags.status, from: flags.from, to: flags.to, before: flags.before, limit: flags.limit });
      return { kind: found.kind, messages: found.rows, next: found.next };
    }
    case 'message show':
      return messageStory(d, deliveryRegistrations().kinds, validate(messageIdParam, arg));
    case 'message retry': {
      const id = validate<string>(messageIdParam, arg);
      return { message: await cliChange(d, messageChange('retry', id), (db: Db) => retryMessage(db, id)) };
    }
    case 'message cancel': {
      const id = validate<string>(messageIdParam, arg);
      return { message: await cliChange(d, messageChange('cancel', id), (db: Db) => cancelMessage(db, id)) };
    }
    default:
      if (command.startsWith('prospects ') || command === 'prospects') {
        const campaign = validate(idParam, command.split(' ')[1]);
        await getCampaign(d, campaign);
        const page = await browseProspects(d, campaign, { status: flags.status, step: flags.step, before: flags.before, limit: flags.limit });
        return { prospects: page.rows, next: page.next };
      }
      return undefined;
  }
}

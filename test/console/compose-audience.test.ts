import { audienceOf, draftOf } from '../../apps/api/src/console/pages/compose';
import { audienceQuery } from '../../apps/core/src/broadcasts/schema';
import { BadRequest } from '../../apps/core/src/errors';
import { validate } from '../../apps/core/src/validate';

/** The compose form's segment goes to the admin API's `audience` rules (broadcasts/schema.ts), not rules of its own. */
describe("the compose form's audience", () => {
  const checked = (form: Record<string, string>) => validate(audienceQuery, { list: 'k', audience: audienceOf(draftOf(form)) });

  it('gives each engagement the schema knows as the API writes it', () => {
    for (const how of ['opened', 'clicked', 'not_opened', 'not_clicked']) {
      expect(checked({ engaged_how: how, engaged_broadcast: '7' }).audience).toEqual({ engaged: { [how]: 7 } });
    }
  });

  it('asks for the choice left empty, and leaves any other engagement to the schema to refuse', () => {
    expect(() => audienceOf(draftOf({ engaged_broadcast: '7' }))).toThrow(new BadRequest('audience: choose how the reader engaged with the broadcast'));
    expect(() => checked({ engaged_how: 'forwarded', engaged_broadcast: '7' })).toThrow(/forwarded/);
  });
});

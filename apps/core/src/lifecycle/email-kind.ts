import { subscriberLinks } from '../subscriber-links';
import type { EmailKind } from '../delivery/kinds';
import { seriesRefusal } from './guard';

/** A welcome series' step: a list email (its subscriber's links), sent only while the person is still active. */
export const seriesSteps: EmailKind = { kinds: ['series'], links: subscriberLinks, guard: seriesRefusal };

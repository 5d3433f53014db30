import { sequenceRefusal } from '../outreach/guard';
import { confirmationRefusal } from '../subscribers/guard';
import { seriesRefusal } from '../lifecycle/guard';
import type { PreSendGuards } from './guards';

/**
 * The pre-send guards of a production worker, in one table: a sequence step whose prospect replied, stopped or was
 * paused, a confirmation whose subscriber is no longer pending, and a series step whose subscriber is no longer active,
 * are cancelled instead of sent. The worker's main
 * builds it once and passes it to createWorkers.
 */
export function productionGuards(): PreSendGuards {
  return Object.freeze({ sequence: sequenceRefusal, confirmation: confirmationRefusal, series: seriesRefusal });
}

import { config } from '../config';
import { signedToken, subscriberOfSigned } from './signed';

/**
 * The preference centre's link of one subscription: a token signed for this purpose (signed.ts), so an unsubscribe
 * token is not a preference token and the reverse; an altered token, or one of another subscriber with this one's id,
 * does not verify.
 */
export const preferencesToken = (subscriberId: number): string => signedToken('preferences', subscriberId);

/** The subscriber a preference token names, or null for anything not made by preferencesToken under this SECRET_KEY. */
export const subscriberOfPreferencesToken = (token: string): number | null => subscriberOfSigned('preferences', token);

export const preferencesUrl = (subscriberId: number) => `${config().publicUrl}/preferences/${preferencesToken(subscriberId)}`;

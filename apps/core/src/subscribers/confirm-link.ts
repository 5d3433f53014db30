import crypto from 'node:crypto';
import { config } from '../config';
import { CONFIRMATION_LINK_MARKER, fillMarker } from '../templates/markers';

/**
 * A confirmation email is stored with this placeholder where its link goes, and the link is put in when the email is
 * composed for the wire (delivery/compose.ts): no table holds a usable token, only its SHA-256 (confirmation_tokens).
 */
export const CONFIRMATION_LINK_PLACEHOLDER = CONFIRMATION_LINK_MARKER;

/** What confirmationTokenOf makes: 32 lowercase hex characters. */
export const CONFIRMATION_TOKEN = /^[0-9a-f]{32}$/;

/**
 * The token of the confirmation email `messageId`: HMAC-SHA256 of the id under SECRET_KEY, 128 bits as 32 hex
 * characters. Derived, never stored: the worker derives it again to write the link, the store keeps its hash.
 */
export function confirmationTokenOf(messageId: string): string {
  return crypto.createHmac('sha256', config().secretKey).update(`confirm:${messageId}`).digest('hex').slice(0, 32);
}

export const confirmationLink = (token: string) => `${config().publicUrl}/confirm/${token}`;

/** The stored body with the real link in place of the placeholder (bodies written before the placeholder pass as they are). */
export function withConfirmationLink(body: string | null, messageId: string): string | null {
  return fillMarker(body, CONFIRMATION_LINK_MARKER, () => confirmationLink(confirmationTokenOf(messageId)));
}

/**
 * A value made on first use and kept: for modules that only some processes need (juice and html-to-text for
 * templates, mailauth's SPF evaluator for domains, imapflow for the console's IMAP check), so a process that never
 * uses them does not carry them (tens of MB of RSS each).
 */
export function lazy<T>(make: () => T): () => T {
  let made: { value: T } | undefined;
  return () => (made ??= { value: make() }).value;
}

/** The Message-IDs (`<...>`) of an In-Reply-To or References header as mailparser gives it (a string or a list). */
export function messageIdsIn(value: unknown): string[] {
  const all = Array.isArray(value) ? value : typeof value === 'string' ? [value] : [];
  return all.flatMap((v) => String(v).match(/<[^<>\s]+>/g) ?? []);
}

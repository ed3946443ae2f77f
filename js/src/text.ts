/** Text shown in messages. */

/** At most `max` characters of `text` (JSON-quoted when `quote`), with its full length when cut: errors never echo a huge value. */
export function clip(text: string, max = 80, quote = false): string {
  const cut = text.length > max;
  const part = cut ? text.slice(0, max) : text;
  const shown = quote ? JSON.stringify(part) : part;
  return cut ? `${shown}… (${text.length} characters)` : shown;
}

/** True when `text` has no lone surrogate, so it is encodable as UTF-8 (Python refuses to encode a lone surrogate). */
export function isWellFormed(text: string): boolean {
  return !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
}

/** Throw a RangeError with `message`: the client's one kind of error for bad input (specs, values, tables). */
export function fail(message: string): never {
  throw new RangeError(message);
}

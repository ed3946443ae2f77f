/**
 * JSON with Python's number model: integers are `bigint` (any size, never
 * rounded through a double), numbers with a fraction or exponent are `number`
 * (Python floats). Writing follows `json.dumps(..., ensure_ascii=False)`.
 */
import { floatText } from "./float.js";

export type Json = null | boolean | string | bigint | number | Json[] | JsonObject;
export interface JsonObject {
  [key: string]: Json;
}

/** Parse JSON text; integers become bigint, other numbers double. */
export function parseJson(text: string): Json {
  let pos = 0;
  const fail = (why: string): never => {
    throw new SyntaxError(`JSON: ${why} at position ${pos}`);
  };
  const space = (): void => {
    while (/[ \t\n\r]/.test(text[pos] ?? "")) pos++;
  };
  /** The text `pattern` matches at pos (read past), or a SyntaxError saying `why`. */
  const token = (pattern: RegExp, why: string): RegExpExecArray => {
    const match = pattern.exec(text.slice(pos)) ?? fail(why);
    pos += match[0].length;
    return match;
  };
  /** The items of an object or array (`[` or `{` at pos) up to `close`: `item` reads each, spaces skipped. */
  const items = (close: string, item: () => void): void => {
    pos++;
    space();
    if (text[pos] === close) {
      pos++;
      return;
    }
    for (;;) {
      space();
      item();
      space();
      const c = text[pos++];
      if (c === close) return;
      if (c !== ",") fail(`expected ',' or '${close}'`);
    }
  };
  // the built-in reader decodes a string's escapes exactly
  const string = (): string =>
    JSON.parse(token(/^"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/, "bad string")[0]) as string;
  const value = (): Json => {
    const c = text[pos];
    if (c === "{") {
      const out: JsonObject = Object.create(null);
      items("}", () => {
        if (text[pos] !== '"') fail("expected a key");
        const key = string();
        space();
        if (text[pos++] !== ":") fail("expected ':'");
        space();
        out[key] = value();
      });
      return out;
    }
    if (c === "[") {
      const out: Json[] = [];
      items("]", () => out.push(value()));
      return out;
    }
    if (c === '"') return string();
    if (c === "-" || (c >= "0" && c <= "9")) {
      const match = token(/^-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/, "bad number");
      return match[1] || match[2] ? Number(match[0]) : BigInt(match[0]);
    }
    for (const [word, constant] of [["true", true], ["false", false], ["null", null]] as const) {
      if (text.startsWith(word, pos)) {
        pos += word.length;
        return constant;
      }
    }
    return fail("unexpected character");
  };
  space();
  const out = value();
  space();
  if (pos !== text.length) fail("trailing characters");
  return out;
}

const SHORT_ESCAPES: Record<string, string> = {
  '"': '\\"',
  "\\": "\\\\",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
  "\b": "\\b",
  "\f": "\\f",
};

/**
 * A JSON string as Python writes it with ensure_ascii=False: `"`, `\` and the
 * C0 controls escaped; with `lineSeparators`, also U+0085, U+2028, U+2029
 * (report lines), never in spec JSON.
 */
export function jsonString(text: string, lineSeparators = false): string {
  const pattern = lineSeparators ? /["\\\u0000-\u001f\u0085\u2028\u2029]/g : /["\\\u0000-\u001f]/g;
  if (!pattern.test(text)) return `"${text}"`; // nothing to escape (the common case)
  const body = text.replace(
    pattern,
    (c) => SHORT_ESCAPES[c] ?? "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"),
  );
  return `"${body}"`;
}

/** Compact JSON (`,` and `:`), keys sorted by code point when `sortKeys`; floats as Python writes them. */
export function dumpJson(value: Json, sortKeys = true, lineSeparators = false): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "string":
      return jsonString(value, lineSeparators);
    case "bigint":
      return value.toString();
    case "number":
      return floatText(value);
  }
  if (Array.isArray(value)) return `[${value.map((v) => dumpJson(v, sortKeys, lineSeparators)).join(",")}]`;
  const keys = Object.keys(value);
  if (sortKeys) keys.sort(byCodePoint);
  const items = keys.map((k) => `${jsonString(k, lineSeparators)}:${dumpJson(value[k], sortKeys, lineSeparators)}`);
  return `{${items.join(",")}}`;
}

function byCodePoint(a: string, b: string): number {
  const x = Array.from(a, (c) => c.codePointAt(0)!);
  const y = Array.from(b, (c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}
